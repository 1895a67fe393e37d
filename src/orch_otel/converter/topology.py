"""The topology of a run, inferred from its structure when the app did not
state one (an explicit ``orch.topology`` of the schema wins). Rules, first match
wins (docs/trace-format.md#topology):

1. ``hierarchical``: a sub-agent manages sub-agents of its own (a manager
   under a manager; a root workflow that only wraps one sub-agent, calling no
   model and delegating nothing, does not count as a level).
2. ``mixed``: two or more of rules 3-5 hold.
3. ``planner_executor_critic``: a planner, an executor and a critic (by role,
   else by name), first invoked in that order.
4. ``debate``: two agents message each other both ways, three messages or more.
5. ``swarm``: peer handoffs (a delegation by an agent to one that is not its
   own sub-agent) that are not a hub's: two agents hand off, or one hands off
   and is never invoked again. A route a graph's routing function took is the
   graph's own delegation, not a peer handoff.
6. ``centralized``: one coordinator runs two or more sub-agent invocations,
   or delegates to a sub-agent of its own, or one agent hands work off and is
   invoked again after each handoff.
7. ``harness``: a single agent (one name) in a loop with tools.
8. ``unknown``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from ..vocabulary import Topology
from ._values import _CH_AGENT, _CH_LLM, _D_DELEGATE, _E_MESSAGE, _E_TOOL_CALL, Scope

_HANDOFF_TYPES = frozenset({"handoff", "HandoffMessage"})
_PLANNER = ("plan",)
_EXECUTOR = ("execut", "worker", "coder", "solver", "implement", "actor", "doer")
_CRITIC = ("critic", "critique", "review", "verif", "judge", "evaluat", "checker")


def infer_topology(scopes: Mapping[str, Scope], instance_of: Mapping[str, str],
                   sub_scopes: Mapping[str, list[Scope]], events: list[dict[str, Any]]) -> str:
    """One of the seed schema's topology values for a converted run;
    ``sub_scopes``: each scope's sub-agents in order of start."""
    children: dict[str | None, list[Scope]] = {parent: subs for parent, subs in sub_scopes.items()}
    children[None] = sorted((s for s in scopes.values() if s.parent is None), key=lambda s: (s.start_ns, s.span_id))
    ignored = _wrapper(children, instance_of, events)
    agents = [s for s in scopes.values() if not s.workflow]
    if _hierarchical(scopes, children, ignored):
        return Topology.HIERARCHICAL.value
    by_instance = {instance: scopes[span_id] for span_id, instance in instance_of.items()}
    delegations = _delegations(events, by_instance, children, scopes)
    peer = [(scope, target) for scope, target, own in delegations if not own and not scope.workflow]
    patterns = [name for name, holds in (
        (Topology.PLANNER_EXECUTOR_CRITIC.value, _planner_executor_critic(agents)),
        (Topology.DEBATE.value, _debate(events, {s.name for s in agents})),
        (Topology.SWARM.value, _swarm(peer, scopes)),
    ) if holds]
    if len(patterns) > 1:
        return Topology.MIXED.value
    if patterns:
        return patterns[0]
    if (peer  # not a swarm (rule 5): one hub that gets control back after each handoff
            or any(len(kids) >= 2 for parent, kids in children.items() if parent is not None)
            or any(own and scope.span_id != ignored for scope, _, own in delegations)):
        return Topology.CENTRALIZED.value
    workers = agents or list(scopes.values())
    if len({s.name for s in workers}) == 1 and any(
            e["type"] == _E_TOOL_CALL and e["agent"] == workers[0].name for e in events):
        return Topology.HARNESS.value
    return Topology.UNKNOWN.value


