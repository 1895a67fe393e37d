"""Fidelity: an app's true orchestration, written by hand from its code, and
the check of a trace (live or converted offline) against it.

A ``Truth`` is data, never derived from orch-otel's output: who was invoked
and how many times, who delegated to whom among which options, who spawned
whom, which tool calls ran with which ids, who aggregated whose results, and
who stopped, why, and whether the stop was forced (a limit) or voluntary.

Field meanings in traces that this checks (the trace contract):
- ``spawn`` events name the spawned agent in ``to``; each spawn is one
  invocation (instance) of that agent; every event an instance produces
  carries the same ``instance`` id (``name#k``, k counted from 1 per name in
  order of first appearance).
- ``orchestrator_decision`` with ``decision=delegate``: ``agent`` decides,
  ``to`` is the chosen agent, ``options`` the candidates (a list).
- a ``decision=stop`` event by the stopping agent (the workflow may add its
  own after it): ``reason`` says why, ``forced`` is true for a limit (max
  messages, tokens, timeout, recursion) and false for a voluntary stop.
- ``aggregate`` events list ``sources`` (agent names) and
  ``source_instances`` (instance ids, one per source).
- ``human_intervention`` events: ``agent`` is ``human``; ``recipients`` (or
  ``to``) the agents the input reached; ``resume_of`` the interrupted trace a
  resumed run continues. A participant that stands for a person (AutoGen's
  ``UserProxyAgent``) has no event of its own.
- ``orchestrator_decision`` with ``decision=spawn``: ``agent`` decides to
  start ``targets`` (implied ones, which the converter adds where no decision
  was recorded, included).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Delegation:
    by: str
    to: str
    options: frozenset[str] | None = None  # None: the app declares no candidates


@dataclass(frozen=True)
class Stop:
    by: str
    reason: str  # a substring of the recorded reason
    forced: bool = False


@dataclass(frozen=True)
class Aggregate:
    by: str
    sources: tuple[str, ...]  # agent names, one per aggregated result (order free)


@dataclass(frozen=True)
class Spawn:
    by: str
    targets: tuple[str, ...]  # the agents one spawn decision starts (order free)


@dataclass(frozen=True)
class Truth:
    app: str
    instances: dict[str, int]  # spawned agent name -> invocations
    delegations: tuple[Delegation, ...] = ()  # in order
    humans: tuple[str, ...] = ()  # participants that stand for a person: never an agent of the trace
    human_interventions: tuple[tuple[str, ...], ...] = ()  # each human input in order: the agents it reached
    resumes: bool = False  # the run resumes an earlier one: a human intervention names it (resume_of)
    task_id: str | None = None  # None: not checked
    system: str | None = None  # None: not checked
    # tool calls an agent made in an earlier run of the same conversation (its prompts may hold them)
    earlier_tool_calls: tuple[tuple[str, str, str], ...] = ()
    tool_calls: tuple[tuple[str, str, str], ...] = ()  # (agent, tool, call_id), order free
    # calls the model's provider ran inside the model call (hosted tools): in the trace, marked
    # hosted; no tool turn answers them, so they are no tool calls of the chat views
    hosted_tool_calls: tuple[tuple[str, str, str], ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    stop: Stop | None = None
    topology: str | None = None  # None: not checked
    spawned_by: dict[str, str] = field(default_factory=dict)  # agent -> its spawner, where it matters
    # who decided to start whom, over every spawn decision (implied ones too), as (decider, target) pairs,
    # order and grouping free (parallel calls group by timing); None: not checked
    spawns: tuple[Spawn, ...] | None = None
    metrics: dict[str, float] = field(default_factory=dict)  # trace metrics that must hold, where they matter
    # tools an agent was given besides those it called (views may offer them to it)
    tools_given: dict[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Case:
    """One app shape of the fidelity suite: ``run()`` runs the app once with the
    instrumentation on (the caller captures its spans); ``truth`` is written by
    hand from the app's code."""

    truth: Truth
    run: Callable[[], Any]
    framework: str  # langgraph | autogen | openai_agents | custom
    trace: int = 0  # which of the run's traces (in start order) the truth describes, e.g. 0 before a resume


def _decisions(trace: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in trace["events"] if e["type"] == "orchestrator_decision" and e.get("decision") == kind]


