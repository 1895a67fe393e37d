"""View-level fidelity: every dataset view of one run checked against the
run's hand-written ``Truth`` (tests/fidelity.py).

``rows_by_view`` maps a view name (decisions, turns, chat, triplets, traces)
to the rows that view wrote for the run. What each view must show:

- decisions: one delegate row per true delegation, in order (decider, chosen
  agent, options), one spawn row per true spawn decision (decider, targets),
  and the true stop (decider, reason, ``forced``);
- traces: the run's tool calls, and ``metrics.stop_voluntary`` = not forced;
- turns: each agent's ``output_tool_calls`` (and the tool calls run after its
  turns) are exactly that agent's true tool calls (names and ids), and its
  prompts hold no other agent's tool calls;
- chat: an agent's rows offer only tools that agent called or was given
  (``Truth.tools_given``), and call only tools it called; every
  ``tool`` message answers a call made earlier in the row; the trainable
  assistant messages are that agent's turns, their tool calls exactly its
  true ones; nothing but assistant messages is trainable;
- triplets: as turns (``response.tool_calls``, ``prompt.messages``).

``skip`` names facts another branch provides (``options``, ``stop``), for a
test that runs before they are merged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from typing import Any

from fidelity import Delegation, Truth

VIEWS = ("decisions", "turns", "chat", "triplets", "traces")


def _true_calls(truth: Truth, agent: str | None = None) -> Counter:
    return Counter((tool, call_id) for who, tool, call_id in truth.tool_calls if agent is None or who == agent)


def _calls(calls: list[dict[str, Any]] | None) -> Counter:
    return Counter((c["function"]["name"], c["id"]) for c in calls or ())


def _prompt_errors(where: str, messages: list[dict[str, Any]], truth: Truth, agent: str) -> list[str]:
    """A prompt seen from ``agent``'s side: its assistant messages call only
    ``agent``'s tools, and every tool message answers a call made before it."""
    errors = []
    own = _true_calls(truth, agent) + Counter((t, c) for who, t, c in truth.earlier_tool_calls if who == agent)
    made: set[str] = set()
    for i, m in enumerate(messages):
        for call in m.get("tool_calls") or ():
            name, call_id = call["function"]["name"], call["id"]
            made.add(call_id)
            if m["role"] != "assistant" or (name, call_id) not in own:
                errors.append(f"{where} message {i}: {agent} never called {name} ({call_id}); "
                              f"got it as a {m['role']} tool call")
        if m["role"] == "tool" and m.get("tool_call_id") not in made:
            errors.append(f"{where} message {i}: tool message answers {m.get('tool_call_id')!r}, "
                          f"no call made before it in the row")
    return errors


def _decision_errors(rows: list[dict[str, Any]], truth: Truth, skip: Collection[str]) -> list[str]:
    errors = []
    got = []
    for r in rows:
        if r["decision"] != "delegate":
            continue
        targets = r["action"]["targets"]
        to = targets[0] if len(targets) == 1 else ",".join(targets)  # as the trace's ``to``
        options = frozenset(r["options"]) if r.get("options") is not None and "options" not in skip else None
        got.append(Delegation(r["agent"], to, options))
    want = [Delegation(d.by, d.to, None if "options" in skip else d.options) for d in truth.delegations]
    if got != want:
        errors.append(f"decisions: delegations expected {want}, got {got}")
    if truth.spawns is not None:
        got_spawns = Counter((r["agent"], t) for r in rows if r["decision"] == "spawn" for t in r["action"]["targets"])
        want_spawns = Counter((s.by, t) for s in truth.spawns for t in s.targets)
        if got_spawns != want_spawns:
            errors.append(f"decisions: spawns expected {want_spawns}, got {got_spawns}")
    if truth.stop is not None and "stop" not in skip:
        stops = [r for r in rows if r["decision"] == "stop"]
        mine = [r for r in stops if r["agent"] == truth.stop.by]
        if not mine:
            errors.append(f"decisions: no stop by {truth.stop.by}; stops: "
                          f"{[(r['agent'], r['action']['reason']) for r in stops]}")
        else:
            reason = mine[0]["action"]["reason"] or ""
            if truth.stop.reason not in reason:
                errors.append(f"decisions: stop reason expected to contain {truth.stop.reason!r}, got {reason!r}")
            if mine[0].get("forced") is not truth.stop.forced:
                errors.append(f"decisions: stop forced expected {truth.stop.forced}, got {mine[0].get('forced')!r}")
    return errors


def _trace_errors(rows: list[dict[str, Any]], truth: Truth, skip: Collection[str]) -> list[str]:
    if len(rows) != 1:
        return [f"traces: expected 1 trace, got {len(rows)}"]
    (trace,) = rows
    errors = []
    got = Counter((e["agent"], e["tool"], e.get("call_id")) for e in trace["events"] if e["type"] == "tool_call")
    all_calls = truth.tool_calls + truth.hosted_tool_calls
    if got != Counter(all_calls):
        errors.append(f"traces: tool calls expected {sorted(all_calls)}, got {sorted(got.elements())}")
    humans = [tuple(e.get("recipients") or [e.get("to")]) for e in trace["events"] if e["type"] == "human_intervention"]
    if humans != list(truth.human_interventions):
        errors.append(f"traces: human interventions expected {list(truth.human_interventions)}, got {humans}")
    if truth.stop is not None and "stop" not in skip:
        voluntary = trace["metrics"].get("stop_voluntary")
        if voluntary != (0.0 if truth.stop.forced else 1.0):
            errors.append(f"traces: stop_voluntary {voluntary!r} for a {'forced' if truth.stop.forced else 'voluntary'} stop")
    return errors


