"""AutoGen teams recorded as orchestration traces: every test runs a real team
offline (ReplayChatCompletionClient, function calling on) and checks that the
trace validates and says exactly what the team did."""

from __future__ import annotations

import asyncio

import autogen_apps as apps
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture

from orch_otel import Attr
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.autogen.testing import replay, tool_call

TIMEOUT = 20  # every run is bounded: a hang fails instead of blocking the suite


instrumented = instrumentor_fixture(AutoGenInstrumentor)


async def run(team, task="go") -> TaskResult:
    return await asyncio.wait_for(team.run(task=task), TIMEOUT)


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def spoken(trace: dict) -> list[tuple[str, str]]:
    """(from, to) of every agent-to-agent message, in order."""
    return [(e["from"], e["to"]) for e in events_of(trace, "message", channel="agent")]


def delegations(trace: dict, agent: str | None = None) -> list[list[str]]:
    return [e["targets"] for e in decisions_of(trace, "delegate") if agent is None or e["agent"] == agent]


def stop_reasons(trace: dict) -> dict[str, str]:
    return {e["agent"]: e["reason"] for e in decisions_of(trace, "stop")}


async def test_agent_with_tool_in_round_robin_text_termination(captured):
    result = await run(apps.weather_round_robin())
    assert result.stop_reason == "Text 'TERMINATE' mentioned"
    trace = one_trace(captured)
    assert trace["system"] == "autogen" and trace["topology"] == "centralized"
    assert delegations(trace) == [["a"], ["b"]]
    # Round robin has no choice: the order leaves one candidate each turn.
    assert [d["options"] for d in decisions_of(trace, "delegate")] == [["a"], ["b"]]
    (call,) = events_of(trace, "tool_call")
    (res,) = events_of(trace, "tool_result")
    assert (call["agent"], call["tool"], call["call_id"]) == ("a", "get_weather", "call_1")
    assert (res["to"], res["call_id"], res["status"]) == ("a", "call_1", "ok")
    llm = events_of(trace, "message", channel="llm")
    assert [(e["agent"], e["input_tokens"], e["output_tokens"]) for e in llm] == [("a", 3, 5), ("a", 2, 3), ("b", 0, 1)]
    assert {e["model"] for e in llm} == {"ReplayChatCompletionClient"}
    assert trace["costs"]["tokens"] == 3 + 5 + 2 + 3 + 1
    assert spoken(trace) == [("a", "b"), ("b", "a")]
    assert [e["message_type"] for e in events_of(trace, "message", channel="agent")] == ["TextMessage", "TextMessage"]
    assert [(r["from"], r["to"]) for r in events_of(trace, "return")] == [("a", "weather_team"), ("b", "weather_team")]
    # b's message mentioned TERMINATE: b's own (voluntary) stop, then the team's.
    assert stop_reasons(trace) == {"b": "Text 'TERMINATE' mentioned", "weather_team": "Text 'TERMINATE' mentioned"}
    # The tool span sits inside a's turn although the sync tool ran in a worker thread.
    spans = {s.name: s for s in captured.spans}
    assert spans["execute_tool get_weather"].parent_id == spans["invoke_agent a"].span_id
    turn = spans["invoke_agent a"].attributes
    assert (turn[Attr.AGENT_ROLE], turn[Attr.AGENT_DESCRIPTION]) == ("AssistantAgent", "weather agent")


async def test_round_robin_max_messages(captured):
    result = await run(apps.two_agent_round_robin(3))
    reason = "Maximum number of messages 3 reached, current message count: 3"
    assert result.stop_reason == reason
    trace = one_trace(captured)
    assert delegations(trace) == [["a"], ["b"]]
    assert spoken(trace) == [("a", "b"), ("b", "a")]
    assert stop_reasons(trace) == {"RoundRobinGroupChat": reason}


