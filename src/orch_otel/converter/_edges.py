"""Edges, costs and metrics of a converted trace (rules in
docs/trace-format.md#edges and #metrics)."""

from __future__ import annotations

import bisect
from collections import defaultdict
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from ..vocabulary import Attr, EdgeKind
from ._values import (
    _CH_AGENT,
    _CH_LLM,
    _D_DELEGATE,
    _D_SPAWN,
    _E_AGGREGATE,
    _E_HUMAN_INTERVENTION,
    _E_MESSAGE,
    _E_ORCHESTRATOR_DECISION,
    _E_RETURN,
    _E_SPAWN,
    _E_TOOL_CALL,
    _E_TOOL_RESULT,
    _S_ERROR,
    _S_OK,
    _count,
    _Ev,
    _seconds,
)

_EDGE_AGGREGATE = EdgeKind.AGGREGATE.value
_EDGE_CAUSAL = EdgeKind.CAUSAL.value
_EDGE_MESSAGE = EdgeKind.MESSAGE.value
_EDGE_RETURN = EdgeKind.RETURN.value
_EDGE_SPAWN = EdgeKind.SPAWN.value
_EDGE_TEMPORAL = EdgeKind.TEMPORAL.value
_EDGE_TOOL_DEPENDENCY = EdgeKind.TOOL_DEPENDENCY.value

if TYPE_CHECKING:
    from ._builder import _Builder


def costs_and_metrics(b: _Builder, events: list[dict[str, Any]], wall_ns: int) -> tuple[dict, dict]:
    """Trace costs and metrics in one pass; formulas in docs/trace-format.md#metrics."""
    tokens = tool_calls = messages = llm_calls = errors = results = ok_results = max_fanout = unknown = 0
    for e in events:
        kind = e["type"]
        if e["status"] == _S_ERROR:
            errors += 1
        if kind == _E_MESSAGE:
            if e.get("channel") == _CH_LLM:
                llm_calls += 1
                tokens += _count(e.get("input_tokens")) + _count(e.get("output_tokens"))
                unknown += e.get("input_tokens") is None or e.get("output_tokens") is None
            else:
                messages += 1
        elif kind == _E_TOOL_CALL:
            tool_calls += 1
        elif kind == _E_TOOL_RESULT:
            results += 1
            ok_results += e["status"] == _S_OK
        elif e.get("decision") == _D_SPAWN:
            max_fanout = max(max_fanout, len(e.get("targets", ())))
    costs = {"tokens": tokens, "wall_clock_s": _seconds(wall_ns), "tool_calls": tool_calls, "messages": messages}
    if unknown:  # calls whose token counts were not reported: ``tokens`` is a lower bound
        costs["tokens_unknown_calls"] = unknown
    metrics: dict[str, float] = {
        "agents": len({str(s.attributes.get(Attr.AGENT_NAME)) for s, _ in b.agent_spans}
                      | {s.name for s in b.scopes.values() if s.workflow and s.span_id in b.llm_scopes}),
        "max_depth": b.max_depth,
        "max_fanout": max_fanout,
        "llm_calls": llm_calls,
        "error_events": errors,
    }
    if results:
        metrics["tool_success_rate"] = round(ok_results / results, 6)
    return costs, metrics


def edges(ordered: list[_Ev], b: _Builder) -> list[dict[str, str]]:
    """Edges derived from span structure and causality. An actor's timeline is
    per instance: parallel invocations of one agent are separate timelines."""
    found: dict[tuple[str, str, str], None] = {}

    def add(src: _Ev | None, dst: _Ev | None, kind: str) -> None:
        if src is not None and dst is not None and src is not dst:
            found[(src.data["id"], dst.data["id"], kind)] = None

    by_actor: dict[tuple[str, str | None], list[int]] = defaultdict(list)  # (agent, instance) -> positions
    involving: dict[str, list[int]] = defaultdict(list)
    for i, ev in enumerate(ordered):
        agent = ev.data["agent"]
        by_actor[(agent, ev.data.get("instance"))].append(i)
        involving[agent].append(i)
        if ev.data["type"] == _E_SPAWN:
            involving[ev.data["to"]].append(i)

    def next_of(index: dict[Any, list[int]], who: Any, after: int) -> _Ev | None:
        positions = index.get(who, ())
        k = bisect.bisect_right(positions, after)
        return ordered[positions[k]] if k < len(positions) else None

    ids = [ev.data["id"] for ev in ordered]
    for positions in by_actor.values():
        for a, c in pairwise(positions):
            found[(ids[a], ids[c], _EDGE_TEMPORAL)] = None
    for decision, spawn in b.spawn_links:
        add(decision, spawn, _EDGE_SPAWN)
    first_in_scope: dict[str, _Ev] = {}
    for ev in ordered:
        if ev.scope is not None:
            first_in_scope.setdefault(ev.scope, ev)
    for scope, spawn in b.spawn_of_scope.items():
        add(spawn, first_in_scope.get(scope), _EDGE_SPAWN)

    tool_calls: dict[str, _Ev] = {}
    last_return: dict[tuple[Any, str], _Ev] = {}  # (parent instance, child name) -> latest return
    return_of: dict[str, _Ev] = {}  # child instance -> its return
    pending_returns: dict[Any, list[_Ev]] = defaultdict(list)  # parent instance -> returns not aggregated yet
    for i, ev in enumerate(ordered):
        data = ev.data
        kind = data["type"]
        if kind == _E_TOOL_CALL:
            tool_calls[data["span_id"]] = ev
        elif kind == _E_TOOL_RESULT:
            add(tool_calls.get(data["span_id"]), ev, _EDGE_TOOL_DEPENDENCY)
        elif kind == _E_RETURN:
            parent = (data["to"], data.get("to_instance"))
            add(ev, next_of(by_actor, parent, i), _EDGE_RETURN)
            last_return[(parent, data["agent"])] = ev
            pending_returns[parent].append(ev)
            if "instance" in data:
                return_of[data["instance"]] = ev
        elif kind == _E_AGGREGATE:
            me = (data["agent"], data.get("instance"))
            pending = pending_returns.pop(me, [])
            instances = data.get("source_instances")
            if instances is not None:  # the aggregated invocations are known: their returns
                for instance in instances:
                    add(return_of.get(instance), ev, _EDGE_AGGREGATE)
                continue
            # else every return since this agent's last aggregation (from the named sources, if any)
            sources = data.get("sources")
            for src in pending:
                if sources is None or src.data["agent"] in sources:
                    add(src, ev, _EDGE_AGGREGATE)
            for source in sources or ():
                if not any(src.data["agent"] == source for src in pending):  # returned before the last aggregation
                    add(last_return.get((me, source)), ev, _EDGE_AGGREGATE)
        elif kind == _E_MESSAGE and data.get("channel") == _CH_AGENT:
            for recipient in data.get("recipients", ()):
                add(ev, next_of(involving, recipient, i), _EDGE_MESSAGE)
        elif kind == _E_ORCHESTRATOR_DECISION and data.get("decision") == _D_DELEGATE:
            for target in data.get("targets", ()):
                add(ev, next_of(involving, target, i), _EDGE_CAUSAL)
        elif kind == _E_HUMAN_INTERVENTION:
            if "recipients" in data:
                for recipient in data["recipients"]:
                    add(ev, next_of(involving, recipient, i), _EDGE_CAUSAL)
            else:
                add(ev, next_of(by_actor, (data["to"], data.get("instance")), i), _EDGE_CAUSAL)
    return [{"src": s, "dst": d, "type": k} for s, d, k in found]
