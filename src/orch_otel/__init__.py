"""orch-otel: OpenTelemetry spans for multi-agent orchestration, exported as
replayable orchestration traces.

One line sets it up::

    import orch_otel
    orch_otel.instrument()          # LangGraph / AutoGen apps: nothing else to do

Hand-written agents use the decorators and helpers::

    @orch_otel.agent(role="planner")
    def planner(task): ...
    orch_otel.delegate("writer", options=["writer", "critic"])

A recorded run replays, or forks at a decision (``orch_otel.replaying``)::

    result = orch_otel.replay(trace, build_app(), contents=contents)
"""

from ._configure import Instrumentation, flush, instrument, uninstrument
from ._decorators import (
    agent,
    aggregate,
    delegate,
    human_intervention,
    llm_call,
    message,
    reward,
    spawn,
    stop,
    tool,
    workflow,
)
from ._task import task
from ._version import __version__
from .content import ContentPolicy
from .converter import Conversion, convert
from .recorder import Recorder, get_recorder, set_recorder
from .redaction import redact_secrets
from .replaying import areplay, replay
from .spans import SpanRecord
from .timeline import view
from .vocabulary import Attr, DecisionKind, EdgeKind, EventKind, StopReason

__all__ = [
    "__version__",
    "Attr",
    "ContentPolicy",
    "Conversion",
    "DecisionKind",
    "EdgeKind",
    "EventKind",
    "Instrumentation",
    "Recorder",
    "SpanRecord",
    "StopReason",
    "agent",
    "aggregate",
    "convert",
    "delegate",
    "flush",
    "get_recorder",
    "human_intervention",
    "instrument",
    "llm_call",
    "message",
    "redact_secrets",
    "areplay",
    "replay",
    "reward",
    "set_recorder",
    "spawn",
    "stop",
    "task",
    "tool",
    "uninstrument",
    "view",
    "workflow",
]
