"""The replay seam the integrations and decorators share: while a replay is active in the
current context, model and tool calls ask its server for the recorded answer
instead of calling the model or the tool.

The integrations know the frameworks (where a call happens, how to turn a
recorded reply back into the framework's object); the server knows the
recording (:mod:`orch_otel.replaying`). Outside a replay, ``ACTIVE`` is None and
every call goes through untouched: one context-variable read per call.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from .vocabulary import Attr

__all__ = ["ACTIVE", "ModelCall", "NotRecorded", "Served", "Server", "ToolCall", "served_model", "served_tool"]


@dataclass(frozen=True)
class ModelCall:
    """A model call about to happen: its request as the trace names it."""

    request_ref: str | None  # the ref of the prompt, as the LLM span recorded it
    model: str | None = None


@dataclass(frozen=True)
class ToolCall:
    name: str
    call_id: str | None = None
    args_ref: str | None = None  # the ref of the arguments, as the tool span recorded them
    rerun_failed: bool = True  # False: a call whose recording failed is not run again (a local command)


@dataclass(frozen=True)
class Served:
    """A recorded answer: the reply or result as its trace content holds it
    (the JSON form the integration recorded), and the usage the trace kept."""

    output: Any
    input_tokens: int | None = None
    output_tokens: int | None = None
    model: str | None = None


class NotRecorded(RuntimeError):
    """Raised into a replayed app when it makes a call its recording cannot
    answer (a changed prompt, an extra call): the replay has diverged."""


class Server(Protocol):
    def model(self, call: ModelCall) -> Served | None:
        """The recorded reply, or None to call the model itself (after a fork)."""
        ...

    def tool(self, call: ToolCall) -> Served | None:
        """The recorded result, or None to run the tool itself (live tools asked
        for, after a fork, or a call whose recording failed, unless
        ``call.rerun_failed`` is False: then NotRecorded, as for a call not recorded)."""
        ...

    def fork(self) -> None:
        """A forced decision was just applied: later calls go past the recording."""
        ...


ACTIVE: ContextVar[Server | None] = ContextVar("orch_otel_replay_server", default=None)


def served_model(span: Any) -> Served | None:
    """The recorded reply for the model call ``span`` records, when a replay is
    active (its request as the span names it: the prompt's ref, the model)."""
    server = ACTIVE.get()
    if server is None:
        return None
    attributes = getattr(span, "attributes", None) or {}
    return server.model(ModelCall(request_ref=attributes.get(Attr.INPUT_REF),
                                  model=attributes.get(Attr.REQUEST_MODEL)))


def served_tool(span: Any) -> Served | None:
    """The recorded result for the tool call ``span`` records, when a replay is active."""
    server = ACTIVE.get()
    if server is None:
        return None
    attributes = getattr(span, "attributes", None) or {}
    return server.tool(ToolCall(name=str(attributes.get(Attr.TOOL_NAME)), call_id=attributes.get(Attr.TOOL_CALL_ID),
                                args_ref=attributes.get(Attr.INPUT_REF)))
