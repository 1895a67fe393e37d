"""Microsoft Agent Framework's own spans (scope ``agent_framework``), as the
framework writes them when it traces to a provider with no orch-otel on it.

One workflow run is one trace: ``invoke_workflow {name}`` at the root,
``executor.process {id}`` per executor turn (with span links to the
``message.send`` spans that delivered its message), ``invoke_agent``,
``chat`` and ``execute_tool`` below them (the GenAI reader maps those), and
``edge_group.process`` / ``message.send`` for routing. What the links say:

- an executor turn that ran an agent (an ``invoke_agent`` child) was
  delegated to by whoever sent the message that started it: a Handoff agent
  (``HandoffAgentExecutor``) hands off itself; a GroupChat or Magentic
  orchestrator's choice is its manager agent's when a manager agent ran in
  that orchestrator turn, else the workflow's (a selection function);
  anything else is the workflow's routing, one decision for every agent turn
  the same message started (a fan-out). A turn no message started is the
  start agent's. All implied: the framework logs deliveries, not choices,
  and never the options.
- a turn started by several messages at once (a fan-in) is the workflow's
  aggregate of the agents that sent them (implied).
- the root's end: the run's stop, ``end`` (implied), or ``error`` (forced)
  with ``workflow.error`` or an error status; an agent run
  inside another agent's tool call (a spawned sub-agent) ended: its own
  stop, ``end`` (implied).

``workflow.build`` makes a trace of its own per built workflow: a
definition, not a run. Handoff tools make no span (the framework
short-circuits them), so handoff tool calls are not in these logs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..content import ContentPolicy
from ..spans import SpanRecord
from ..vocabulary import AGENT_FRAMEWORK_SYSTEM, Attr, DecisionKind, Operation, StopReason, Topology
from ._genai import genai_span
from ._native import aggregate, decision, native, operation

SCOPE = "agent_framework"
BUILD_SPAN = "workflow.build"
_EXECUTOR_SPAN = "executor.process"
_EXECUTOR_ID = "executor.id"
_EXECUTOR_TYPE = "executor.type"
_HANDOFF_EXECUTOR = "HandoffAgentExecutor"
_WORKFLOW_ERROR = "workflow.error"
_GENERATED_NAME = "workflow"  # the framework leaves out the generated name of a WorkflowBuilder given none


def is_build(spans: list[SpanRecord]) -> bool:
    """A trace of ``workflow.build`` spans only: a workflow definition, not a run."""
    return bool(spans) and all(s.scope == SCOPE and s.name == BUILD_SPAN for s in spans)


def _agent_name(span: SpanRecord) -> str:
    return str(span.attributes.get(Attr.AGENT_NAME) or span.attributes.get(Attr.AGENT_ID) or span.name)


def map_agent_framework(spans: list[SpanRecord], recorded_by: str, policy: ContentPolicy | None) -> list[SpanRecord]:
    by_id = {s.span_id: s for s in spans}
    children: dict[str, list[SpanRecord]] = defaultdict(list)
    for s in spans:
        if s.parent_id in by_id:
            children[s.parent_id].append(s)
    root = min(spans, key=lambda s: (s.parent_id in by_id, s.start_ns, s.span_id))
    events: dict[str, list[Any]] = defaultdict(list)  # span id -> the events to add to it

    def agents_in(executor: SpanRecord) -> list[SpanRecord]:
        return sorted((c for c in children.get(executor.span_id, ()) if operation(c.attributes) == "invoke_agent"),
                      key=lambda s: s.start_ns)

    def decider(sender: SpanRecord | None) -> str:
        """The span whose decision a delivery from ``sender`` (an executor turn) is."""
        if sender is None:
            return root.span_id
        kind = str(sender.attributes.get(_EXECUTOR_TYPE) or "")
        ran = agents_in(sender)
        if ran and (kind == _HANDOFF_EXECUTOR or "Orchestrator" in kind):
            return ran[-1].span_id  # the handing-off agent, or the manager agent that chose
        return root.span_id

    executor_turns = sorted((s for s in spans if s.name.startswith(_EXECUTOR_SPAN)), key=lambda s: s.start_ns)
    decided: dict[tuple[str, ...], tuple[str, int]] = {}  # the delivering sends -> (decider span, event index)
    for turn in executor_turns:
        sends = tuple(link.span_id for link in turn.links if link.span_id in by_id)
        senders = [by_id.get(by_id[s].parent_id or "") for s in sends]
        if len(sends) > 1:  # a fan-in: the replies of every sender at once
            sources = [_agent_name(agents_in(s)[-1]) for s in senders if s is not None and agents_in(s)]
            if sources:
                events[root.span_id].append(aggregate(turn.start_ns, sources, implied=True))
        ran = agents_in(turn)
        if not ran or "Orchestrator" in str(turn.attributes.get(_EXECUTOR_TYPE) or ""):
            continue  # no agent ran (a plain executor, a cached broadcast), or a manager's own runs
        name = _agent_name(ran[0])
        key = sends[:1] if len(sends) == 1 else sends  # a fan-out: the same send starts several turns
        if key and key in decided:  # another target of a delivery already decided: one decision for all
            at, index = decided[key]
            old = events[at][index]
            targets = (*old.attributes[Attr.TARGETS], name)
            events[at][index] = decision(old.time_ns, DecisionKind.DELEGATE, targets, implied=True)
            continue
        at = decider(senders[0] if senders else None)
        options = [name] if not sends else None  # the start: the one agent the run begins with
        events[at].append(decision(turn.start_ns, DecisionKind.DELEGATE, [name], options=options, implied=True))
        if key:
            decided[key] = (at, len(events[at]) - 1)

    def spawned(span: SpanRecord) -> bool:
        cur = by_id.get(span.parent_id or "")
        while cur is not None:
            if operation(cur.attributes) == "invoke_agent":
                return True
            cur = by_id.get(cur.parent_id or "")
        return False

    nested = {s.span_id for s in spans if operation(s.attributes) == "invoke_agent" and spawned(s)}
    for span_id in nested:  # an agent run inside another's tool call that ended: its own end
        events[span_id].append(decision(by_id[span_id].end_ns, DecisionKind.STOP, reason=StopReason.END.value,
                                        implied=True))
    out = []
    for span in spans:
        extra: dict[str, Any] = {}
        if span.span_id in nested:
            extra[Attr.AGENT_SPAWNED] = True
        mapped = genai_span(span, policy, **extra)
        if span is root:
            base = mapped if mapped is not None else native(span, {})
            attrs = {**base.attributes, Attr.RECORDED_BY: recorded_by, Attr.SYSTEM: AGENT_FRAMEWORK_SYSTEM}
            if operation(attrs) == Operation.INVOKE_WORKFLOW.value:
                attrs.setdefault(Attr.WORKFLOW_NAME, _GENERATED_NAME)
                kinds = {s.attributes.get(_EXECUTOR_TYPE) for s in spans if s.name.startswith(_EXECUTOR_SPAN)}
                attrs[Attr.TOPOLOGY] = (Topology.SWARM if _HANDOFF_EXECUTOR in kinds else Topology.CENTRALIZED).value
            elif operation(attrs) == Operation.INVOKE_AGENT.value:  # one agent: in its tool loop, or with agent tools
                attrs[Attr.TOPOLOGY] = (Topology.CENTRALIZED if nested else Topology.HARNESS).value
            # the run's own end (a nested agent's stop must not stand in for it)
            failed = any(e.name == _WORKFLOW_ERROR for e in span.events) or span.status == "error"
            stop = [decision(span.end_ns, DecisionKind.STOP, reason=(StopReason.ERROR if failed else StopReason.END).value,
                             forced=failed or None, implied=not failed)]
            mapped = native(base, attrs, [*events.get(span.span_id, ()), *stop])
        elif span.span_id in events:
            base = mapped if mapped is not None else native(span, {})
            mapped = native(base, base.attributes, events[span.span_id])
        out.append(mapped if mapped is not None else span)
    return out
