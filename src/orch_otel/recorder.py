"""The recorder: the one place that turns orchestration moments into spans.

Moments with a duration (a run, an agent invocation, a tool execution, an LLM
call) are spans, each driven by a lifecycle object from :mod:`.invocation`
(``start`` / ``end`` / ``fail``, or ``with``). Instant moments (spawn,
delegate, message, aggregate, stop, human intervention, reward) are span
events on the current span.

Rules kept here for every caller: telemetry never raises into the host; a
wrong argument is logged once (raised in strict mode); content goes through
the content policy.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from . import _env as env
from ._faults import is_strict
from ._invocation import (
    CANCELLED,
    ERROR,
    HANDOFF,
    INTERRUPTED,
    OK,
    RUN_KEY,
    Invocation,
    LLMInvocation,
    Route,
    Run,
    ToolInvocation,
    content_into,
    current_agent,
    decision_event,
    names,
    put,
    transfer_attributes,
)
from ._renamed import renamed_keyword
from ._version import __version__
from .content import ContentPolicy
from .vocabulary import (
    CREDITED_REWARD_UNITS,
    INSTRUMENTATION_NAME,
    OPENINFERENCE_CHAIN,
    Attr,
    DecisionKind,
    Operation,
    RewardUnit,
    SpanEvent,
    StopReason,
    TransferMode,
    TransferTarget,
)

__all__ = [
    "CANCELLED", "DELEGATE_SPAN", "ERROR", "HANDOFF", "INTERRUPTED", "NOT_RECORDING", "OK", "STOP_SPAN", "Invocation",
    "LLMInvocation", "Recorder", "ToolInvocation", "current_agent", "get_recorder", "set_recorder",
]

_log = logging.getLogger(__name__)

STOP_SPAN = "orch.stop"  # carries a stop decided by an invocation whose span had ended (Recorder.stop_by)
DELEGATE_SPAN = "orch.delegate"  # carries a delegation decided by an invocation whose span had ended (Recorder.delegate_by)


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
        self.genai_latest = env.genai_latest_experimental()  # read once, like the content policy

    # -- exception classification ---------------------------------------------------

    def register_control_flow(self, exc_type: type[BaseException], outcome: str) -> None:
        """Declare an exception type as control flow (never an error span)."""
        self._control_flow[exc_type] = outcome

    def unregister_control_flow(self, exc_type: type[BaseException]) -> None:
        self._control_flow.pop(exc_type, None)

    def classify(self, error: BaseException) -> str:
        for exc_type in type(error).__mro__:
            outcome = self._control_flow.get(exc_type)
            if outcome is not None:
                return outcome
        return ERROR

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
        input: Any = None,
    ) -> Invocation:
        """A run of a multi-agent workflow (graph, team): usually the trace root.
        ``links`` join related runs (a resume links to the interrupted run).
        ``input`` is the run's input, content: kept as the content policy says
        (a replay feeds it to the app again)."""
        attrs = {Attr.OPERATION: Operation.INVOKE_WORKFLOW.value, Attr.WORKFLOW_NAME: name,
                 Attr.OPENINFERENCE_SPAN_KIND: OPENINFERENCE_CHAIN}
        content_into(attrs, self.content, input, Attr.INPUT_REF, Attr.RUN_INPUT)
        put(attrs, Attr.TASK_ID, task_id)
        put(attrs, Attr.CONVERSATION_ID, conversation_id)
        put(attrs, Attr.SYSTEM, system)
        put(attrs, Attr.TOPOLOGY, topology)
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
        provider: str | None = None,
        fanout_index: int | None = None,
        fanout_size: int | None = None,
        task_id: str | None = None,
        conversation_id: str | None = None,
        system: str | None = None,
        topology: str | None = None,
        attributes: dict[str, Any] | None = None,
        input: Any = None,
    ) -> Invocation:
        """An agent invocation. ``spawned`` marks a sub-agent started by its parent;
        ``provider``: the ``gen_ai.provider.name`` of the agent's model, where known;
        ``input``: a standalone agent run's input (content, as for ``workflow``)."""
        attrs: dict[str, Any] = {
            Attr.OPERATION: Operation.INVOKE_AGENT.value,
            Attr.AGENT_NAME: name,
            Attr.AGENT_ID: agent_id or name,
        }
        content_into(attrs, self.content, input, Attr.INPUT_REF, Attr.RUN_INPUT)
        put(attrs, Attr.AGENT_ROLE, role)
        put(attrs, Attr.AGENT_DESCRIPTION, description)
        put(attrs, Attr.PROVIDER, provider)
        if spawned:
            attrs[Attr.AGENT_SPAWNED] = True
        put(attrs, Attr.FANOUT_INDEX, fanout_index)
        put(attrs, Attr.FANOUT_SIZE, fanout_size)
        put(attrs, Attr.TASK_ID, task_id)
        put(attrs, Attr.CONVERSATION_ID, conversation_id)
        put(attrs, Attr.SYSTEM, system)
        put(attrs, Attr.TOPOLOGY, topology)
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
        transfer_to: str | None = None,
        attributes: dict[str, Any] | None = None,
    ) -> ToolInvocation:
        """A tool execution; ``call_id`` pairs it with the model's tool call.
        ``transfer_to``: the framework says this tool hands control to that
        agent (a handoff tool), known before it runs; see ``ToolInvocation.transfer``."""
        attrs: dict[str, Any] = {Attr.OPERATION: Operation.EXECUTE_TOOL.value, Attr.TOOL_NAME: name}
        span_name = f"execute_tool {name}"
        if transfer_to and self.genai_latest:  # at start, so samplers see it; the refinement's span name
            attrs.update(transfer_attributes(transfer_to, TransferMode.PASS_CONTROL, TransferTarget.AGENT,
                                             current_agent()))
            span_name = f"{span_name} {transfer_to}"
        put(attrs, Attr.TOOL_CALL_ID, call_id)
        put(attrs, Attr.TOOL_TYPE, tool_type)
        content_into(attrs, self.content, arguments, Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS)
        if attributes:
            attrs.update(attributes)
        return ToolInvocation(self, span_name, attrs)

    def llm(
        self,
        model: str,
        *,
        provider: str | None = None,
        input_messages: Any = None,
        tools: Any = None,
        attributes: dict[str, Any] | None = None,
        **renamed: Any,
    ) -> LLMInvocation:
        """An LLM call (``chat {model}``). Report usage with ``set_response``.
        ``tools``: the tool definitions offered to the model (content, like the
        prompt); ``tool_definitions=`` is their deprecated name."""
        tools = renamed_keyword("Recorder.llm", renamed, "tool_definitions", "tools", tools)
        attrs: dict[str, Any] = {Attr.OPERATION: Operation.CHAT.value, Attr.REQUEST_MODEL: model}
        put(attrs, Attr.PROVIDER, provider)
        content_into(attrs, self.content, input_messages, Attr.INPUT_REF, Attr.INPUT_MESSAGES)
        content_into(attrs, self.content, tools, Attr.TOOLS_REF, Attr.TOOL_DEFINITIONS)
        if attributes:
            attrs.update(attributes)
        return LLMInvocation(self, f"chat {model}", attrs)

    # -- instant moments (span events) ------------------------------------------------------

    def spawn(self, targets: str | Sequence[str], *, options: Iterable[str] | None = None,
              content: Any = None, span: Span | None = None, route: Route | None = None) -> None:
        """Decide to spawn sub-agents (one decision for a whole fan-out)."""
        self._decision(DecisionKind.SPAWN, targets=targets, options=options, content=content, span=span, route=route)

    def delegate(self, target: str | Sequence[str], *, options: Iterable[str] | None = None,
                 content: Any = None, span: Span | None = None, route: Route | None = None) -> None:
        """Decide which agent(s) act next (handoff, routing, speaker selection).
        ``route``: how the framework made it (a router, handoff tools), for forks."""
        self._decision(DecisionKind.DELEGATE, targets=target, options=options, content=content, span=span,
                       route=route)

    def stop(self, reason: str = StopReason.END, *, content: Any = None, source: str | None = None,
             forced: bool = False, span: Span | None = None) -> None:
        """Decide to stop the run of the current context, with a reason (and the
        condition or component that decided it). ``forced``: a limit (turns,
        tokens, time, recursion) ended the run rather than a choice. To stop one
        nested run, use ``Invocation.stop``."""
        reason = str(reason).strip() or StopReason.END.value
        if self._decision(DecisionKind.STOP, reason=reason, source=source, content=content, span=span, forced=forced):
            run = otel_context.get_value(RUN_KEY)
            if isinstance(run, Run):
                run.stopped = True

    def stop_by(self, agent: Invocation, reason: str, *, forced: bool = False, source: str | None = None,
                content: Any = None) -> None:
        """Record a stop decided by ``agent``'s invocation, whose span may have
        ended already (a condition checked after the agent's turn, such as an
        AutoGen termination condition firing on its message). An ended span gets
        a zero-length ``orch.stop`` child span carrying the decision, so the stop
        still belongs to that invocation. The run is not marked stopped: the
        workflow records its own stop."""
        reason = str(reason).strip() or StopReason.END.value
        span = self._decider_span(agent, STOP_SPAN)
        if span is not None:
            decision_event(span, self.content, DecisionKind.STOP, reason=reason, source=source, content=content,
                           forced=forced)
            if span is not agent.span:
                span.end()

    def delegate_by(self, agent: Invocation, target: str | Sequence[str], *, options: Iterable[str] | None = None,
                    content: Any = None) -> None:
        """Record a delegation decided by ``agent``'s invocation, whose span may
        have ended already (a manager agent's choice, acted on after its run):
        as :meth:`stop_by`, an ended span gets a zero-length ``orch.delegate``
        child span carrying the decision."""
        span = self._decider_span(agent, DELEGATE_SPAN)
        if span is not None:
            decision_event(span, self.content, DecisionKind.DELEGATE, targets=target, options=options, content=content)
            if span is not agent.span:
                span.end()

    def _decider_span(self, agent: Invocation, child_name: str) -> Span | None:
        """``agent``'s span while it records, else a new zero-length child of it (None if it never started)."""
        if agent.context is None:
            return None
        if agent.span.is_recording():
            return agent.span
        if not agent.span.get_span_context().is_valid:
            return None
        return self.tracer.start_span(child_name, agent.context, SpanKind.INTERNAL)

    def message(self, content: Any = None, *, recipients: str | Iterable[str], sender: str | None = None,
                message_type: str | None = None, span: Span | None = None) -> None:
        """A message from ``sender`` (default: the current agent) to ``recipients``."""
        span = self._target_span(span, "message")
        if span is None:
            return
        attrs: dict[str, Any] = {Attr.RECIPIENTS: names(recipients)}
        put(attrs, Attr.SENDER, sender or current_agent())
        put(attrs, Attr.MESSAGE_TYPE, message_type)
        content_into(attrs, self.content, content, Attr.CONTENT_REF, Attr.CONTENT)
        span.add_event(SpanEvent.MESSAGE, attrs)

    def aggregate(self, content: Any = None, *, sources: Iterable[str] | None = None,
                  span: Span | None = None) -> None:
        """Combine the results of several agents (fan-in)."""
        span = self._target_span(span, "aggregate")
        if span is None:
            return
        attrs: dict[str, Any] = {}
        if sources is not None:
            attrs[Attr.SOURCES] = names(sources)
        content_into(attrs, self.content, content, Attr.CONTENT_REF, Attr.CONTENT)
        span.add_event(SpanEvent.AGGREGATE, attrs)

    def human_intervention(self, content: Any = None, *, resume_of: str | None = None,
                           recipients: str | Iterable[str] | None = None, span: Span | None = None,
                           approved: Iterable[str] | None = None, rejected: Iterable[str] | None = None) -> None:
        """A human's input into the run (for example the value that resumes an
        interrupt). ``recipients``: the agents it reaches (default: the agent or
        run of ``span``). ``approved`` / ``rejected``: the tool call ids the
        human approved or rejected (ids, not content: always kept)."""
        span = self._target_span(span, "human_intervention")
        if span is None:
            return
        attrs: dict[str, Any] = {}
        put(attrs, Attr.RESUME_OF, resume_of)
        if recipients is not None:
            attrs[Attr.RECIPIENTS] = names(recipients)
        if approved is not None:
            attrs[Attr.APPROVED] = names(approved)
        if rejected is not None:
            attrs[Attr.REJECTED] = names(rejected)
        content_into(attrs, self.content, content, Attr.CONTENT_REF, Attr.CONTENT)
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
        put(attrs, Attr.REWARD_UNIT, unit)
        put(attrs, Attr.REWARD_TARGET, target)
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
                  content: Any = None, span: Span | None = None, forced: bool = False,
                  route: Route | None = None) -> bool:
        span = self._target_span(span, kind.value)
        if span is None:
            return False
        decision_event(span, self.content, kind, targets=targets, options=options, reason=reason, source=source,
                       content=content, forced=forced, route=route)
        return True

    def _target_span(self, span: Span | None, what: str) -> Span | None:
        explicit = span is not None  # an integration names its span; only a helper called bare looks at the context
        span = span if span is not None else trace.get_current_span()
        if span.is_recording():
            return span
        # A span handed in that does not record (no SDK configured, a sampler said no) is the integration's
        # business, not the app's: no warning. A bare call with no current span is the app's mistake: warn once.
        if not explicit and what not in self._warned and span is trace.INVALID_SPAN:
            self._warned.add(what)
            _log.warning("orch-otel: %s() called outside any traced agent or run; not recorded", what)
        return None


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
