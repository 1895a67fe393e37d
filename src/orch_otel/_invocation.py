"""The lifecycle of one span with a duration (a run, an agent invocation, a tool
execution, an LLM call): ``start`` / ``end`` / ``fail``, or ``with``.

An invocation is handed what it needs by whoever starts it (the recorder),
through the narrow :class:`Owner` interface: a tracer, a content policy and a
classifier of exceptions. It never imports the recorder. The span-writing
steps that the recorder's instant moments share with it (a decision event,
content through the policy, an error mark) live here too, as functions.

Rules kept here: telemetry never raises into the host; the host's own
exceptions pass through untouched; control flow (handoffs, interrupts,
cancellation) is never an error; no work is done for spans that are not
recording; content goes through the content policy.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from ._faults import guarded, log_fault
from ._tokens import TokenRecord
from .content import ContentPolicy
from .vocabulary import Attr, DecisionKind, SpanEvent, StopReason, TransferMode, TransferTarget

_log = logging.getLogger(__name__)

# Context keys: the run a span belongs to, and the name of the enclosing agent.
RUN_KEY = otel_context.create_key("orch_otel.run")
AGENT_KEY = otel_context.create_key("orch_otel.agent")
# The model call (LLMInvocation) whose span a context belongs to: code run
# under it (the openai SDK's request) finds the call it serves.
LLM_CALL_KEY = otel_context.create_key("orch_otel.llm_call")
# The same, for integrations that start the call's span without attaching
# its context (LangGraph's callbacks): set around the model's request.
MODEL_CALL: ContextVar[LLMInvocation | None] = ContextVar("orch_otel_model_call", default=None)

# Outcomes of a span that ended by an exception or on purpose.
OK, ERROR, CANCELLED, INTERRUPTED, HANDOFF = "ok", "error", "cancelled", "interrupted", "handoff"
_STOP_REASON_BY_OUTCOME = {
    OK: StopReason.END,
    ERROR: StopReason.ERROR,
    CANCELLED: StopReason.CANCELLED,
    INTERRUPTED: StopReason.INTERRUPT,
    HANDOFF: StopReason.END,
}


@dataclass(frozen=True)
class Route:
    """How a framework made a decision, for a fork to force it again: the
    routing function whose result decided (and which of its calls in the
    run), and the handoff tools the deciding agent was given (tool -> agent)."""

    router: str | None = None
    router_call: int | None = None
    handoff_tools: Mapping[str, str] | None = None

    def into(self, attrs: dict[str, Any]) -> None:
        put(attrs, Attr.ROUTER, self.router)
        put(attrs, Attr.ROUTER_CALL, self.router_call)
        if self.handoff_tools:
            attrs[Attr.HANDOFF_TOOLS] = [f"{tool}={agent}" for tool, agent in self.handoff_tools.items()]


class Owner(Protocol):
    """What an invocation needs from whoever started it. Read at each use, so
    a recorder whose tracer or content policy is replaced is followed."""

    tracer: trace.Tracer
    content: ContentPolicy
    genai_latest: bool  # OTEL_SEMCONV_STABILITY_OPT_IN lists gen_ai_latest_experimental

    def classify(self, error: BaseException) -> str:
        """The outcome ``error`` stands for: ERROR, or a control-flow outcome."""
        ...


_InvocationT = TypeVar("_InvocationT", bound="Invocation")  # start() and `with` hand back the subclass


class Run:
    """State shared by all spans of one run (the outermost orch-otel span)."""

    __slots__ = ("stopped",)

    def __init__(self) -> None:
        self.stopped = False


class Invocation:
    """Lifecycle of one span: ``start()``, then ``end()`` or ``fail(exc)``.

    As a context manager it starts, attaches its context, and ends with the
    outcome of the block. ``start(attach=False)`` leaves context handling to
    the caller (callback-based integrations use ``.context`` per step).
    """

    __slots__ = ("_owner", "_name", "_attributes", "_links", "span", "context", "_token", "_run", "_ended")
    _kind = SpanKind.INTERNAL  # the GenAI conventions' kind for runs, in-process agents and tools

    def __init__(self, owner: Owner, name: str, attributes: dict[str, Any],
                 links: Sequence[trace.Link] | None = None) -> None:
        self._owner = owner
        self._name = name
        self._attributes = attributes
        self._links = links
        self.span: Span = trace.INVALID_SPAN
        self.context: otel_context.Context | None = None
        self._token: Token[otel_context.Context] | None = None
        self._run: Run | None = None
        self._ended = False

    def start(self: _InvocationT, *, attach: bool = True, parent: otel_context.Context | None = None) -> _InvocationT:
        ctx = parent if parent is not None else otel_context.get_current()
        span = self._owner.tracer.start_span(self._name, ctx, self._kind, self._attributes, self._links)
        self.span = span
        ctx = trace.set_span_in_context(span, ctx)
        extra: dict[str, Any] = {}
        if otel_context.get_value(RUN_KEY, ctx) is None:
            self._run = extra[RUN_KEY] = Run()
        agent = self._attributes.get(Attr.AGENT_NAME)
        if agent is not None:
            extra[AGENT_KEY] = agent
        if isinstance(self, LLMInvocation):
            extra[LLM_CALL_KEY] = self
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
    def set_input(self, value: Any) -> None:
        """The run's input, known only once the run has started (content, kept
        as the policy says, as ``input=`` at the start is)."""
        if self.span.is_recording():
            attrs: dict[str, Any] = {}
            content_into(attrs, self._owner.content, value, Attr.INPUT_REF, Attr.RUN_INPUT)
            if attrs:
                self.span.set_attributes(attrs)

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
                    mark_error(span, error, self._owner.content)
                if self._run is not None and not self._run.stopped:
                    reason = stop_reason or _STOP_REASON_BY_OUTCOME.get(outcome, StopReason.END)
                    decision_event(span, self._owner.content, DecisionKind.STOP, reason=str(reason))
                    self._run.stopped = True
                span.end()
        finally:
            self._detach()

    @guarded
    def stop(self, reason: str, *, content: Any = None, source: str | None = None, forced: bool = False,
             options: Iterable[str] | None = None, route: Route | None = None) -> None:
        """Record this span's run stopping. Only the run root marks the run as
        stopped: a nested run's stop does not stop the run around it.
        ``options``: the agents it could have handed the work to instead."""
        if self.span.is_recording():
            decision_event(self.span, self._owner.content, DecisionKind.STOP, options=options,
                           reason=str(reason).strip() or StopReason.END.value, content=content, source=source,
                           forced=forced, route=route)
            if self._run is not None:
                self._run.stopped = True

    def fail(self, error: BaseException) -> None:
        """End the span with the outcome the error stands for (control flow is not an error)."""
        self.end(outcome=self._owner.classify(error), error=error)

    def _detach(self) -> None:
        token, self._token = self._token, None
        if token is not None:
            try:
                otel_context.detach(token)
            except Exception:  # detached from another context: nothing to restore
                log_fault(_log, logging.DEBUG, "orch-otel: context detach skipped")

    def __enter__(self: _InvocationT) -> _InvocationT:
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
    def transfer(self, target: str, *, mode: str = TransferMode.PASS_CONTROL,
                 target_type: str = TransferTarget.AGENT) -> None:
        """This tool call is a transfer the framework made (a handoff tool):
        the conventions' transfer refinement of ``execute_tool``, with the
        calling agent as ``gen_ai.agent.name``. Call it only where the
        framework says so, never from a tool's name. Written only under
        ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` (the
        refinement is not in a released version of the conventions yet)."""
        span = self.span
        if self._owner.genai_latest and target and span.is_recording():
            source = otel_context.get_value(AGENT_KEY, self.context)
            span.set_attributes(transfer_attributes(target, mode, target_type, source))

    @guarded
    def set_result(self, result: Any) -> None:
        if self.span.is_recording():
            attrs: dict[str, Any] = {}
            content_into(attrs, self._owner.content, result, Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT)
            if attrs:
                self.span.set_attributes(attrs)


class LLMInvocation(Invocation):
    __slots__ = ()
    _kind = SpanKind.CLIENT  # a model call goes out to a provider, as every version of the conventions says

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
        content_into(attrs, self._owner.content, output, Attr.OUTPUT_REF, Attr.OUTPUT_MESSAGES)
        if attrs:
            span.set_attributes(attrs)  # one lock and one validation pass, not one per attribute

    @guarded
    def set_tokens(self, record: TokenRecord) -> bool:
        """Keep the call's token ids and logprobs in the local token store and
        name them on the span by ref (the ids never go on the span). False when
        token capture is off or the span has ended."""
        span = self.span
        if not span.is_recording():
            return False
        ref = self._owner.content.keep_tokens(span.get_span_context().trace_id, record)
        if ref is None:
            return False
        span.set_attribute(Attr.TOKENS_REF, ref)
        return True


def current_llm_call() -> LLMInvocation | None:
    """The model call being made in this context, if its span is still open:
    the one set in :data:`MODEL_CALL`, else the one whose context is attached."""
    for call in (MODEL_CALL.get(), otel_context.get_value(LLM_CALL_KEY)):
        if isinstance(call, LLMInvocation) and call.span.is_recording():
            return call
    return None


@guarded
def _start(invocation: Invocation) -> None:
    invocation.start()


def in_run(context: otel_context.Context | None = None) -> bool:
    """True inside an orch-otel run: a span orch-otel started (a workflow, an
    agent, a tool; an app's own or a framework's) is current and recording,
    in ``context`` (default: the current one). A framework run started there
    is part of that run, not a run of its own."""
    return otel_context.get_value(RUN_KEY, context) is not None and trace.get_current_span(context).is_recording()


def current_agent() -> str | None:
    """Name of the innermost agent in the current context (None outside agents)."""
    value = otel_context.get_value(AGENT_KEY)
    return value if isinstance(value, str) else None


# -- span-writing steps shared with the recorder's instant moments ---------------------------


def names(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def put(attrs: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        attrs[key] = value


def transfer_attributes(target: str, mode: str, target_type: str, source: Any) -> dict[str, Any]:
    """The transfer refinement of an ``execute_tool`` span; ``source``: the agent calling the tool."""
    attrs: dict[str, Any] = {Attr.TRANSFER_MODE: str(mode), Attr.TRANSFER_TARGET_TYPE: str(target_type),
                             Attr.TRANSFER_TARGET_NAME: str(target)}
    if isinstance(source, str):
        attrs[Attr.AGENT_NAME] = source
    return attrs


def content_into(attrs: dict[str, Any], policy: ContentPolicy, content: Any, ref_key: str, text_key: str) -> None:
    """Put ``content``, as the policy keeps it (a ref, and text when captured), into ``attrs``."""
    if content is None:
        return
    try:
        kept = policy.apply(content)
    except Exception:  # a redactor or serializer bug must not break the host
        log_fault(_log, logging.WARNING, "orch-otel: content policy failed; content not recorded")
        return
    if kept is not None:
        attrs[ref_key] = kept.ref
        if kept.text is not None:
            if policy.local is not None:  # record for replay: the text stays in this process
                policy.local.keep(kept.ref, kept.text)
            else:
                attrs[text_key] = kept.text


def decision_event(span: Span, policy: ContentPolicy, kind: DecisionKind, *,
                   targets: str | Sequence[str] | None = None, options: Iterable[str] | None = None,
                   reason: str | None = None, source: str | None = None, content: Any = None,
                   forced: bool = False, route: Route | None = None) -> None:
    attrs: dict[str, Any] = {Attr.DECISION: kind.value}
    if targets is not None:
        attrs[Attr.TARGETS] = names(targets)
    if options is not None:
        attrs[Attr.OPTIONS] = names(options)
    put(attrs, Attr.STOP_REASON, reason)
    put(attrs, Attr.STOP_SOURCE, source)
    if forced:
        attrs[Attr.STOP_FORCED] = True
    if route is not None:
        route.into(attrs)
    content_into(attrs, policy, content, Attr.CONTENT_REF, Attr.CONTENT)
    span.add_event(SpanEvent.DECISION, attrs)


def mark_error(span: Span, error: BaseException | None, policy: ContentPolicy) -> None:
    """Mark ``span`` failed. An exception's message and stack trace are
    content (they often quote inputs, keys or addresses): they are kept only
    with capture on, and then redacted. The type always is."""
    if error is None:
        span.set_status(StatusCode.ERROR)
        return
    kind = type(error).__qualname__
    span.set_attribute(Attr.ERROR_TYPE, kind)
    span.set_status(StatusCode.ERROR, kind)
    attrs: dict[str, Any] = {Attr.EXCEPTION_TYPE: kind, Attr.EXCEPTION_ESCAPED: True}
    if policy.on_spans:
        try:
            attrs[Attr.EXCEPTION_MESSAGE] = policy.redact(str(error))
            trace_text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            attrs[Attr.EXCEPTION_STACKTRACE] = policy.redact(trace_text)
        except Exception:  # str() of a broken exception must not break the host
            _log.warning("orch-otel: could not format a %s; message not recorded", kind)
    span.add_event(SpanEvent.EXCEPTION, attrs)
