"""LangGraph runs as OpenInference and OpenLLMetry log them: both instrument
LangChain's callbacks, so both write one span per runnable and copy the
callback metadata LangGraph sets on each (node, step, triggers, task path,
checkpoint namespace). That metadata is what this mapper reads: the same
rules serve both peers, each read through its own view
(:mod:`._langchain_views`).

What it recovers, and how sure it is:

* a **node run** starts where the checkpoint namespace gets a new segment;
  the namespace's depth nests graphs in graphs. A node run is an **agent**
  when it calls a model or runs a graph of its own, as orch-otel's LangGraph
  integration decides; the steps of a prebuilt agent loop (``agent``,
  ``model``, ``tools``) are not agents. Agents are spawned by the graph that
  runs them; a ``Send`` branch (task path ``__pregel_push``) is a worker,
  with its index among its step's branches.
* **models and tools**: model, provider and tokens; a tool run gets the call
  id its agent's model asked for (by name, in order).
* a **handoff**: a ``transfer_to_X`` tool whose agent is followed by agent X
  (OpenLLMetry also logs the ``goto``). It is a delegation, with the agent's
  handoff tools as options where each names a node of the graph. Marked
  ``implied`` unless the log recorded the goto.
* a **fan-in**: the node that runs in the step after two or more ``Send``
  branches, triggered by their edge, aggregates them (``implied``).
* a **stop**: LangGraph's recursion-limit error on the run. Any other end is
  the converter's implied stop: neither peer records who decided to stop.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..content import ContentPolicy
from ..spans import SpanRecord
from ..vocabulary import Attr, DecisionKind, Operation, StopReason
from ._langchain_views import Seen, View
from ._native import agent_attrs, aggregate, decision, message, native, put_content

_LOOP_STEPS = frozenset({"agent", "model", "tools"})  # a prebuilt agent's loop (create_react_agent, create_agent)
_HANDOFF_PREFIX = "transfer_to_"
_PUSH = "__pregel_push"
_RECURSION = "GraphRecursionError"
_INTERRUPT = "GraphInterrupt"


@dataclass
class _Run:
    """A node run: one execution of a graph node."""

    span: SpanRecord
    seen: Seen
    parent: _Run | None
    depth: int
    agent: bool = False
    role: str | None = None
    children: list[_Run] = field(default_factory=list)
    fanout: tuple[int, int] | None = None


def map_langgraph(spans: list[SpanRecord], view: View, recorded_by: str,
                  policy: ContentPolicy | None) -> list[SpanRecord]:
    seen = {s.span_id: view(s) for s in spans}
    by_id = {s.span_id: s for s in spans}
    root = min((s for s in spans if s.parent_id not in by_id), key=lambda s: (s.start_ns, s.span_id))
    runs, run_at = _node_runs(spans, by_id, seen)
    _classify(runs, _calls_model(spans, seen, run_at))
    owner = _owners(spans, by_id, runs)  # span id -> the agent run whose work it is (None: the workflow)
    out: dict[str, SpanRecord] = {}
    extra: dict[str, list] = defaultdict(list)  # span id -> events to add
    workflow = _workflow_name(root, seen[root.span_id])
    root_attrs = agent_attrs(workflow, workflow=True, extra={Attr.SYSTEM: "langgraph", Attr.RECORDED_BY: recorded_by})
    if seen[root.span_id].input is not None:
        put_content(root_attrs, Attr.INPUT_REF, Attr.RUN_INPUT, seen[root.span_id].input, policy)
    _stops(spans, root, extra)
    for run in runs.values():
        if run.agent:
            attrs = agent_attrs(run.seen.node or run.span.name, spawned=True, role=run.role)
            if run.fanout is not None:
                attrs[Attr.FANOUT_INDEX], attrs[Attr.FANOUT_SIZE] = run.fanout
            out[run.span.span_id] = native(run.span, attrs)
    _models_and_tools(spans, seen, owner, out, policy)
    _handoffs(spans, seen, owner, runs, out, extra)
    _fan_ins(runs, extra)
    out[root.span_id] = native(root, root_attrs)
    result = []
    for span in spans:
        mapped = out.get(span.span_id, span)
        if span.span_id in extra:
            mapped = native(mapped, mapped.attributes, extra[span.span_id])
        result.append(mapped)
    return result


def _workflow_name(root: SpanRecord, seen: Seen) -> str:
    name = root.attributes.get(Attr.AGENT_NAME) or root.attributes.get("traceloop.workflow.name") or root.name
    return str(name).removesuffix(".workflow")


def _node_runs(spans: list[SpanRecord], by_id: Mapping[str, SpanRecord],
               seen: Mapping[str, Seen]) -> tuple[dict[str, _Run], dict[str, _Run | None]]:
    """Node runs, by span id (in start order): the first span of each new
    checkpoint namespace; and, for every span, the nearest run at or above it.
    Each span is settled once, ancestors first, so a deep tree costs linear time."""
    runs: dict[str, _Run] = {}
    ns_at: dict[str, str | None] = {}  # span id -> the nearest checkpoint namespace at or above it
    run_at: dict[str, _Run | None] = {}
    for span in spans:
        chain, on_chain = [], set()
        cur: SpanRecord | None = span
        while cur is not None and cur.span_id not in ns_at and cur.span_id not in on_chain:  # a cycle ends it
            chain.append(cur)
            on_chain.add(cur.span_id)
            cur = by_id.get(cur.parent_id or "")
        for here_span in reversed(chain):
            here = seen[here_span.span_id]
            parent_ns = ns_at.get(here_span.parent_id or "")
            parent_run = run_at.get(here_span.parent_id or "")
            run = None
            # a new namespace segment named after the node; the same namespace is inside a node run
            if here.ns is not None and here.node is not None and here.kind == "chain" and here.ns != parent_ns \
                    and here.ns.rsplit("|", 1)[-1].startswith(here.node + ":"):
                run = runs[here_span.span_id] = _Run(here_span, here, parent_run, here.ns.count("|") + 1)
            ns_at[here_span.span_id] = here.ns if here.ns is not None else parent_ns
            run_at[here_span.span_id] = run or parent_run
    ordered = dict(sorted(runs.items(), key=lambda item: (item[1].span.start_ns, item[0])))
    for run in ordered.values():
        if run.parent is not None:
            run.parent.children.append(run)
    return ordered, run_at


def _classify(runs: dict[str, _Run], calls_model: set[str]) -> None:
    """Which node runs are agents, their roles, and the ``Send`` branches' indexes."""
    graphs: dict[str | None, list[_Run]] = defaultdict(list)
    for run in runs.values():
        graphs[run.parent.span.span_id if run.parent else None].append(run)
    loop_steps = {id(r) for members in graphs.values() if {r.seen.node for r in members} <= _LOOP_STEPS for r in members}
    for run in sorted(runs.values(), key=lambda r: -r.depth):  # inner first: a team is known by its agents
        if id(run) in loop_steps or (run.seen.node or "").startswith("__"):
            continue
        has_agents = any(child.agent for child in run.children)
        run.agent = bool(run.children) or run.span.span_id in calls_model  # runs a graph, or calls a model
        pushed = bool(run.seen.path) and run.seen.path[0] == _PUSH
        run.role = "team" if has_agents else "worker" if pushed else "agent"
    for members in graphs.values():
        batches: dict[tuple[Any, Any], list[_Run]] = defaultdict(list)
        for run in members:
            if run.agent and run.seen.path and run.seen.path[0] == _PUSH and len(run.seen.path) > 1:
                batches[(run.seen.node, run.seen.step)].append(run)
        for batch in batches.values():
            for run in batch:
                index = run.seen.path[1]  # OpenLLMetry writes it as text
                if isinstance(index, str) and index.isdigit():
                    index = int(index)
                if isinstance(index, int) and not isinstance(index, bool):
                    run.fanout = (index, len(batch))