async def test_selector_records_candidates_and_choice(captured):
    result = await run(apps.selector_team())
    assert result.stop_reason == "Text 'TERMINATE' mentioned"
    trace = one_trace(captured)
    picks = decisions_of(trace, "delegate")
    assert [(d["targets"], d["options"]) for d in picks] == [
        (["planner"], ["planner", "coder", "reviewer"]),
        (["coder"], ["coder", "reviewer"]),  # the previous speaker is no longer a candidate
    ]
    # Each choice follows the selector's own model call, made by the team.
    llm = events_of(trace, "message", channel="llm")
    assert [e["agent"] for e in llm] == ["SelectorGroupChat", "planner", "SelectorGroupChat", "coder"]
    assert [r["from"] for r in events_of(trace, "return")] == ["planner", "coder"]
    assert stop_reasons(trace) == {"coder": "Text 'TERMINATE' mentioned", "SelectorGroupChat": "Text 'TERMINATE' mentioned"}


async def test_swarm_handoffs(captured):
    result = await run(apps.swarm_team())
    assert result.stop_reason == "Handoff to user from bob detected."
    trace = one_trace(captured)
    assert trace["topology"] == "swarm"
    # Each handoff is the agent's own delegation, then the swarm routes to the target.
    assert [(d["agent"], d["targets"]) for d in decisions_of(trace, "delegate")] == [
        ("Swarm", ["alice"]), ("alice", ["bob"]), ("Swarm", ["bob"]), ("bob", ["user"]),
    ]
    handoffs = events_of(trace, "message", message_type="HandoffMessage")
    assert [(m["from"], m["to"]) for m in handoffs] == [("alice", "bob"), ("bob", "user")]
    calls = {(e["agent"], e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")}
    assert calls == {("alice", "lookup", "t1"), ("alice", "transfer_to_bob", "h1"), ("bob", "transfer_to_user", "h2")}
    assert stop_reasons(trace) == {"bob": "Handoff to user from bob detected.", "Swarm": "Handoff to user from bob detected."}


async def test_swarm_handoff_context_is_recorded(captured):
    from orch_otel.content import ContentPolicy
    from orch_otel.recorder import get_recorder

    recorder = get_recorder()
    saved, recorder.content = recorder.content, ContentPolicy(capture=True)
    try:
        await run(apps.swarm_team())
    finally:
        recorder.content = saved
    (conversion,) = captured.conversions()
    handoff = events_of(conversion.trace, "message", message_type="HandoffMessage", **{"from": "alice"})[0]
    text = conversion.contents[handoff["content_ref"]]
    assert '"target":"bob"' in text and "Transferred to bob" in text
    # The context: alice's lookup call (id t1) and its result (call_id t1), not the handoff call.
    assert '"id":"t1"' in text and '"call_id":"t1"' in text and '"h1"' not in text


async def test_graph_flow_fan_out_and_fan_in(captured):
    result = await run(apps.graph_flow())
    assert result.stop_reason == "Digraph execution is complete"
    trace = one_trace(captured)
    assert delegations(trace) == [["A"], ["B", "C"], ["D"]]
    (agg,) = events_of(trace, "aggregate")
    assert agg["agent"] == "GraphFlow" and agg["sources"] == ["B", "C"]
    returns = {r["from"]: r for r in events_of(trace, "return")}
    assert set(returns) == {"A", "B", "C", "D"}
    assert {"src": returns["B"]["id"], "dst": agg["id"], "type": "aggregate"} in trace["edges"]
    assert {"src": returns["C"]["id"], "dst": agg["id"], "type": "aggregate"} in trace["edges"]
    (choose_d,) = [d for d in decisions_of(trace, "delegate") if d["targets"] == ["D"]]
    assert agg["t"] <= choose_d["t"] and returns["B"]["t"] <= agg["t"] and returns["C"]["t"] <= agg["t"]
    fan = {s.attributes[Attr.AGENT_NAME]: s.attributes for s in captured.spans if s.name in ("invoke_agent B", "invoke_agent C")}
    assert {(a[Attr.FANOUT_INDEX], a[Attr.FANOUT_SIZE]) for a in fan.values()} == {(0, 2), (1, 2)}
    assert stop_reasons(trace) == {"GraphFlow": "Digraph execution is complete"}


async def test_society_of_mind_inside_outer_team(captured):
    result = await run(apps.society_of_mind_team())
    assert result.stop_reason == "Maximum number of turns 2 reached."
    trace = one_trace(captured)
    assert trace["topology"] == "hierarchical"
    assert [(s["agent"], s["to"]) for s in events_of(trace, "spawn")] == [
        ("som", "inner_team"), ("inner_team", "w1"), ("inner_team", "w2"),
    ]
    (spawn_decision,) = [d for d in decisions_of(trace, "spawn") if not d.get("implied")]
    assert (spawn_decision["agent"], spawn_decision["targets"]) == ("som", ["inner_team"])
    assert delegations(trace, "outer_team") == [["som"], ["critic"]]
    assert delegations(trace, "inner_team") == [["w1"], ["w2"]]
    returns = [(r["from"], r["to"]) for r in events_of(trace, "return")]
    assert returns == [("w1", "inner_team"), ("w2", "inner_team"), ("inner_team", "som"), ("som", "outer_team"),
                       ("critic", "outer_team")]
    (agg,) = events_of(trace, "aggregate")
    assert agg["agent"] == "som" and agg["sources"] == ["inner_team"]
    inner_return = next(r for r in events_of(trace, "return") if r["from"] == "inner_team")
    assert {"src": inner_return["id"], "dst": agg["id"], "type": "aggregate"} in trace["edges"]
    summary = [e for e in events_of(trace, "message", channel="llm") if e["agent"] == "som"]
    assert len(summary) == 1 and summary[0]["t"] <= agg["t"]
    assert stop_reasons(trace) == {"inner_team": "Maximum number of turns 2 reached.",
                                   "outer_team": "Maximum number of turns 2 reached."}
    assert spoken(trace) == [("w1", "w2"), ("w2", "w1"), ("som", "critic"), ("critic", "som")]


async def test_team_as_participant(captured):
    result = await run(apps.team_as_participant())
    assert result.stop_reason == "Maximum number of turns 2 reached."
    trace = one_trace(captured)
    assert [(s["agent"], s["to"]) for s in events_of(trace, "spawn")] == [
        ("outer", "sub_team"), ("sub_team", "x"), ("sub_team", "y"),
    ]
    # The outer manager's choice of sub_team covers its spawn: no implied decision.
    assert not [d for d in decisions_of(trace, "spawn") if d.get("implied")]
    assert delegations(trace, "outer") == [["sub_team"], ["z"]]
    (team_msg,) = events_of(trace, "message", message_type="TaskResult")
    assert (team_msg["from"], team_msg["to"]) == ("sub_team", "z")
    assert stop_reasons(trace) == {"sub_team": "Maximum number of turns 2 reached.",
                                   "outer": "Maximum number of turns 2 reached."}
    sub = next(s for s in captured.spans if s.name == "invoke_agent sub_team").attributes
    assert (sub[Attr.AGENT_ROLE], sub[Attr.AGENT_DESCRIPTION]) == ("RoundRobinGroupChat", "a sub team")


async def test_magentic_one(captured):
    result = await run(apps.magentic_one())
    assert result.stop_reason == "task done"
    trace = one_trace(captured)
    (choice,) = decisions_of(trace, "delegate")
    assert (choice["agent"], choice["targets"], choice["options"]) == ("MagenticOneGroupChat", ["coder"], ["coder"])
    llm = [e["agent"] for e in events_of(trace, "message", channel="llm")]
    # facts, plan, ledger; coder; ledger, final answer
    assert llm == ["MagenticOneGroupChat"] * 3 + ["coder"] + ["MagenticOneGroupChat"] * 2
    # Orchestrator broadcasts: task ledger, the instruction, the final answer; coder answers the orchestrator.
    assert spoken(trace) == [("MagenticOneGroupChat", "coder")] * 2 + [("coder", "MagenticOneGroupChat"),
                                                                        ("MagenticOneGroupChat", "coder")]
    (ret,) = events_of(trace, "return")
    assert (ret["from"], ret["to"]) == ("coder", "MagenticOneGroupChat")
    assert stop_reasons(trace) == {"MagenticOneGroupChat": "task done"}


async def test_exception_inside_tool(captured):
    result = await run(apps.failing_tool_team())
    assert result.stop_reason == "Maximum number of turns 1 reached."
    summary = result.messages[-1]
    assert type(summary).__name__ == "ToolCallSummaryMessage" and "tool exploded" in summary.content
    trace = one_trace(captured)
    (call,) = events_of(trace, "tool_call")
    (res,) = events_of(trace, "tool_result")
    assert (call["tool"], call["call_id"], res["call_id"]) == ("boom", "call_9", "call_9")
    assert (res["status"], res["outcome"]) == ("error", "error")
    assert trace["metrics"]["tool_success_rate"] == 0.0
    # The tool failed; the turn and the run did not.
    (ret,) = events_of(trace, "return")
    assert ret["status"] == "ok"
    assert stop_reasons(trace) == {"RoundRobinGroupChat": "Maximum number of turns 1 reached."}
    tool_span = next(s for s in captured.spans if s.name == "execute_tool boom")
    assert tool_span.status == "error" and tool_span.attributes[Attr.ERROR_TYPE] == "ValueError"


async def test_run_stream_is_one_trace(captured):
    team = apps.weather_round_robin()
    items = []

    async def consume():
        async for item in team.run_stream(task="weather?"):
            items.append(item)

    await asyncio.wait_for(consume(), TIMEOUT)
    assert isinstance(items[-1], TaskResult)
    trace = one_trace(captured)
    assert delegations(trace) == [["a"], ["b"]]
    assert stop_reasons(trace) == {"b": "Text 'TERMINATE' mentioned", "weather_team": "Text 'TERMINATE' mentioned"}


async def test_run_stream_closed_early_still_ends_the_run(captured):
    team = apps.two_agent_round_robin(5)

    async def first_two():
        stream = team.run_stream(task="go")
        seen = [await stream.__anext__(), await stream.__anext__()]
        await stream.aclose()
        return seen

    await asyncio.wait_for(first_two(), TIMEOUT)
    trace = one_trace(captured)
    (stop,) = decisions_of(trace, "stop")
    assert stop["agent"] == "RoundRobinGroupChat" and stop["reason"]  # the team's own reason, or "cancelled"


async def test_standalone_agent_run_with_tool(captured):
    agent = AssistantAgent(
        "solo", tools=[apps.get_weather],
        model_client=replay(tool_call("get_weather", {"city": "Oslo"}, "c7")),
    )
    result = await asyncio.wait_for(agent.run(task="weather in Oslo?"), TIMEOUT)
    assert "sunny in Oslo" in result.messages[-1].content
    trace = one_trace(captured)
    (call,) = events_of(trace, "tool_call")
    assert (call["agent"], call["tool"], call["call_id"]) == ("solo", "get_weather", "c7")
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"]) == ("solo", "end")
    (root,) = [s for s in captured.spans if s.parent_id is None]
    assert root.name == "invoke_agent solo"


async def test_sequential_runs_of_one_team_are_separate_traces(captured):
    team = apps.two_agent_round_robin(6)
    await run(team)
    await run(team)  # the team continues its conversation: a new run, a new trace
    traces = captured.traces()
    assert len(traces) == 2
    for trace in traces:
        check_trace(trace)
        assert len(decisions_of(trace, "stop")) == 1
    assert traces[0]["task_id"] == traces[1]["task_id"]  # same team: same conversation id