def _wrapper(children: Mapping[str | None, list[Scope]], instance_of: Mapping[str, str],
             events: list[dict[str, Any]]) -> str | None:
    """The root workflow when it only wraps one sub-agent: it neither calls a
    model nor delegates (a graph whose one node is an agent), so it adds no level."""
    roots = children.get(None, [])
    if len(roots) != 1 or not roots[0].workflow or len(children.get(roots[0].span_id, ())) != 1:
        return None
    me = instance_of[roots[0].span_id]
    for e in events:
        if e.get("instance") == me and (e.get("channel") == _CH_LLM or e.get("decision") == _D_DELEGATE):
            return None
    return roots[0].span_id


def _hierarchical(scopes: Mapping[str, Scope], children: Mapping[str | None, list[Scope]],
                  ignored: str | None) -> bool:
    for span_id, scope in scopes.items():
        if span_id != ignored and children.get(span_id) and scope.parent is not None and scope.parent != ignored:
            return True  # a manager whose own manager counts as a level
    return False


def _delegations(events: list[dict[str, Any]], by_instance: Mapping[str, Scope],
                 children: Mapping[str | None, list[Scope]], scopes: Mapping[str, Scope]) -> list[tuple[Scope, str, bool]]:
    """(delegating instance, target, whether the target is a sub-agent of its own) per delegation target.
    A route taken by a graph's routing function (``router``) is the enclosing graph's routing between
    its own sub-agents, credited to the agent whose answer it follows: not a peer handoff."""
    own_names: dict[str, set[str]] = {}
    out: list[tuple[Scope, str, bool]] = []
    for e in events:
        if e.get("decision") != _D_DELEGATE or e["type"] == _E_MESSAGE:
            continue
        scope = by_instance.get(e.get("instance", ""))
        if scope is None:
            continue
        if e.get("router") is not None and scope.parent in scopes:
            scope = scopes[scope.parent]  # type: ignore[index]
        own = own_names.get(scope.span_id)
        if own is None:
            own = own_names[scope.span_id] = {kid.name for kid in children.get(scope.span_id, ())}
        out.extend((scope, target, target in own) for target in e.get("targets", ()))
    return out


def _swarm(peer: list[tuple[Scope, str]], scopes: Mapping[str, Scope]) -> bool:
    """Peer handoffs by two agents, or by one that is not invoked again after handing off."""
    if not peer:
        return False
    if len({scope.name for scope, _ in peer}) > 1:
        return True
    last_start: dict[str, int] = {}
    for s in scopes.values():
        last_start[s.name] = max(last_start.get(s.name, s.start_ns), s.start_ns)
    return any(last_start[scope.name] <= scope.end_ns for scope, _ in peer)


def _kind(scope: Scope) -> str | None:
    label = (scope.role or scope.name).lower()
    for kind, words in (("planner", _PLANNER), ("critic", _CRITIC), ("executor", _EXECUTOR)):
        if any(w in label for w in words):
            return kind
    return None


def _planner_executor_critic(agents: list[Scope]) -> bool:
    first: dict[str, int] = {}
    names: dict[str, set[str]] = defaultdict(set)
    for scope in agents:
        kind = _kind(scope)
        if kind is not None:
            names[kind].add(scope.name)
            first[kind] = min(first.get(kind, scope.start_ns), scope.start_ns)
    if len(first) < 3 or len(names["planner"] | names["executor"] | names["critic"]) < 3:
        return False
    return first["planner"] <= first["executor"] <= first["critic"]


def _debate(events: list[dict[str, Any]], agents: set[str]) -> bool:
    said: Counter[tuple[str, str]] = Counter()
    for e in events:
        if e["type"] == _E_MESSAGE and e.get("channel") == _CH_AGENT and e.get("message_type") not in _HANDOFF_TYPES:
            sender = e["agent"]
            if sender in agents:
                for recipient in e.get("recipients", ()):
                    if recipient in agents and recipient != sender:
                        said[(sender, recipient)] += 1
    return any(n and said[(b, a)] and n + said[(b, a)] >= 3 for (a, b), n in said.items())