def _calls_model(spans: list[SpanRecord], seen: Mapping[str, Seen], run_at: Mapping[str, _Run | None]) -> set[str]:
    """Node runs (span ids) that call a model themselves: the nearest run above each model span."""
    found = set()
    for span in spans:
        if seen[span.span_id].kind == "llm" and (run := run_at.get(span.parent_id or "")) is not None:
            found.add(run.span.span_id)
    return found


def _owners(spans: list[SpanRecord], by_id: Mapping[str, SpanRecord], runs: dict[str, _Run]) -> dict[str, _Run | None]:
    owner: dict[str, _Run | None] = {}

    def find(span: SpanRecord) -> _Run | None:
        chain = []
        found: _Run | None = None
        cur: SpanRecord | None = span
        while cur is not None:
            if cur.span_id in owner:
                found = owner[cur.span_id]
                break
            run = runs.get(cur.span_id)
            if run is not None and run.agent:
                found = run
                chain.append(cur.span_id)
                break
            chain.append(cur.span_id)
            cur = by_id.get(cur.parent_id or "")
        for span_id in chain:
            owner[span_id] = found
        return found

    for span in spans:
        find(span)
    return owner


def _models_and_tools(spans: list[SpanRecord], seen: Mapping[str, Seen], owner: Mapping[str, _Run | None],
                      out: dict[str, SpanRecord], policy: ContentPolicy | None) -> None:
    asked: dict[int, dict[str, deque[str]]] = defaultdict(lambda: defaultdict(deque))  # agent -> tool -> ids
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        here = seen[span.span_id]
        agent_key = id(owner.get(span.span_id))
        if here.kind == "llm":
            out[span.span_id] = native(span, model_attrs(here, policy))
            for name, asked_id in here.asked:
                asked[agent_key][name].append(asked_id)
        elif here.kind == "tool":
            tool = here.tool or span.name
            attrs: dict[str, Any] = {Attr.OPERATION: Operation.EXECUTE_TOOL.value, Attr.TOOL_NAME: tool}
            queue = asked[agent_key].get(tool)
            first = queue.popleft() if queue else None  # the model's calls run in order, so ids pair by name
            call_id = here.call_id or first
            if call_id:
                attrs[Attr.TOOL_CALL_ID] = call_id
            put_content(attrs, Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS, here.input, policy)
            put_content(attrs, Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT, here.output, policy)
            out[span.span_id] = native(span, attrs)