def fidelity_errors(trace: dict[str, Any], truth: Truth) -> list[str]:
    """Every way ``trace`` departs from ``truth``; empty when it is faithful."""
    errors: list[str] = []
    events = trace["events"]
    spawns = [e for e in events if e["type"] == "spawn"]

    got_instances = Counter(e["to"] for e in spawns)
    if dict(got_instances) != truth.instances:
        errors.append(f"instances: expected {truth.instances}, got {dict(got_instances)}")
    ids_by_agent: dict[str, set[str]] = {}
    for e in events:
        if e.get("instance") and e["type"] != "spawn":
            ids_by_agent.setdefault(e["agent"], set()).add(e["instance"])
    for name, count in truth.instances.items():
        ids = ids_by_agent.get(name, set())
        if len(ids) != count:
            errors.append(f"instance ids of {name}: expected {count} distinct, got {sorted(ids)}")
    for child, parent in truth.spawned_by.items():
        by = {e["agent"] for e in spawns if e["to"] == child}
        if by != {parent}:
            errors.append(f"{child} spawned by: expected {parent}, got {sorted(by)}")

    got_delegations = [
        Delegation(e["agent"], e.get("to"), frozenset(e["options"]) if e.get("options") is not None else None)
        for e in _decisions(trace, "delegate")
    ]
    if got_delegations != list(truth.delegations):
        errors.append(f"delegations: expected {list(truth.delegations)}, got {got_delegations}")
    for e in _decisions(trace, "delegate"):
        targets = e.get("targets") or [e.get("to")]  # a parallel choice (fan-out) names several
        if e.get("options") is not None and not set(targets) <= set(e["options"]):
            errors.append(f"delegation {e['id']}: target {e.get('to')} not among its options {e['options']}")

    got_tools = Counter((e["agent"], e["tool"], e.get("call_id")) for e in events if e["type"] == "tool_call")
    all_calls = truth.tool_calls + truth.hosted_tool_calls
    if got_tools != Counter(all_calls):
        errors.append(f"tool calls: expected {sorted(all_calls)}, got {sorted(got_tools.elements(), key=str)}")
    hosted = Counter((e["agent"], e["tool"], e.get("call_id")) for e in events if e["type"] == "tool_call"
                     and e.get("hosted"))
    if hosted != Counter(truth.hosted_tool_calls):
        errors.append(f"hosted tool calls: expected {sorted(truth.hosted_tool_calls)}, got {sorted(hosted.elements())}")
    results = Counter(e.get("call_id") for e in events if e["type"] == "tool_result")
    if results != Counter(c for _, _, c in all_calls):
        want = sorted(c for _, _, c in all_calls)
        errors.append(f"tool results by call id: expected {want}, got {sorted(results.elements(), key=str)}")

    got_aggregates = [(e["agent"], Counter(e.get("sources") or [])) for e in events if e["type"] == "aggregate"]
    want_aggregates = [(a.by, Counter(a.sources)) for a in truth.aggregates]
    if sorted(got_aggregates, key=repr) != sorted(want_aggregates, key=repr):
        errors.append(f"aggregates: expected {want_aggregates}, got {got_aggregates}")
    for e in events:
        if e["type"] == "aggregate":
            instances = e.get("source_instances") or []
            if len(set(instances)) != len(e.get("sources") or []):
                errors.append(f"aggregate {e['id']}: source_instances {instances} do not name one instance per source")

    stops = _decisions(trace, "stop")
    if truth.stop is not None:
        mine = [e for e in stops if e["agent"] == truth.stop.by]
        if not mine:
            errors.append(f"stop: expected one by {truth.stop.by}, got {[(e['agent'], e.get('reason')) for e in stops]}")
        else:
            stop = mine[0]
            if truth.stop.reason not in str(stop.get("reason", "")):
                errors.append(f"stop reason: expected to contain {truth.stop.reason!r}, got {stop.get('reason')!r}")
            if bool(stop.get("forced")) != truth.stop.forced:
                errors.append(f"stop forced: expected {truth.stop.forced}, got {stop.get('forced')!r}")

    errors += _human_errors(trace, truth)
    for key in ("task_id", "system"):
        if getattr(truth, key) is not None and trace.get(key) != getattr(truth, key):
            errors.append(f"{key}: expected {getattr(truth, key)}, got {trace.get(key)}")

    if truth.spawns is not None:
        got_spawns = Counter((e["agent"], t) for e in _decisions(trace, "spawn") for t in e.get("targets") or [])
        want_spawns = Counter((s.by, t) for s in truth.spawns for t in s.targets)
        if got_spawns != want_spawns:
            errors.append(f"spawn decisions: expected {want_spawns}, got {got_spawns}")
    for name, value in truth.metrics.items():
        if trace.get("metrics", {}).get(name) != value:
            errors.append(f"metrics.{name}: expected {value}, got {trace.get('metrics', {}).get(name)!r}")
    if truth.topology is not None and trace.get("topology") != truth.topology:
        errors.append(f"topology: expected {truth.topology}, got {trace.get('topology')}")
    return errors


def _human_errors(trace: dict[str, Any], truth: Truth) -> list[str]:
    """A person's input is a human intervention reaching agents, never an agent's own event."""
    errors = []
    events = trace["events"]
    for e in events:
        if e["agent"] in truth.humans or (e["type"] == "spawn" and e.get("to") in truth.humans):
            errors.append(f"event {e['id']} ({e['type']}): {e['agent']} stands for a person, not an agent")
    interventions = [e for e in events if e["type"] == "human_intervention"]
    got = [tuple(e.get("recipients") or [e.get("to")]) for e in interventions]
    if got != list(truth.human_interventions):
        errors.append(f"human interventions: expected {list(truth.human_interventions)}, got {got}")
    if any(e["agent"] != "human" for e in interventions):
        errors.append(f"human interventions by {sorted({e['agent'] for e in interventions})}, not 'human'")
    resumed = any(e.get("resume_of") for e in interventions)
    if resumed != truth.resumes:
        errors.append(f"resume_of: expected {'one' if truth.resumes else 'none'}, got {'one' if resumed else 'none'}")
    return errors


def assert_faithful(trace: dict[str, Any], truth: Truth) -> None:
    errors = fidelity_errors(trace, truth)
    assert not errors, f"{truth.app}:\n  " + "\n  ".join(errors)
