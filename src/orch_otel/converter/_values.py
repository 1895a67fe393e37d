"""The plain values the converter's modules share: event, decision and status
strings for the hot loops, the two records the walk makes (an event under
construction, a scope), and the coercers that read attribute values of any
type (offline data may carry anything)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..spans import SpanRecord
from ..vocabulary import Attr, Channel, DecisionKind, EventKind, Operation, Status, StopReason

DEFAULT_ACTOR = "orchestrator"
# Plain strings for the hot loops: an enum's .value is a descriptor call each time.
_CH_AGENT = Channel.AGENT.value
_CH_LLM = Channel.LLM.value
_D_AGGREGATE = DecisionKind.AGGREGATE.value
_D_COMMUNICATE = DecisionKind.COMMUNICATE.value
_D_DELEGATE = DecisionKind.DELEGATE.value
_D_SPAWN = DecisionKind.SPAWN.value
_D_STOP = DecisionKind.STOP.value
_E_AGGREGATE = EventKind.AGGREGATE.value
_E_HUMAN_INTERVENTION = EventKind.HUMAN_INTERVENTION.value
_E_MESSAGE = EventKind.MESSAGE.value
_E_ORCHESTRATOR_DECISION = EventKind.ORCHESTRATOR_DECISION.value
_E_RETURN = EventKind.RETURN.value
_E_SAFETY_EVENT = EventKind.SAFETY_EVENT.value
_E_SPAWN = EventKind.SPAWN.value
_E_TOOL_CALL = EventKind.TOOL_CALL.value
_E_TOOL_RESULT = EventKind.TOOL_RESULT.value
_OP_CHAT = Operation.CHAT.value
_OP_EXECUTE_TOOL = Operation.EXECUTE_TOOL.value
_OP_INVOKE_AGENT = Operation.INVOKE_AGENT.value
_OP_INVOKE_WORKFLOW = Operation.INVOKE_WORKFLOW.value
_R_END = StopReason.END.value
_R_ERROR = StopReason.ERROR.value
_R_INCOMPLETE = StopReason.INCOMPLETE.value
_R_INTERRUPT = StopReason.INTERRUPT.value
_S_ERROR = Status.ERROR.value
_S_OK = Status.OK.value


class _Ev(NamedTuple):
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


def _put(data: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and value != "" and value != []:
        data[key] = value


def _put_text(data: dict[str, Any], key: str, value: Any) -> None:
    """``data[key]`` = the attribute as text, unless it is absent or empty."""
    if value is not None and value != "":
        data[key] = value if type(value) is str else str(value)


def _put_implied(data: dict[str, Any], attrs: Mapping[str, Any]) -> None:
    """A foreign log's inferred event says so (``implied``), as the converter's own inferences do."""
    if attrs.get(Attr.IMPLIED) is True:
        data["implied"] = True


def _text(value: Any) -> str | None:
    """Attribute text as a non-empty string, or None (offline data may carry any type)."""
    if value is None or value == "":
        return None
    return value if type(value) is str else str(value)


def _number(value: Any) -> int | None:
    """A non-negative integer attribute (token counts, fan-out index), or None."""
    if type(value) is int:
        return value if value >= 0 else None
    if type(value) is float and value.is_integer() and value >= 0:
        return int(value)
    if type(value) is str and value.isdigit():
        return int(value)
    return None


def _count(value: Any) -> int:
    return _number(value) or 0


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]

def _status(span: SpanRecord) -> str:
    return _S_ERROR if span.status == "error" else _S_OK


def _seconds(ns: int) -> float:
    return round(ns / 1e9, 6) if ns > 0 else 0.0  # a conditional, not max(): called for every event