def model_attrs(seen: Seen, policy: ContentPolicy | None) -> dict[str, Any]:
    """A model call's span attributes, as orch-otel writes them, from what a peer's span says."""
    attrs: dict[str, Any] = {Attr.OPERATION: Operation.CHAT.value}
    for key, value in ((Attr.REQUEST_MODEL, seen.model), (Attr.PROVIDER, seen.provider),
                       (Attr.INPUT_TOKENS, seen.input_tokens), (Attr.OUTPUT_TOKENS, seen.output_tokens)):
        if value is not None:
            attrs[key] = value
    put_content(attrs, Attr.INPUT_REF, Attr.INPUT_MESSAGES, seen.input, policy)
    put_content(attrs, Attr.OUTPUT_REF, Attr.OUTPUT_MESSAGES, seen.output, policy)
    return attrs


def _handoffs(spans: list[SpanRecord], seen: Mapping[str, Seen], owner: Mapping[str, _Run | None],
              runs: dict[str, _Run], out: dict[str, SpanRecord], extra: dict[str, list]) -> None:
    by_id = {s.span_id: s for s in spans}
    gotos: dict[str, str] = {}  # tool span id -> recorded destination
    for span in spans:
        goto = seen[span.span_id].goto
        parent = by_id.get(span.parent_id or "")
        if goto and parent is not None and seen[parent.span_id].kind == "tool":
            gotos[parent.span_id] = goto
    offered: dict[int, list[str]] = {}
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        here = seen[span.span_id]
        agent = owner.get(span.span_id)
        if agent is None:
            continue
        if here.kind == "llm" and here.offered:
            offered[id(agent)] = here.offered
        if here.kind != "tool" or not (here.tool or span.name).startswith(_HANDOFF_PREFIX):
            continue
        siblings = [r for r in runs.values() if r.agent and r.parent is agent.parent and r.span.start_ns >= span.end_ns]
        names = {r.seen.node for r in runs.values() if r.parent is agent.parent and r.seen.node}
        recorded = gotos.get(span.span_id)
        target = recorded or _handoff_target(here.tool or span.name, names)
        following = min(siblings, key=lambda r: r.span.start_ns, default=None)
        if target is None or following is None or following.seen.node != target:
            continue  # no agent by that name ran next: not a handoff the log shows
        options = _options(offered.get(id(agent), []), names)
        extra[span.span_id] += [
            decision(span.end_ns, DecisionKind.DELEGATE, [target], options=options, implied=recorded is None),
            message(span.end_ns, agent.seen.node or agent.span.name, [target], "handoff", implied=True),
        ]
        mapped = out.get(agent.span.span_id)
        if mapped is not None:
            out[agent.span.span_id] = native(mapped, {**mapped.attributes, Attr.OUTCOME: "handoff"})


