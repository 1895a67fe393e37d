"""Metrics computed from a trace (formulas in docs/datasets.md#metrics).

A **step** is an act of an agent: an LLM call or agent message it sends
(``message``), a ``tool_call``, an ``orchestrator_decision`` or an
``aggregate``. Spawns, returns, tool results, human input and safety events
are consequences of steps, not steps.

An **invocation** is a spawned sub-agent run: from its ``spawn`` event to the
``return`` event with the same ``span_id`` (or the end of the trace). A step
belongs to the innermost invocation of its agent that is open at the step's
time; steps outside every invocation belong to the main agent(s).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..vocabulary import FORCED_STOP_REASONS, Channel, DecisionKind, EventKind, Status

STEP_TYPES = frozenset({
    EventKind.MESSAGE.value,
    EventKind.TOOL_CALL.value,
    EventKind.ORCHESTRATOR_DECISION.value,
    EventKind.AGGREGATE.value,
})
_COORDINATION = frozenset({EventKind.ORCHESTRATOR_DECISION.value, EventKind.AGGREGATE.value})


# Every metric compute_metrics or prepare can give a trace (some only when they apply: tool_success_rate
# with tool calls, cost_usd with prices, task_success with a success reward). A --reward term may name any.
METRIC_NAMES = (
    "total_steps", "critical_steps", "parallelism_speedup", "parallelism_efficiency", "protocol_overhead",
    "tool_success_rate", "error_amplification", "cost_tokens", "cost_input_tokens", "cost_output_tokens",
    "cost_llm_calls", "cost_tool_calls", "cost_wall_clock_s", "cost_usd", "stop_voluntary", "task_success",
    "stop_efficiency",
)


def is_step(event: dict[str, Any]) -> bool:
    return event.get("type") in STEP_TYPES


@dataclass
class _Invocation:
    agent: str
    start: float
    end: float
    parent_agent: str | None
    span_id: str | None = None  # the agent's span (the spawn event's span)
    parent_span_id: str | None = None  # the spawning agent's span (the spawn event's agent_span_id)
    steps: int = 0
    children: list[_Invocation] = field(default_factory=list)


def _invocations(events: list[dict[str, Any]]) -> list[_Invocation]:
    t_end = max((e["t"] for e in events), default=0.0)
    returns = {e.get("span_id"): e["t"] for e in events if e["type"] == EventKind.RETURN.value}
    out = []
    for e in events:
        if e["type"] == EventKind.SPAWN.value and e.get("to"):
            span_id = e.get("span_id")
            out.append(_Invocation(str(e["to"]), e["t"], returns.get(span_id, t_end), e["agent"],
                                   span_id, e.get("agent_span_id")))
    out.sort(key=lambda inv: inv.start)
    return out


def _innermost(candidates: list[_Invocation], t: float) -> _Invocation | None:
    """For traces without ``agent_span_id``: the open invocation with the
    fewest steps so far (same-named parallel runs cannot be told apart by
    name: their steps are shared out evenly), the one started last among equals."""
    best: _Invocation | None = None
    for inv in candidates:
        if inv.start <= t <= inv.end:
            if best is None or (inv.steps, -inv.start) < (best.steps, -best.start):
                best = inv
    return best


def _stages(children: list[_Invocation]) -> list[list[_Invocation]]:
    """Children whose [start, end] intervals overlap (transitively) run in parallel: one stage."""
    stages: list[list[_Invocation]] = []
    stage_end = float("-inf")
    for child in sorted(children, key=lambda c: (c.start, c.end)):
        if stages and child.start < stage_end:
            stages[-1].append(child)
            stage_end = max(stage_end, child.end)
        else:
            stages.append([child])
            stage_end = child.end
    return stages


@dataclass
class StepCounts:
    """Steps per agent and the critical-path structure of one trace."""

    by_agent: dict[str, int]
    total: int
    critical: int
    max_stage_width: int


def count_steps(events: list[dict[str, Any]]) -> StepCounts:
    invocations = _invocations(events)
    by_name: dict[str, list[_Invocation]] = defaultdict(list)
    by_span: dict[str, _Invocation] = {}
    for inv in invocations:
        by_name[inv.agent].append(inv)
        if inv.span_id:
            by_span[inv.span_id] = inv
    root_steps = 0
    by_agent: dict[str, int] = defaultdict(int)
    for e in events:
        if not is_step(e):
            continue
        by_agent[e["agent"]] += 1
        scope = e.get("agent_span_id")
        owner = by_span.get(scope) if scope else _innermost(by_name.get(e["agent"], []), e["t"])
        if owner is None:
            root_steps += 1
        else:
            owner.steps += 1
    roots: list[_Invocation] = []
    for inv in invocations:
        if inv.parent_span_id:
            parent = by_span.get(inv.parent_span_id)
        else:
            parent = _innermost([p for p in by_name.get(inv.parent_agent or "", []) if p is not inv], inv.start)
        (parent.children if parent is not None else roots).append(inv)
    critical: dict[int, int] = {}
    width = 1 if invocations else 0
    for inv in reversed(invocations):  # children start after their parents: computed first
        total = inv.steps
        for stage in _stages(inv.children):
            width = max(width, len(stage))
            total += max(critical[id(c)] for c in stage)
        critical[id(inv)] = total
    critical_total = root_steps
    for stage in _stages(roots):
        width = max(width, len(stage))
        critical_total += max(critical[id(c)] for c in stage)
    return StepCounts(dict(by_agent), sum(by_agent.values()), critical_total, width)


def final_stop(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    stops = [e for e in events if e.get("decision") == DecisionKind.STOP.value]
    return stops[-1] if stops else None


def compute_metrics(trace: dict[str, Any], steps: StepCounts | None = None,
                    prices: dict[str, tuple[float, float]] | None = None) -> dict[str, float]:
    """The computed metrics of one trace (docs/datasets.md#metrics)."""
    events = trace["events"]
    steps = steps or count_steps(events)
    costs = trace.get("costs") or {}
    m: dict[str, float] = {
        "total_steps": steps.total,
        "critical_steps": steps.critical,
    }
    if steps.critical:
        speedup = steps.total / steps.critical
        m["parallelism_speedup"] = round(speedup, 6)
        m["parallelism_efficiency"] = round(speedup / max(steps.max_stage_width, 1), 6)
    llm = tools = coordination = agent_messages = 0
    tool_ok = tool_results = errors = origin_errors = 0
    in_tokens = out_tokens = 0
    cost_usd, unpriced = 0.0, False  # a call of a model without a price makes the cost unknown, not 0
    for e in events:
        kind = e["type"]
        if kind == EventKind.MESSAGE.value:
            if e.get("channel") == Channel.LLM.value:
                llm += 1
                i, o = int(e.get("input_tokens") or 0), int(e.get("output_tokens") or 0)
                in_tokens, out_tokens = in_tokens + i, out_tokens + o
                if prices and e.get("model") in prices:
                    p_in, p_out = prices[e["model"]]
                    cost_usd += (i * p_in + o * p_out) / 1e6
                elif i or o:
                    unpriced = True
            else:
                agent_messages += 1
        elif kind == EventKind.TOOL_CALL.value:
            tools += 1
        elif kind == EventKind.TOOL_RESULT.value:
            tool_results += 1
            tool_ok += e.get("status") == Status.OK.value
        if kind in _COORDINATION and not e.get("implied"):
            coordination += 1
        if e.get("status") == Status.ERROR.value:
            errors += 1
            if kind in (EventKind.TOOL_RESULT.value, EventKind.MESSAGE.value, EventKind.SAFETY_EVENT.value):
                origin_errors += 1
    coordination += agent_messages
    if coordination + llm + tools:
        m["protocol_overhead"] = round(coordination / (coordination + llm + tools), 6)
    if tool_results:
        m["tool_success_rate"] = round(tool_ok / tool_results, 6)
    if origin_errors:
        m["error_amplification"] = round(errors / origin_errors, 6)
    m["cost_tokens"] = float(costs.get("tokens", in_tokens + out_tokens))
    m["cost_input_tokens"] = in_tokens
    m["cost_output_tokens"] = out_tokens
    m["cost_llm_calls"] = llm
    m["cost_tool_calls"] = tools
    m["cost_wall_clock_s"] = float(costs.get("wall_clock_s", 0.0))
    if prices and not unpriced:
        m["cost_usd"] = round(cost_usd, 8)
    stop = final_stop(events)
    m["stop_voluntary"] = 0.0 if stop is None or stop.get("forced") or stop.get("reason") in FORCED_STOP_REASONS else 1.0
    return m


def stop_efficiency(metrics: dict[str, float], success: float | None) -> float:
    """1 when the run stopped by its own decision and succeeded; 0 when a
    budget, failure or kill stopped it, or it stopped but failed (too early).
    Without a known outcome it is the voluntary-stop indicator alone."""
    voluntary = metrics.get("stop_voluntary", 0.0)
    return voluntary if success is None else voluntary * (1.0 if success > 0 else 0.0)
