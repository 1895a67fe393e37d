"""Instances: each agent invocation (and workflow run) gets an id ``name#k``,
k = 1, 2, ... per name in order of start, so that parallel or repeated
invocations of one agent stay apart. Rules in docs/trace-format.md#instances."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from ._values import _CH_AGENT, _E_AGGREGATE, _E_MESSAGE, _E_RETURN, _E_SPAWN, Scope, _Ev


def _start_order(scope: Scope) -> tuple[int, str]:
    return scope.start_ns, scope.span_id


def number_instances(scopes: Mapping[str, Scope]) -> tuple[dict[str, str], dict[str, list[Scope]]]:
    """Scope span id -> its instance id, and each scope's sub-scopes in order of start."""
    counts: Counter[str] = Counter()
    instance_of: dict[str, str] = {}
    children: dict[str, list[Scope]] = defaultdict(list)
    for scope in sorted(scopes.values(), key=_start_order):
        counts[scope.name] += 1
        instance_of[scope.span_id] = f"{scope.name}#{counts[scope.name]}"
        if scope.parent is not None:
            children[scope.parent].append(scope)
    return instance_of, children


def assign_instances(ordered: list[_Ev], scopes: Mapping[str, Scope], instance_of: Mapping[str, str],
                     children: Mapping[str, list[Scope]]) -> None:
    """Write ``instance``, ``to_instance`` and ``source_instances`` into the events."""
    aggregated: dict[str, set[str]] = defaultdict(set)  # aggregator scope -> children already aggregated
    for ev in ordered:
        data = ev.data
        scope = data.get("agent_span_id")
        if scope is None:
            continue
        kind = data["type"]
        if kind == _E_MESSAGE and data["agent"] != scopes[scope].name and data.get("channel") == _CH_AGENT:
            # a message relayed on another span (AutoGen's team span relays what a member said):
            # it is the work of the sender's invocation inside that scope
            own = _sender_scope(children.get(scope, ()), data["agent"], ev.t_ns)
            if own is not None:
                scope = data["agent_span_id"] = own
        data["instance"] = instance_of[scope]
        if kind == _E_SPAWN:
            data["to_instance"] = instance_of[data["span_id"]]
        elif kind == _E_RETURN:
            parent = scopes[scope].parent
            if parent is not None:
                data["to_instance"] = instance_of[parent]
        elif kind == _E_AGGREGATE and data.get("sources"):
            sources = _source_scopes(data["sources"], children.get(scope, ()), aggregated[scope], ev.t_ns)
            if sources is not None:
                data["source_instances"] = [instance_of[s] for s in sources]
                aggregated[scope].update(sources)


def _sender_scope(kids: Any, sender: str, t_ns: int) -> str | None:
    """The sender's invocation among ``kids``: the one running at ``t_ns``,
    else the latest one that ended by then; None when that is not clear."""
    running = [k for k in kids if k.name == sender and k.start_ns <= t_ns <= k.end_ns]
    if running:
        return running[0].span_id if len(running) == 1 else None
    ended = [k for k in kids if k.name == sender and k.end_ns <= t_ns]
    return max(ended, key=lambda k: (k.end_ns, k.start_ns)).span_id if ended else None


def _source_scopes(sources: list[str], kids: Any, done: set[str], t_ns: int) -> list[str] | None:
    """The child invocations an aggregation combines, one per named source, or
    None when they are not certain: for each name, the children of that name
    that returned since the aggregator's previous aggregation, when there are
    exactly as many as the name is listed (else all that returned, when those
    are exactly as many)."""
    returned: dict[str, list[str]] = defaultdict(list)
    fresh: dict[str, list[str]] = defaultdict(list)
    for kid in kids:
        if kid.end_ns <= t_ns:
            returned[kid.name].append(kid.span_id)
            if kid.span_id not in done:
                fresh[kid.name].append(kid.span_id)
    wanted = Counter(sources)
    picked: dict[str, list[str]] = {}
    for name, n in wanted.items():
        if len(fresh[name]) == n:
            picked[name] = fresh[name]
        elif len(returned[name]) == n:
            picked[name] = returned[name]
        else:
            return None
    return [picked[name].pop(0) for name in sources]
