"""The recorder: the one place that turns orchestration moments into spans.

Moments with a duration (a run, an agent invocation, a tool execution, an LLM
call) are spans, each driven by a small lifecycle object (``start`` / ``end`` /
``fail``, or ``with``). Instant moments (spawn, delegate, message, aggregate,
stop, human intervention, reward) are span events on the current span.

Rules kept here for every caller: telemetry never raises into the host; the
host's own exceptions pass through untouched; control flow (handoffs,
interrupts, cancellation) is never an error; no work is done for spans that
are not recording; content goes through the content policy.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from ._version import __version__
from .content import ContentPolicy
from .faults import guarded, is_strict, log_fault
from .vocabulary import (
    CREDITED_REWARD_UNITS,
    INSTRUMENTATION_NAME,
    Attr,
    DecisionKind,
    Operation,
    RewardUnit,
    SpanEvent,
    StopReason,
)

_log = logging.getLogger(__name__)


# Context keys: the run a span belongs to, and the name of the enclosing agent.
_RUN_KEY = otel_context.create_key("orch_otel.run")
_AGENT_KEY = otel_context.create_key("orch_otel.agent")
STOP_SPAN = "orch.stop"  # carries a stop decided by an invocation whose span had ended (Recorder.stop_by)

# Outcomes of a span that ended by an exception or on purpose.
OK, ERROR, CANCELLED, INTERRUPTED, HANDOFF = "ok", "error", "cancelled", "interrupted", "handoff"
_STOP_REASON_BY_OUTCOME = {
    OK: StopReason.END,
    ERROR: StopReason.ERROR,
    CANCELLED: StopReason.CANCELLED,
    INTERRUPTED: StopReason.INTERRUPT,
    HANDOFF: StopReason.END,
}


class _Run:
    """State shared by all spans of one run (the outermost orch-otel span)."""

    __slots__ = ("stopped",)

    def __init__(self) -> None:
        self.stopped = False


def _names(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


class Invocation:
    """Lifecycle of one span: ``start()``, then ``end()`` or ``fail(exc)``.

    As a context manager it starts, attaches its context, and ends with the
    outcome of the block. ``start(attach=False)`` leaves context handling to
    the caller (callback-based integrations use ``.context`` per step).
    """

    __slots__ = ("_recorder", "_name", "_attributes", "_links", "span", "context", "_token", "_run", "_ended")

    def __init__(self, recorder: Recorder, name: str, attributes: dict[str, Any],
                 links: Sequence[trace.Link] | None = None) -> None:
        self._recorder = recorder
        self._name = name
        self._attributes = attributes
        self._links = links
        self.span: Span = trace.INVALID_SPAN
        self.context: otel_context.Context | None = None
        self._token: object | None = None
        self._run: _Run | None = None
        self._ended = False

    @property
    def is_run_root(self) -> bool:
        return self._run is not None

    def start(self, *, attach: bool = True, parent: otel_context.Context | None = None) -> Invocation:
        ctx = parent if parent is not None else otel_context.get_current()
        span = self._recorder.tracer.start_span(self._name, ctx, SpanKind.INTERNAL, self._attributes, self._links)
        self.span = span
        ctx = trace.set_span_in_context(span, ctx)
        extra: dict[str, Any] = {}
        if otel_context.get_value(_RUN_KEY, ctx) is None:
            self._run = extra[_RUN_KEY] = _Run()
        agent = self._attributes.get(Attr.AGENT_NAME)
        if agent is not None:
            extra[_AGENT_KEY] = agent
        if extra:  # one more context copy, not one per key
            ctx = otel_context.Context({**ctx, **extra})
        self.context = ctx
        if attach:
            self._token = otel_context.attach(ctx)
        return self

    @guarded
    def set(self, key: str, value: Any) -> None:
        if value is not None and self.span.is_recording():
            self.span.set_attribute(key, value)

    @guarded
    def end(self, *, outcome: str = OK, stop_reason: str | None = None, error: BaseException | None = None) -> None:
        """End the span. ``outcome`` is one of ok, error, cancelled, interrupted,
        handoff; only ``error`` marks the span as failed."""
        if self._ended:
            return
        self._ended = True
        span = self.span
        try:
            if span.is_recording():
                if outcome != OK:
                    span.set_attribute(Attr.OUTCOME, outcome)
                if outcome == ERROR:
                    self._recorder._mark_error(span, error)
                if self._run is not None and not self._run.stopped:
                    reason = stop_reason or _STOP_REASON_BY_OUTCOME.get(outcome, StopReason.END)
                    self._recorder._decision_event(span, DecisionKind.STOP, reason=str(reason))
                    self._run.stopped = True
                span.end()
        finally:
            self._detach()

    @guarded
    def stop(self, reason: str, *, content: Any = None, source: str | None = None, forced: bool = False) -> None:
        """Record this span's run stopping. Only the run root marks the run as
        stopped: a nested run's stop does not stop the run around it."""
        if self.span.is_recording():
            self._recorder._decision_event(self.span, DecisionKind.STOP, reason=str(reason).strip() or StopReason.END.value,
                                           content=content, source=source, forced=forced)
            if self._run is not None:
                self._run.stopped = True

    def fail(self, error: BaseException) -> None:
        """End the span with the outcome the error stands for (control flow is not an error)."""
        self.end(outcome=self._recorder.classify(error), error=error)

    def _detach(self) -> None:
        token, self._token = self._token, None
        if token is not None:
            try:
                otel_context.detach(token)
            except Exception:  # detached from another context: nothing to restore
                log_fault(_log, logging.DEBUG, "orch-otel: context detach skipped")

    def __enter__(self) -> Invocation:
        if self.context is None:
            _start(self)  # a fault leaves the span unstarted: the block runs unrecorded
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is None:
            self.end()
        else:
            self.fail(exc)


