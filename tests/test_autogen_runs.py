"""AutoGen runs under stress: cancellation, errors, concurrency, user-supplied
runtimes, and AutoGen's own spans (one trace per run, no duplicates)."""

from __future__ import annotations

import asyncio
from collections import Counter

import autogen_apps as apps
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken, SingleThreadedAgentRuntime
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture

from orch_otel import Attr
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.autogen.testing import replay

TIMEOUT = 20


instrumented = instrumentor_fixture(AutoGenInstrumentor)


def stops(trace: dict) -> list[tuple[str, str]]:
    return [(e["agent"], e["reason"]) for e in decisions_of(trace, "stop")]


async def test_cancel_during_a_model_call(captured):
    # Cancel while a model call is in flight (cancelling during a tool hangs in
    # AutoGen 0.7.5, microsoft/autogen#7956); every await is bounded.
    team = apps.slow_round_robin(delay=0.3)
    token = CancellationToken()
    task = asyncio.create_task(team.run(task="go", cancellation_token=token))
    await asyncio.sleep(0.1)
    token.cancel()
    done, _ = await asyncio.wait([task], timeout=TIMEOUT)
    assert done, "team.run did not finish after cancellation"
    with pytest.raises(asyncio.CancelledError):
        task.result()
    (trace,) = captured.traces()
    check_trace(trace)
    assert stops(trace) == [("RoundRobinGroupChat", "cancelled")]
    # The turn in flight finished; no second turn started.
    assert [(r["from"], r["status"]) for r in events_of(trace, "return")] == [("a", "ok")]
    (root,) = [s for s in captured.spans if s.parent_id is None]
    assert root.attributes[Attr.OUTCOME] == "cancelled" and root.status != "error"


async def test_error_in_an_agent_stops_the_run_with_error(captured):
    # The model client has nothing to answer: the agent's turn fails.
    team = RoundRobinGroupChat([AssistantAgent("a", model_client=replay())], max_turns=2)
    with pytest.raises(RuntimeError, match="No more mock responses"):
        await asyncio.wait_for(team.run(task="go"), TIMEOUT)
    (trace,) = captured.traces()
    check_trace(trace)
    assert stops(trace) == [("RoundRobinGroupChat", "error")]
    (ret,) = events_of(trace, "return")
    assert (ret["from"], ret["status"]) == ("a", "error")
    turn = next(s for s in captured.spans if s.name == "invoke_agent a")
    assert turn.attributes[Attr.ERROR_TYPE] == "ValueError"


async def test_fifty_concurrent_runs_give_fifty_correct_traces(captured):
    teams = [apps.weather_round_robin() if i % 2 else apps.swarm_team() for i in range(50)]
    results = await asyncio.wait_for(asyncio.gather(*(t.run(task=f"task {i}") for i, t in enumerate(teams))), 60)
    traces = captured.traces()
    assert len(traces) == 50
    by_task = {t["task_id"]: t for t in traces}
    assert set(by_task) == {team._team_id for team in teams}
    for team, result in zip(teams, results):
        trace = check_trace(by_task[team._team_id])
        if team.name == "weather_team":
            assert stops(trace) == [("b", result.stop_reason), ("weather_team", result.stop_reason)]
            assert result.stop_reason == "Text 'TERMINATE' mentioned"
            assert [d["targets"] for d in decisions_of(trace, "delegate")] == [["a"], ["b"]]
            assert [e["call_id"] for e in events_of(trace, "tool_call")] == ["call_1"]
        else:
            assert stops(trace) == [("bob", "Handoff to user from bob detected."), ("Swarm", "Handoff to user from bob detected.")]
            assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
                ("Swarm", "alice"), ("alice", "bob"), ("Swarm", "bob"), ("bob", "user")]
            assert sorted(e["call_id"] for e in events_of(trace, "tool_call")) == ["h1", "h2", "t1"]


async def test_builtin_spans_neither_split_nor_duplicate(captured):
    # The global SDK provider is set (conftest), so AutoGen's own tracing is live.
    # Agents are built inside the capture: create_agent spans would show up here.
    team = apps.weather_round_robin()
    await asyncio.wait_for(team.run(task="weather?"), TIMEOUT)
    assert len(captured.by_trace()) == 1
    names = Counter(captured.names())
    assert not [n for n in names if n.startswith(("autogen ", "create_agent"))]
    assert names["invoke_agent a"] == names["invoke_agent b"] == names["execute_tool get_weather"] == 1
    assert not [s for s in captured.spans if s.attributes.get("gen_ai.system") == "autogen"]
    # orch.stop: b's stop (its TERMINATE), recorded after b's turn span ended.
    assert names == Counter({"invoke_workflow weather_team": 1, "invoke_agent a": 1, "invoke_agent b": 1,
                             "execute_tool get_weather": 1, "chat ReplayChatCompletionClient": 3, "orch.stop": 1})


async def test_user_supplied_runtime_is_one_trace(captured):
    runtime = SingleThreadedAgentRuntime()
    runtime.start()  # started outside any run: its tasks do not inherit the run's context
    try:
        a = AssistantAgent("a", model_client=replay("hi"))
        b = AssistantAgent("b", model_client=replay("ho"))
        team = RoundRobinGroupChat([a, b], max_turns=2, runtime=runtime)
        result = await asyncio.wait_for(team.run(task="go"), TIMEOUT)
    finally:
        await asyncio.wait_for(runtime.stop_when_idle(), TIMEOUT)
    assert result.stop_reason == "Maximum number of turns 2 reached."
    (trace,) = captured.traces()
    check_trace(trace)
    assert [d["targets"] for d in decisions_of(trace, "delegate")] == [["a"], ["b"]]
    assert [(r["from"], r["to"]) for r in events_of(trace, "return")] == [("a", "RoundRobinGroupChat"),
                                                                          ("b", "RoundRobinGroupChat")]
    assert [e["agent"] for e in events_of(trace, "message", channel="llm")] == ["a", "b"]
    assert stops(trace) == [("RoundRobinGroupChat", "Maximum number of turns 2 reached.")]


async def test_tools_and_models_outside_a_run_are_not_recorded(captured):
    from autogen_core.tools import FunctionTool

    tool = FunctionTool(apps.get_weather, description="weather")
    assert await tool.run_json({"city": "Rome"}, CancellationToken(), call_id="x") == "sunny in Rome"
    await replay("hello").create([])
    assert captured.spans == []
