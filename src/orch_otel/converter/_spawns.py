"""Spawn events paired with the decisions that cover them (rules in
docs/trace-format.md#events, "Implied decisions")."""

from __future__ import annotations

from collections import defaultdict

from ._builder import _Builder
from ._values import _D_DELEGATE, _D_SPAWN, _E_ORCHESTRATOR_DECISION, _E_SPAWN, _S_OK, _Ev


def cover_spawns(b: _Builder) -> list[_Ev]:
    """Pair each spawn event with the decision that covers it (the parent's
    spawn decision, or any earlier delegation or spawn decision naming the
    spawned agent: in graph frameworks an agent decides and the runtime spawns), adding an implied spawn decision
    where none was recorded. Spawns that start while an implied group's
    first child still runs join that group: one decision per fan-out.
    Returns every event in time order."""
    ordered = sorted(b.events)
    implied = False
    # (decision, targets it has not covered yet)
    spawns_by: dict[str, list[tuple[_Ev, list[str]]]] = defaultdict(list)  # decider -> spawn decisions
    delegations: list[tuple[_Ev, list[str]]] = []  # whoever delegated: the runtime may do the spawning
    spawns: list[tuple[_Ev, list[str]]] = []  # every spawn decision, whoever made it
    for ev in ordered:
        data = ev.data
        if data["type"] != _E_ORCHESTRATOR_DECISION:
            continue
        if data.get("decision") == _D_SPAWN:
            entry = (ev, list(data.get("targets", ())))
            spawns_by[data["agent"]].append(entry)
            spawns.append(entry)
        elif data.get("decision") == _D_DELEGATE:
            delegations.append((ev, list(data.get("targets", ()))))
    groups: dict[str, tuple[_Ev, int]] = {}  # parent -> (implied decision, earliest child end)
    for ev in ordered:
        data = ev.data
        if data["type"] != _E_SPAWN:
            continue
        parent, target = data["agent"], data["to"]
        match = None
        for decision, left in [*spawns_by.get(parent, ()), *delegations, *spawns]:
            if decision.t_ns <= ev.t_ns and target in left:
                left.remove(target)
                match = decision
                break
        if match is None:
            child_end = b.by_id[data["span_id"]].end_ns
            group = groups.get(parent)
            if group is not None and ev.t_ns < group[1]:  # started while the group runs: same fan-out
                match = group[0]
                groups[parent] = (match, min(group[1], child_end))
            else:
                decision_data = {
                    "id": None,
                    "t": None,
                    "type": _E_ORCHESTRATOR_DECISION,
                    "agent": parent,
                    "decision": _D_SPAWN,
                    "targets": [],
                    "implied": True,
                    "span_id": ev.scope or data["span_id"],  # the parent's span
                    "status": _S_OK,
                }
                if ev.scope is not None:
                    decision_data["agent_span_id"] = ev.scope
                match = _Ev(ev.t_ns, ev.seq - 0.5, decision_data, ev.scope)  # sorts just before the spawn
                b.events.append(match)
                implied = True
                groups[parent] = (match, child_end)
            match.data["targets"].append(target)
            match.data["to"] = ",".join(match.data["targets"])
        if match.data["decision"] == _D_SPAWN:  # a delegation has its causal edge
            b.spawn_links.append((match, ev))
    return sorted(b.events) if implied else ordered
