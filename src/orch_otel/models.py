"""Pydantic models of the replayable trace: the project's own definition of the
format, compatible with the seed schema of the paper (its required fields and
enums) and stricter where orch-otel promises more (``span_id``, ``status``,
``decision``, stop ``reason``). :func:`json_schema` generates the JSON Schema
that ``orch-otel validate`` checks files against.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeFloat

from .vocabulary import Channel, DecisionKind, EdgeKind, EventKind, Status, Topology

__all__ = ["Costs", "Edge", "Event", "Trace", "json_schema"]

if TYPE_CHECKING:  # a Literal built from the enums at run time is opaque to a type checker: plain strings there
    EventType = str
    EdgeType = str
    TopologyName = str
    DecisionName = str
    StatusName = str
    ChannelName = str
else:  # pydantic reads these: the enums' values are the only ones allowed
    EventType = Literal[tuple(k.value for k in EventKind)]
    EdgeType = Literal[tuple(k.value for k in EdgeKind)]
    TopologyName = Literal[tuple(k.value for k in Topology)]
    DecisionName = Literal[tuple(k.value for k in DecisionKind)]
    StatusName = Literal[tuple(k.value for k in Status)]
    ChannelName = Literal[tuple(k.value for k in Channel)]

NonEmpty = Field(min_length=1)
INSTANCE_PATTERN = r"^.+#[1-9][0-9]*$"  # name#k
InstanceId = Annotated[str, Field(pattern=INSTANCE_PATTERN)]


class Event(BaseModel):
    """One orchestration event. Extra fields are allowed, as in the seed schema."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    id: str = NonEmpty
    t: NonNegativeFloat = Field(description="Seconds since the trace's first span started.")
    type: EventType
    agent: str = Field(min_length=1, description="The actor.")
    role: str | None = None
    from_: str | None = Field(default=None, alias="from")
    to: str | None = None
    tool: str | None = None
    content_ref: str | None = Field(default=None, description="Stable hash of the content; resolves in the content store when captured.")
    trusted: bool | None = None
    span_id: str = Field(min_length=1, description="The span this event was recorded in.")
    agent_span_id: str | None = Field(
        default=None, min_length=1,
        description="The span of the agent invocation (or run) whose work this event is: it tells apart "
                    "parallel invocations of one agent name.")
    instance: str | None = Field(
        default=None, pattern=INSTANCE_PATTERN,
        description="The agent invocation (or run) whose work this event is, as 'name#k': k = 1, 2, ... per "
                    "name in order of the invocations' start. One instance per agent_span_id.")
    to_instance: str | None = Field(
        default=None, pattern=INSTANCE_PATTERN,
        description="spawn: the spawned instance; return: the parent instance the result goes back to.")
    source_instances: list[InstanceId] | None = Field(
        default=None, description="aggregate: the instances whose results are combined, one per entry of "
                                  "'sources' (only when the converter is certain of them).")
    status: StatusName
    decision: DecisionName | None = Field(default=None, description="Orchestration sub-decision this event is.")
    reason: str | None = Field(default=None, min_length=1, description="Stop reason (stop decisions).")
    forced: bool | None = Field(
        default=None, description="Stop decisions: true when a limit (turns, tokens, time, recursion), an error, "
                                  "a cancellation or an interrupt ended the run, false when an agent chose to stop.")
    targets: list[str] | None = None
    options: list[str] | None = None
    channel: ChannelName | None = None
    call_id: str | None = None


class Edge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    src: str = NonEmpty
    dst: str = NonEmpty
    type: EdgeType


class Costs(BaseModel):
    model_config = ConfigDict(extra="allow")

    tokens: NonNegativeFloat
    wall_clock_s: NonNegativeFloat
    tool_calls: NonNegativeFloat | None = None
    messages: NonNegativeFloat | None = None
    tokens_unknown_calls: NonNegativeFloat | None = None  # > 0: ``tokens`` is a lower bound


class Trace(BaseModel):
    """A replayable orchestration trace (one JSON object per line in ``*.jsonl``)."""

    model_config = ConfigDict(extra="forbid")

    trace_id: str = NonEmpty
    task_id: str = NonEmpty
    system: str | None = None
    topology: TopologyName | None = None
    events: list[Event] = Field(min_length=1)
    edges: list[Edge]
    rewards: dict[str, float]
    costs: Costs
    metrics: dict[str, float] | None = None


def _drop_nulls(schema: dict[str, Any]) -> None:
    """Optional fields are omitted, never null: make the schema say so."""
    for prop in schema.get("properties", {}).values():
        any_of = prop.get("anyOf")
        if any_of and {"type": "null"} in any_of:
            rest = [s for s in any_of if s != {"type": "null"}]
            prop.pop("anyOf")
            prop.pop("default", None)
            if len(rest) == 1:
                prop.update(rest[0])
            else:
                prop["anyOf"] = rest
    for sub in schema.get("$defs", {}).values():
        _drop_nulls(sub)


@lru_cache(maxsize=1)
def json_schema() -> dict[str, Any]:
    """The JSON Schema of orch-otel's trace format, generated from the models."""
    schema = Trace.model_json_schema(by_alias=True)
    _drop_nulls(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "orch-otel replayable orchestration trace"
    return schema