def _per_agent(rows: list[dict[str, Any]], agent_of, calls_of) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for r in rows:
        out.setdefault(agent_of(r), Counter()).update(calls_of(r))
    return {a: c for a, c in out.items() if c}


def _want_per_agent(truth: Truth) -> dict[str, Counter]:
    return {a: _true_calls(truth, a) for a in {who for who, _, _ in truth.tool_calls}}


def _turn_errors(rows: list[dict[str, Any]], truth: Truth) -> list[str]:
    errors = []
    want = _want_per_agent(truth)
    requested = _per_agent(rows, lambda r: r["agent"], lambda r: _calls(r["output_tool_calls"]))
    if requested != want:
        errors.append(f"turns: output_tool_calls per agent expected {want}, got {requested}")
    ran = _per_agent(rows, lambda r: r["agent"], lambda r: Counter((c["tool"], c["call_id"]) for c in r["tool_calls"]))
    for who, tool, call_id in truth.hosted_tool_calls:  # a turn's tool calls: its hosted ones too
        want.setdefault(who, Counter())[(tool, call_id)] += 1
    if ran != want:
        errors.append(f"turns: tool_calls per agent expected {want}, got {ran}")
    for r in rows:
        errors += _prompt_errors(f"turns {r['event_id']} ({r['agent']})", r["input_messages"] or [], truth, r["agent"])
    return errors


def _chat_errors(rows: list[dict[str, Any]], truth: Truth, turns: list[dict[str, Any]] | None) -> list[str]:
    errors = []
    trained: dict[str, Counter] = {}
    trained_turns: Counter = Counter()
    for r in rows:
        agent, where = r["agent"], f"chat {r['agent']}#{r['episode']}"
        called = {tool for tool, _ in _true_calls(truth, agent)}
        called |= {tool for who, tool, _ in truth.earlier_tool_calls if who == agent}  # it has them
        called |= truth.tools_given.get(agent, frozenset())
        offered = {t["function"]["name"] for t in r["tools"] or ()}
        if offered - called:
            errors.append(f"{where}: offers {sorted(offered - called)}, tools {agent} was not given")
        errors += _prompt_errors(where, r["messages"], truth, agent)
        for i, m in enumerate(r["messages"]):
            if m.get("trainable") and m["role"] != "assistant":
                errors.append(f"{where} message {i}: a {m['role']} message marked trainable")
            if m["role"] == "assistant" and m.get("trainable") is None:
                errors.append(f"{where} message {i}: an assistant message with no trainable mark")
            if m["role"] == "assistant" and m.get("trainable"):
                trained_turns[agent] += 1
                trained.setdefault(agent, Counter()).update(_calls(m.get("tool_calls")))
        if r["messages"] and not r["messages"][-1].get("trainable"):
            errors.append(f"{where}: the last message is not a trainable assistant turn")
    trained = {a: c for a, c in trained.items() if c}
    want = _want_per_agent(truth)
    if trained != want:
        errors.append(f"chat: trainable tool calls per agent expected {want}, got {trained}")
    if turns is not None:
        per_agent = Counter(t["agent"] for t in turns)
        if trained_turns != per_agent:
            errors.append(f"chat: trainable assistant messages per agent {dict(trained_turns)} "
                          f"!= turns per agent {dict(per_agent)}")
    return errors


def _triplet_errors(rows: list[dict[str, Any]], truth: Truth) -> list[str]:
    errors = []
    want = _want_per_agent(truth)
    got = _per_agent(rows, lambda r: r["metadata"]["agent_name"], lambda r: _calls(r["response"]["tool_calls"]))
    if got != want:
        errors.append(f"triplets: output_tool_calls per agent expected {want}, got {got}")
    for r in rows:
        md = r["metadata"]
        errors += _prompt_errors(f"triplet {md['event_id']} ({md['agent_name']})", r["prompt"]["messages"], truth,
                                 md["agent_name"])
    return errors


def view_errors(rows_by_view: dict[str, list[dict[str, Any]]], truth: Truth, skip: Collection[str] = ()) -> list[str]:
    """Every way the views of one run depart from ``truth``; empty when faithful."""
    missing = [v for v in VIEWS if v not in rows_by_view]
    errors = [f"views not given: {missing}"] if missing else []
    if "decisions" in rows_by_view:
        errors += _decision_errors(rows_by_view["decisions"], truth, skip)
    if "traces" in rows_by_view:
        errors += _trace_errors(rows_by_view["traces"], truth, skip)
    if "turns" in rows_by_view:
        errors += _turn_errors(rows_by_view["turns"], truth)
    if "chat" in rows_by_view:
        errors += _chat_errors(rows_by_view["chat"], truth, rows_by_view.get("turns"))
    if "triplets" in rows_by_view:
        errors += _triplet_errors(rows_by_view["triplets"], truth)
    for view in ("decisions", "turns", "chat", "triplets"):
        for r in rows_by_view.get(view, ()):
            agent = r.get("agent") or r.get("metadata", {}).get("agent_name")
            if agent in truth.humans:
                errors.append(f"{view}: a row for {agent}, who stands for a person")
    return errors


def assert_views_faithful(rows_by_view: dict[str, list[dict[str, Any]]], truth: Truth,
                          skip: Collection[str] = ()) -> None:
    errors = view_errors(rows_by_view, truth, skip)
    assert not errors, f"{truth.app}:\n  " + "\n  ".join(errors)
