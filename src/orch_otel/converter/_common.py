"""Names and small helpers shared by the converter's modules."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..vocabulary import (
    Attr,
    Channel,
    DecisionKind,
    EdgeKind,
    EventKind,
    Operation,
    Status,
    StopReason,
)

DEFAULT_ACTOR = "orchestrator"
# Plain strings for the hot loops: an enum's .value is a descriptor call each time.
CH_AGENT = Channel.AGENT.value
CH_LLM = Channel.LLM.value
D_AGGREGATE = DecisionKind.AGGREGATE.value
D_COMMUNICATE = DecisionKind.COMMUNICATE.value
D_DELEGATE = DecisionKind.DELEGATE.value
D_SPAWN = DecisionKind.SPAWN.value
D_STOP = DecisionKind.STOP.value
EDGE_AGGREGATE = EdgeKind.AGGREGATE.value
EDGE_CAUSAL = EdgeKind.CAUSAL.value
EDGE_MESSAGE = EdgeKind.MESSAGE.value
EDGE_RETURN = EdgeKind.RETURN.value
EDGE_SPAWN = EdgeKind.SPAWN.value
EDGE_TEMPORAL = EdgeKind.TEMPORAL.value
EDGE_TOOL_DEPENDENCY = EdgeKind.TOOL_DEPENDENCY.value
E_AGGREGATE = EventKind.AGGREGATE.value
E_HUMAN_INTERVENTION = EventKind.HUMAN_INTERVENTION.value
E_MESSAGE = EventKind.MESSAGE.value
E_ORCHESTRATOR_DECISION = EventKind.ORCHESTRATOR_DECISION.value
E_RETURN = EventKind.RETURN.value
E_SAFETY_EVENT = EventKind.SAFETY_EVENT.value
E_SPAWN = EventKind.SPAWN.value
E_TOOL_CALL = EventKind.TOOL_CALL.value
E_TOOL_RESULT = EventKind.TOOL_RESULT.value
OP_CHAT = Operation.CHAT.value
OP_EXECUTE_TOOL = Operation.EXECUTE_TOOL.value
OP_INVOKE_AGENT = Operation.INVOKE_AGENT.value
OP_INVOKE_WORKFLOW = Operation.INVOKE_WORKFLOW.value
R_END = StopReason.END.value
R_ERROR = StopReason.ERROR.value
R_INCOMPLETE = StopReason.INCOMPLETE.value
S_ERROR = Status.ERROR.value
S_OK = Status.OK.value
AGENT_OPS = (OP_INVOKE_AGENT, OP_INVOKE_WORKFLOW)
CONTENT_PAIRS = (
    (Attr.CONTENT_REF, Attr.CONTENT),
    (Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS),
    (Attr.INPUT_REF, Attr.INPUT_MESSAGES),
    (Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT),
    (Attr.OUTPUT_REF, Attr.OUTPUT_MESSAGES),
    (Attr.TOOLS_REF, Attr.TOOL_DEFINITIONS),
)
CONTENT_TEXTS = frozenset(text_key for _, text_key in CONTENT_PAIRS)


class Ev(NamedTuple):
    """An event under construction; ``data`` becomes the JSON event. Events
    sort as tuples: by time, then in the order they were made (``seq`` is unique)."""

    t_ns: int
    seq: float
    data: dict[str, Any]
    scope: str | None = None  # span id of the agent span whose work this event is


class Scope(NamedTuple):
    """An agent invocation or a workflow run: a span that events are the work of."""

    span_id: str
    name: str
    role: str | None
    parent: str | None  # the enclosing scope's span id
    start_ns: int
    end_ns: int
    workflow: bool  # an invoke_workflow span (the run, a team), not an agent


def put(data: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value != "" and value != []:
        data[key] = value


def put_text(data: dict[str, Any], key: str, value: Any) -> None:
    """``data[key]`` = the attribute as text, unless it is absent or empty."""
    if value is not None and value != "":
        data[key] = value if type(value) is str else str(value)


def text(value: Any) -> str | None:
    """Attribute text as a non-empty string, or None (offline data may carry any type)."""
    if value is None or value == "":
        return None
    return value if type(value) is str else str(value)


def number(value: Any) -> int | None:
    """A non-negative integer attribute (token counts, fan-out index), or None."""
    if type(value) is int:
        return value if value >= 0 else None
    if type(value) is float and value.is_integer() and value >= 0:
        return int(value)
    if type(value) is str and value.isdigit():
        return int(value)
    return None


def count(value: Any) -> int:
    return number(value) or 0


def names(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def seconds(ns: int) -> float:
    return round(max(ns, 0) / 1e9, 6)
