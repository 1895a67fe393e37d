"""Replay of Agent Framework workflows and agents: each test app is recorded
with content, then run again (built anew) with its scripted model and its
tools raising if they are called at all, so every answer must come from the
recording; the orchestration must be the recorded one. Forks change a
handoff."""

from __future__ import annotations

import asyncio

import pytest
from conftest import check_trace, decisions_of, instrumentor_fixture, need_agent_framework

need_agent_framework()

import maf_apps as apps  # noqa: E402

from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import orchestration, replay  # noqa: E402

TIMEOUT = 20

instrumented = instrumentor_fixture(AgentFrameworkInstrumentor)

APPS = {  # name -> (build, message, stream)
    "weather_agent": (apps.weather_agent, "weather?", False),
    "weather_agent_streamed": (apps.weather_agent, "weather?", True),
    "agent_with_agent_tool": (apps.agent_with_agent_tool, "go", False),
    "sequential": (apps.sequential, "write", False),
    "concurrent": (apps.concurrent, "q", True),
    "switch_case_loop": (apps.switch_case_loop, "help", False),
    "handoff": (apps.handoff, "my bill", False),
    "group_chat_selection": (apps.group_chat_selection, "write", False),
    "group_chat_manager": (apps.group_chat_manager, "write", False),
    "magentic": (apps.magentic, "code", False),
}


def record(name: str, captured, monkeypatch) -> tuple[dict, dict[str, str]]:
    build, message, stream = APPS[name]
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        asyncio.run(asyncio.wait_for(apps.consume(build(), message, stream), TIMEOUT))
    (conversion,) = captured.conversions()
    return check_trace(conversion.trace), conversion.contents


@pytest.mark.parametrize("name", list(APPS))
def test_replay_serves_every_call_and_gives_the_recorded_orchestration(name, captured, monkeypatch):
    trace, contents = record(name, captured, monkeypatch)
    app = APPS[name][0]()
    monkeypatch.setattr(apps, "REPLAYING", True)
    result = replay(trace, app, contents=contents)
    assert result.equal, result.divergence.describe()
    assert result.app_errors == [None]
    replayed = check_trace(result.trace)
    # the same events (parallel calls may finish in another order: a served tool answers at once)
    assert sorted(map(repr, map(orchestration, replayed["events"]))) == sorted(
        map(repr, map(orchestration, trace["events"])))
    # handoff tools (the middleware acts on them) and agents as tools (their models are served) run as themselves
    live = {e["call_id"] for e in trace["events"] if e["type"] == "tool_result"
            and (e["tool"].startswith("handoff_to_") or e["tool"] == "ask_researcher")}
    assert result.served == sum(1 for e in trace["events"] if e.get("channel") == "llm") + sum(
        1 for e in trace["events"] if e["type"] == "tool_result" and e["call_id"] not in live)


def test_fork_at_a_handoff_hands_off_to_the_chosen_agent(captured, monkeypatch):
    trace, contents = record("handoff", captured, monkeypatch)
    (handoff,) = [d for d in decisions_of(trace, "delegate") if d["agent"] == "triage"]
    assert handoff["to"] == "billing"
    app = apps.handoff()  # support's model answers after the fork (its script: "unused")
    result = replay(trace, app, contents=contents, fork=handoff["id"], choose="support")
    assert result.equal, result.divergence.describe()
    branch = check_trace(result.trace)
    forced = next(d for d in decisions_of(branch, "delegate") if d.get("fork"))
    assert (forced["agent"], forced["to"]) == ("triage", "support")
    assert forced["fork"]["recorded"] == ["billing"] and forced["fork"]["forced"] == ["support"]


@pytest.mark.parametrize("name, manager, recorded, chosen", [
    ("group_chat_manager", "manager", "writer", "critic"),
    ("magentic", "magentic_manager", "coder", "tester"),
])
def test_fork_at_a_manager_choice_gives_the_turn_to_the_chosen_participant(name, manager, recorded, chosen,
                                                                           captured, monkeypatch):
    trace, contents = record(name, captured, monkeypatch)
    (choice,) = [d for d in decisions_of(trace, "delegate") if d["agent"] == manager]
    assert choice["to"] == recorded
    result = replay(trace, APPS[name][0](), contents=contents, fork=choice["id"], choose=chosen)
    assert result.equal, result.divergence.describe()
    branch = check_trace(result.trace)
    forced = next(d for d in decisions_of(branch, "delegate") if d.get("fork"))
    assert (forced["agent"], forced["to"]) == (manager, chosen)
    # the chosen participant took the turn: its model was called after the fork
    assert chosen in {e["agent"] for e in branch["events"] if e.get("channel") == "llm"}