class ToolInvocation(Invocation):
    __slots__ = ()

    @guarded
    def set_result(self, result: Any) -> None:
        if self.span.is_recording():
            self._recorder._content_attrs(self.span, result, Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT)


class LLMInvocation(Invocation):
    __slots__ = ()

    @guarded
    def set_response(
        self,
        output: Any = None,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        response_model: str | None = None,
    ) -> None:
        span = self.span
        if not span.is_recording():
            return
        attrs: dict[str, Any] = {}
        if input_tokens is not None:
            attrs[Attr.INPUT_TOKENS] = int(input_tokens)
        if output_tokens is not None:
            attrs[Attr.OUTPUT_TOKENS] = int(output_tokens)
        if response_model:
            attrs[Attr.RESPONSE_MODEL] = response_model
        self._recorder._content_into(attrs, output, Attr.OUTPUT_REF, Attr.OUTPUT_MESSAGES)
        if attrs:
            span.set_attributes(attrs)  # one lock and one validation pass, not one per attribute


class Recorder:
    """Creates the spans and span events of orchestration moments."""

    def __init__(self, tracer_provider: trace.TracerProvider | None = None, content: ContentPolicy | None = None):
        self.content = content or ContentPolicy.from_env()
        self.tracer = trace.get_tracer(INSTRUMENTATION_NAME, __version__, tracer_provider=tracer_provider)
        self._control_flow: dict[type[BaseException], str] = {
            asyncio.CancelledError: CANCELLED,
            GeneratorExit: OK,
        }
        self._warned: set[str] = set()

    # -- exception classification ---------------------------------------------------

    def register_control_flow(self, exc_type: type[BaseException], outcome: str) -> None:
        """Declare an exception type as control flow (never an error span)."""
        self._control_flow[exc_type] = outcome

    def unregister_control_flow(self, exc_type: type[BaseException]) -> None:
        self._control_flow.pop(exc_type, None)

    def classify(self, error: BaseException) -> str:
        for exc_type in type(error).__mro__:
            outcome = self._control_flow.get(exc_type)  # type: ignore[call-overload]
            if outcome is not None:
                return outcome
        return ERROR

    def _mark_error(self, span: Span, error: BaseException | None) -> None:
        """Mark ``span`` failed. An exception's message and stack trace are
        content (they often quote inputs, keys or addresses): they are kept
        only with capture on, and then redacted. The type always is."""
        if error is None:
            span.set_status(StatusCode.ERROR)
            return
        kind = type(error).__qualname__
        span.set_attribute(Attr.ERROR_TYPE, kind)
        span.set_status(StatusCode.ERROR, kind)
        attrs: dict[str, Any] = {Attr.EXCEPTION_TYPE: kind, Attr.EXCEPTION_ESCAPED: True}
        if self.content.capture:
            try:
                attrs[Attr.EXCEPTION_MESSAGE] = self.content.redact(str(error))
                trace_text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
                attrs[Attr.EXCEPTION_STACKTRACE] = self.content.redact(trace_text)
            except Exception:  # str() of a broken exception must not break the host
                _log.warning("orch-otel: could not format a %s; message not recorded", kind)
        span.add_event(SpanEvent.EXCEPTION, attrs)

    # -- spans ------------------------------------------------------------------------

    def workflow(
        self,
        name: str,
        *,
        task_id: str | None = None,
        conversation_id: str | None = None,
        system: str | None = None,
        topology: str | None = None,
        attributes: dict[str, Any] | None = None,
        links: Sequence[trace.Link] | None = None,
    ) -> Invocation:
        """A run of a multi-agent workflow (graph, team): usually the trace root.
        ``links`` join related runs (a resume links to the interrupted run)."""
        attrs = {Attr.OPERATION: Operation.INVOKE_WORKFLOW.value, Attr.WORKFLOW_NAME: name}
        _put(attrs, Attr.TASK_ID, task_id)
        _put(attrs, Attr.CONVERSATION_ID, conversation_id)
        _put(attrs, Attr.SYSTEM, system)
        _put(attrs, Attr.TOPOLOGY, topology)
        if attributes:
            attrs.update(attributes)
        return Invocation(self, f"invoke_workflow {name}", attrs, links)

    def agent(
        self,
        name: str,
        *,
        agent_id: str | None = None,
        role: str | None = None,
        description: str | None = None,
        spawned: bool = False,
        fanout_index: int | None = None,
        fanout_size: int | None = None,
        task_id: str | None = None,
        conversation_id: str | None = None,
        system: str | None = None,
        topology: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> Invocation:
        """An agent invocation. ``spawned`` marks a sub-agent started by its parent."""
        attrs: dict[str, Any] = {
            Attr.OPERATION: Operation.INVOKE_AGENT.value,
            Attr.AGENT_NAME: name,
            Attr.AGENT_ID: agent_id or name,
        }
        _put(attrs, Attr.AGENT_ROLE, role)
        _put(attrs, Attr.AGENT_DESCRIPTION, description)
        if spawned:
            attrs[Attr.AGENT_SPAWNED] = True
        _put(attrs, Attr.FANOUT_INDEX, fanout_index)
        _put(attrs, Attr.FANOUT_SIZE, fanout_size)
        _put(attrs, Attr.TASK_ID, task_id)
        _put(attrs, Attr.CONVERSATION_ID, conversation_id)
        _put(attrs, Attr.SYSTEM, system)
        _put(attrs, Attr.TOPOLOGY, topology)
        if attributes:
            attrs.update(attributes)
        return Invocation(self, f"invoke_agent {name}", attrs)

    def tool(
        self,
        name: str,
        *,
        call_id: str | None = None,
        arguments: Any = None,
        tool_type: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> ToolInvocation:
        """A tool execution; ``call_id`` pairs it with the model's tool call."""
        attrs: dict[str, Any] = {Attr.OPERATION: Operation.EXECUTE_TOOL.value, Attr.TOOL_NAME: name}
        _put(attrs, Attr.TOOL_CALL_ID, call_id)
        _put(attrs, Attr.TOOL_TYPE, tool_type)
        self._content_into(attrs, arguments, Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS)
        if attributes:
            attrs.update(attributes)
        return ToolInvocation(self, f"execute_tool {name}", attrs)

    def llm(
        self,
        model: str,
        *,
        provider: str | None = None,
        input_messages: Any = None,
        tool_definitions: Any = None,
        attributes: dict[str, Any] | None = None,
    ) -> LLMInvocation:
        """An LLM call (``chat {model}``). Report usage with ``set_response``.
        ``tool_definitions``: the tools offered to the model (content, like the prompt)."""
        attrs: dict[str, Any] = {Attr.OPERATION: Operation.CHAT.value, Attr.REQUEST_MODEL: model}
        _put(attrs, Attr.PROVIDER, provider)
        self._content_into(attrs, input_messages, Attr.INPUT_REF, Attr.INPUT_MESSAGES)
        self._content_into(attrs, tool_definitions, Attr.TOOLS_REF, Attr.TOOL_DEFINITIONS)
        if attributes:
            attrs.update(attributes)
        return LLMInvocation(self, f"chat {model}", attrs)

    # -- instant moments (span events) ------------------------------------------------------

    def spawn(self, targets: str | Sequence[str], *, options: Iterable[str] | None = None,
              content: Any = None, span: Span | None = None) -> None:
        """Decide to spawn sub-agents (one decision for a whole fan-out)."""
        self._decision(DecisionKind.SPAWN, targets=targets, options=options, content=content, span=span)

    def delegate(self, target: str | Sequence[str], *, options: Iterable[str] | None = None,
                 content: Any = None, span: Span | None = None) -> None:
        """Decide which agent(s) act next (handoff, routing, speaker selection)."""
        self._decision(DecisionKind.DELEGATE, targets=target, options=options, content=content, span=span)

    def stop(self, reason: str = StopReason.END, *, content: Any = None, source: str | None = None,
             forced: bool = False, span: Span | None = None) -> None:
        """Decide to stop the run of the current context, with a reason (and the
        condition or component that decided it). ``forced``: a limit (turns,
        tokens, time, recursion) ended the run rather than a choice. To stop one
        nested run, use ``Invocation.stop``."""
        reason = str(reason).strip() or StopReason.END.value
        if self._decision(DecisionKind.STOP, reason=reason, source=source, content=content, span=span, forced=forced):
            run = otel_context.get_value(_RUN_KEY)
            if isinstance(run, _Run):
                run.stopped = True

    def stop_by(self, agent: Invocation, reason: str, *, forced: bool = False, source: str | None = None,
                content: Any = None) -> None:
        """Record a stop decided by ``agent``'s invocation, whose span may have
        ended already (a condition checked after the agent's turn, such as an
        AutoGen termination condition firing on its message). An ended span gets
        a zero-length ``orch.stop`` child span carrying the decision, so the stop
        still belongs to that invocation. The run is not marked stopped: the
        workflow records its own stop."""
        if agent.context is None:
            return
        reason = str(reason).strip() or StopReason.END.value
        if agent.span.is_recording():
            self._decision_event(agent.span, DecisionKind.STOP, reason=reason, source=source, content=content,
                                 forced=forced)
            return
        if not agent.span.get_span_context().is_valid:
            return
        span = self.tracer.start_span(STOP_SPAN, agent.context, SpanKind.INTERNAL)
        self._decision_event(span, DecisionKind.STOP, reason=reason, source=source, content=content, forced=forced)
        span.end()

    def message(self, content: Any = None, *, recipients: str | Iterable[str], sender: str | None = None,
                message_type: str | None = None, span: Span | None = None) -> None:
        """A message from ``sender`` (default: the current agent) to ``recipients``."""
        span = self._target_span(span, "message")
        if span is None:
            return
        attrs: dict[str, Any] = {Attr.RECIPIENTS: _names(recipients)}
        _put(attrs, Attr.SENDER, sender or _current_agent())
        _put(attrs, Attr.MESSAGE_TYPE, message_type)
        self._content_into(attrs, content, Attr.CONTENT_REF, Attr.CONTENT)
        span.add_event(SpanEvent.MESSAGE, attrs)

    def aggregate(self, content: Any = None, *, sources: Iterable[str] | None = None,
                  span: Span | None = None) -> None:
        """Combine the results of several agents (fan-in)."""
        span = self._target_span(span, "aggregate")
        if span is None:
            return
        attrs: dict[str, Any] = {}
        if sources is not None:
            attrs[Attr.SOURCES] = _names(sources)
        self._content_into(attrs, content, Attr.CONTENT_REF, Attr.CONTENT)
        span.add_event(SpanEvent.AGGREGATE, attrs)

    def human_intervention(self, content: Any = None, *, resume_of: str | None = None,
                           span: Span | None = None) -> None:
        """A human's input into the run (for example the value that resumes an interrupt)."""
        span = self._target_span(span, "human_intervention")
        if span is None:
            return
        attrs: dict[str, Any] = {}
        _put(attrs, Attr.RESUME_OF, resume_of)
        self._content_into(attrs, content, Attr.CONTENT_REF, Attr.CONTENT)
        span.add_event(SpanEvent.HUMAN_INTERVENTION, attrs)

    def reward(self, value: float, *, name: str = "reward", unit: str | None = None,
               target: str | None = None, span: Span | None = None) -> None:
        """A reward observed during the run. ``unit``: ``team`` (the default),
        ``agent`` or ``orchestrator`` with ``target`` = the agent's name, or
        ``role`` with ``target`` = the role; the trace keeps it as ``name``,
        ``name@target`` or ``name@role:target`` and the datasets credit it to
        that agent's (or role's) rows. Other units (turn, message, tool_call,
        token) or a missing target: not recorded, with a warning once (raised
        in strict mode). A value that is not a number raises (``orch_otel.reward``
        logs that once and goes on)."""
        number = float(value)
        unit = None if unit is None else str(unit)
        if unit is not None and unit not in CREDITED_REWARD_UNITS:
            return self._warn_once(f"reward-unit:{unit}", "orch-otel: reward(unit=%r) is not supported (%s are); "
                                   "reward %r not recorded", unit, ", ".join(sorted(CREDITED_REWARD_UNITS)), name)
        if unit not in (None, RewardUnit.TEAM.value) and not target:
            return self._warn_once(f"reward-target:{unit}", "orch-otel: reward(unit=%r) needs target= (the %s's name); "
                                   "reward %r not recorded", unit, "role" if unit == RewardUnit.ROLE.value else "agent", name)
        if unit == RewardUnit.TEAM.value and target:
            self._warn_once("reward-team-target", "orch-otel: reward(unit='team') takes no target; target ignored")
            target = None
        span = self._target_span(span, "reward")
        if span is None:
            return
        attrs: dict[str, Any] = {Attr.REWARD_VALUE: number, Attr.REWARD_NAME: name}
        _put(attrs, Attr.REWARD_UNIT, unit)
        _put(attrs, Attr.REWARD_TARGET, target)
        span.add_event(SpanEvent.REWARD, attrs)

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        """A wrong argument: logged once per kind (names only, no content); raised in strict mode."""
        if is_strict():
            raise ValueError(message % args)
        if key not in self._warned:
            self._warned.add(key)
            _log.warning(message, *args)

    # -- internals ------------------------------------------------------------------------

    def _decision(self, kind: DecisionKind, *, targets: str | Sequence[str] | None = None,
                  options: Iterable[str] | None = None, reason: str | None = None, source: str | None = None,
                  content: Any = None, span: Span | None = None, forced: bool = False) -> bool:
        span = self._target_span(span, kind.value)
        if span is None:
            return False
        self._decision_event(span, kind, targets=targets, options=options, reason=reason, source=source, content=content,
                             forced=forced)
        return True

    def _decision_event(self, span: Span, kind: DecisionKind, *, targets: str | Sequence[str] | None = None,
                        options: Iterable[str] | None = None, reason: str | None = None,
                        source: str | None = None, content: Any = None, forced: bool = False) -> None:
        attrs: dict[str, Any] = {Attr.DECISION: kind.value}
        if targets is not None:
            attrs[Attr.TARGETS] = _names(targets)
        if options is not None:
            attrs[Attr.OPTIONS] = _names(options)
        _put(attrs, Attr.STOP_REASON, reason)
        _put(attrs, Attr.STOP_SOURCE, source)
        if forced:
            attrs[Attr.STOP_FORCED] = True
        self._content_into(attrs, content, Attr.CONTENT_REF, Attr.CONTENT)
        span.add_event(SpanEvent.DECISION, attrs)

    def _target_span(self, span: Span | None, what: str) -> Span | None:
        span = span if span is not None else trace.get_current_span()
        if span.is_recording():
            return span
        if what not in self._warned and span is trace.INVALID_SPAN:
            self._warned.add(what)
            _log.warning("orch-otel: %s() called outside any traced agent or run; not recorded", what)
        return None

    def _content_into(self, attrs: dict[str, Any], content: Any, ref_key: str, text_key: str) -> None:
        if content is None:
            return
        try:
            kept = self.content.apply(content)
        except Exception:  # a redactor or serializer bug must not break the host
            log_fault(_log, logging.WARNING, "orch-otel: content policy failed; content not recorded")
            return
        if kept is not None:
            attrs[ref_key] = kept.ref
            if kept.text is not None:
                attrs[text_key] = kept.text

    def _content_attrs(self, span: Span, content: Any, ref_key: str, text_key: str) -> None:
        attrs: dict[str, Any] = {}
        self._content_into(attrs, content, ref_key, text_key)
        if attrs:
            span.set_attributes(attrs)


def _put(attrs: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        attrs[key] = value


def _current_agent() -> str | None:
    value = otel_context.get_value(_AGENT_KEY)
    return value if isinstance(value, str) else None


def current_agent() -> str | None:
    """Name of the innermost agent in the current context (None outside agents)."""
    return _current_agent()


@guarded
def _start(invocation: Invocation) -> None:
    invocation.start()


NOT_RECORDING = Recorder(tracer_provider=trace.NoOpTracerProvider(), content=ContentPolicy())
"""A recorder whose spans never record: what a public helper hands back when it
could not set up a real span, so the app's ``with`` block still runs."""

_default: Recorder | None = None


def get_recorder() -> Recorder:
    """The process-wide recorder used by decorators, helpers and integrations."""
    global _default
    if _default is None:
        _default = Recorder()
    return _default


def set_recorder(recorder: Recorder) -> None:
    global _default
    _default = recorder