def _handoff_target(tool: str, names: set[str]) -> str | None:
    wanted = tool.removeprefix(_HANDOFF_PREFIX).lower()
    matches = [n for n in names if n.lower() == wanted]
    return matches[0] if len(matches) == 1 else None


def _options(offered: list[str], names: set[str]) -> list[str] | None:
    """The agents an agent's handoff tools name; unknown (None) if one names no node."""
    tools = [t for t in offered if t.startswith(_HANDOFF_PREFIX)]
    targets = [_handoff_target(t, names) for t in tools]
    if not tools or any(t is None for t in targets):
        return None
    return [t for t in targets if t is not None]


def _fan_ins(runs: dict[str, _Run], extra: dict[str, list]) -> None:
    graphs: dict[int, list[_Run]] = defaultdict(list)
    for run in runs.values():
        graphs[id(run.parent)].append(run)
    for members in graphs.values():
        branches: dict[Any, list[_Run]] = defaultdict(list)
        for run in members:
            if run.fanout is not None:
                branches[run.seen.step].append(run)
        for step, batch in branches.items():
            if len(batch) < 2 or not isinstance(step, int):
                continue
            names = {r.seen.node for r in batch}
            for run in members:
                edge = any(t == f"branch:to:{run.seen.node}" for t in run.seen.triggers)
                if run.seen.step == step + 1 and edge and run.seen.node not in names:
                    extra[run.span.span_id].append(
                        aggregate(run.span.start_ns, [r.seen.node or "" for r in batch], implied=True))


def _stops(spans: list[SpanRecord], root: SpanRecord, extra: dict[str, list]) -> None:
    """LangGraph's recursion limit (an error on the run) and its interrupts (a
    pause, raised through the node that asked) are in the log as exceptions."""
    for event in root.events:
        if event.name == "exception" and str(event.attributes.get(Attr.EXCEPTION_TYPE, "")).endswith(_RECURSION):
            extra[root.span_id].append(decision(event.time_ns, DecisionKind.STOP, reason=StopReason.RECURSION_LIMIT.value,
                                                forced=True))
            return
    paused = [e.time_ns for s in spans for e in s.events
              if e.name == "exception" and str(e.attributes.get(Attr.EXCEPTION_TYPE, "")).endswith(_INTERRUPT)]
    if paused:
        extra[root.span_id].append(decision(max(paused), DecisionKind.STOP, reason=StopReason.INTERRUPT.value,
                                            forced=True))
