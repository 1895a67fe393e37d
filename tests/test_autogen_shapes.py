"""AutoGen shapes the docs teach, recorded as the app ran them: a selector
narrowed by ``candidate_func``, a GraphFlow with a loop, tools served by a
workbench, a task id named around a team run, and a team run inside the app's
own ``orch_otel.workflow``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import autogen_apps as apps
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture, span_tree

import orch_otel
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.recorder import get_recorder
from orch_otel.replaying import replay

TIMEOUT = 20

instrumented = instrumentor_fixture(AutoGenInstrumentor)


async def run(team, task="go") -> TaskResult:
    return await asyncio.wait_for(team.run(task=task), TIMEOUT)


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def delegations(trace: dict) -> list[tuple[str, list[str], list[str]]]:
    return [(e["agent"], e["targets"], e["options"]) for e in decisions_of(trace, "delegate")]


async def test_one_candidate_left_by_candidate_func_is_the_only_option(captured):
    result = await run(apps.selector_with_candidates())
    assert [m.source for m in result.messages] == ["user", "planner", "coder", "coder"]
    trace = one_trace(captured)
    every = ["planner", "coder", "reviewer", "tester"]
    assert delegations(trace) == [
        ("SelectorGroupChat", ["planner"], every),  # selector_func chose among all participants
        ("SelectorGroupChat", ["coder"], ["coder"]),  # candidate_func left one
        ("SelectorGroupChat", ["coder"], ["coder"]),  # again, though coder also spoke last
    ]


def aggregates(trace: dict) -> list[list[str]]:
    return [sorted(e["sources"]) for e in events_of(trace, "aggregate")]


async def test_a_loop_back_node_runs_again_without_an_invented_aggregate(captured):
    result = await run(apps.graph_loop())
    assert [m.source for m in result.messages] == ["user", "A", "B", "C", "B", "C", "E"]
    trace = one_trace(captured)
    assert aggregates(trace) == []  # B waits for one parent each time: A, then C
    assert delegations(trace) == [
        ("GraphFlow", ["A"], ["A"]), ("GraphFlow", ["B"], ["B"]), ("GraphFlow", ["C"], ["C"]),
        ("GraphFlow", ["B"], ["B", "E"]), ("GraphFlow", ["C"], ["C"]), ("GraphFlow", ["E"], ["B", "E"]),
    ]


async def test_a_fan_in_inside_a_loop_joins_each_rounds_parents(captured):
    result = await run(apps.graph_fan_in_loop())
    assert [m.source for m in result.messages][-1] == "done"
    trace = one_trace(captured)
    joins = events_of(trace, "aggregate")
    assert [sorted(e["sources"]) for e in joins] == [["x", "y"], ["x", "y"]]
    # each aggregate joins that round's x and y: no instance is aggregated twice
    instances = [i for e in joins for i in e["source_instances"]]
    assert len(instances) == 4 == len(set(instances))


def test_a_task_named_around_a_team_run_keeps_one_autogen_root_and_replays(captured, monkeypatch):
    """The README's recipe for AutoGen task ids: ``with orch_otel.task(...)`` around the run."""
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        with orch_otel.task("ticket-18"):
            asyncio.run(run(apps.weather_round_robin(), task="I was charged twice"))
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert (trace["task_id"], trace["system"]) == ("ticket-18", "autogen")
    roots = [s for s in captured.spans if s.parent_id is None]
    assert [s.name for s in roots] == ["invoke_workflow weather_team"]
    result = replay(trace, apps.weather_round_robin(), contents=conversion.contents)
    assert result.equal, result.divergence.describe()


def test_a_team_run_inside_the_apps_workflow_is_one_trace_under_its_root(captured):
    """The app's ``workflow("support")`` is the run; the team is one agent it spawned, and a and b the
    team's (AutoGen's own workflow root is not made a second time)."""
    with orch_otel.workflow("support", task_id="ticket-20"):
        result = asyncio.run(run(apps.two_agent_round_robin(3)))
    assert [m.source for m in result.messages] == ["user", "a", "b"]
    chat = ("chat ReplayChatCompletionClient", [])
    assert span_tree(captured.spans) == [
        ("invoke_workflow support", [
            ("invoke_agent RoundRobinGroupChat", [
                ("invoke_agent a", [chat]),
                ("invoke_agent b", [chat]),
            ]),
        ]),
    ]
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == ("ticket-20", "custom")
    assert [(e["agent"], e["to"]) for e in events_of(trace, "spawn")] == [
        ("support", "RoundRobinGroupChat"), ("RoundRobinGroupChat", "a"), ("RoundRobinGroupChat", "b")]
    assert [(e["agent"], e["to"]) for e in events_of(trace, "return")] == [
        ("a", "RoundRobinGroupChat"), ("b", "RoundRobinGroupChat"), ("RoundRobinGroupChat", "support")]
    stops = [(e["agent"], e["reason"], e.get("forced", False)) for e in decisions_of(trace, "stop")]
    assert stops == [("RoundRobinGroupChat", "Maximum number of messages 3 reached, current message count: 3", True),
                     ("support", "end", False)]  # the team's limit ends the team; the app's run then ends


def test_a_standalone_agent_run_inside_the_apps_workflow_is_an_agent_it_spawned(captured):
    with orch_otel.workflow("desk", task_id="ticket-22"):
        result = asyncio.run(asyncio.wait_for(AssistantAgent("solo", model_client=apps.replay("hi")).run(task="go"),
                                              TIMEOUT))
    assert result.messages[-1].content == "hi"
    assert span_tree(captured.spans) == [
        ("invoke_workflow desk", [("invoke_agent solo", [("chat ReplayChatCompletionClient", [])])])]
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == ("ticket-22", "custom")
    assert [(e["type"], e["agent"], e["to"]) for e in trace["events"] if e["type"] in ("spawn", "return")] == [
        ("spawn", "desk", "solo"), ("return", "solo", "desk")]


def test_a_team_run_inside_a_langgraph_node_is_a_team_the_graph_spawned(captured):
    """Another framework's run holds the team the same way: only a node that calls a model is an agent
    (docs/langgraph.md), so the graph's run spawns the team."""
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    class State(TypedDict):
        stop: str

    def runner(state: State) -> dict:
        return {"stop": asyncio.run(run(apps.two_agent_round_robin(3))).stop_reason}

    graph = StateGraph(State)
    graph.add_node("runner", runner)
    graph.add_edge(START, "runner")
    graph.add_edge("runner", END)
    instrumentor = LangGraphInstrumentor()
    already = instrumentor.is_instrumented_by_opentelemetry
    instrumentor.instrument()
    try:
        graph.compile(name="desk").invoke({"stop": ""})
    finally:
        if not already:
            instrumentor.uninstrument()
    chat = ("chat ReplayChatCompletionClient", [])
    assert span_tree(captured.spans) == [
        ("invoke_workflow desk", [
            ("invoke_agent RoundRobinGroupChat", [("invoke_agent a", [chat]), ("invoke_agent b", [chat])]),
        ]),
    ]
    trace = one_trace(captured)
    assert trace["system"] == "langgraph"
    assert [(e["agent"], e["to"]) for e in events_of(trace, "spawn")] == [
        ("desk", "RoundRobinGroupChat"), ("RoundRobinGroupChat", "a"), ("RoundRobinGroupChat", "b")]


@orch_otel.workflow("support", task_id="ticket-21")
async def support_desk(question: str) -> str | None:
    result = await run(apps.weather_round_robin(), task=question)
    return result.stop_reason


def test_a_team_run_inside_a_workflow_function_replays_from_the_functions_arguments(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        asyncio.run(support_desk("weather in Paris?"))
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert [(e["agent"], e["to"]) for e in events_of(trace, "spawn")] == [
        ("support", "weather_team"), ("weather_team", "a"), ("weather_team", "b")]
    result = replay(trace, support_desk, contents=conversion.contents)
    assert result.equal, result.divergence.describe()
    assert (result.served, result.live) == (4, 0)  # a's tool call, get_weather, a's reflection, b's answer


async def test_a_task_name_reaches_a_standalone_agent_run_and_ends_with_its_block(captured):
    agent = AssistantAgent("solo", model_client=apps.replay("hi", "hi again"))
    with orch_otel.task("ticket-19"):
        await asyncio.wait_for(agent.run(task="hello"), TIMEOUT)
    await asyncio.wait_for(agent.run(task="hello"), TIMEOUT)
    named, unnamed = captured.traces()
    assert named["task_id"] == "ticket-19" and named["system"] == "autogen"
    assert unnamed["task_id"] != "ticket-19"


async def test_tools_from_workbenches_are_recorded_once_under_the_name_the_model_called(captured):
    result = await run(apps.workbench_team())
    assert result.stop_reason == "Maximum number of turns 1 reached."
    trace = one_trace(captured)
    calls = [(e["agent"], e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")]
    assert sorted(calls) == [("keeper", "add_note", "n1"), ("keeper", "count_notes", "n2"), ("keeper", "weather", "n3")]
    results = {e["call_id"]: (e["tool"], e["to"], e["status"]) for e in events_of(trace, "tool_result")}
    assert results == {"n1": ("add_note", "keeper", "ok"), "n2": ("count_notes", "keeper", "ok"),
                       "n3": ("weather", "keeper", "ok")}
    assert trace["costs"]["tool_calls"] == 3


async def test_a_workbench_error_result_is_a_failed_tool_call(captured):
    with orch_otel.agent("caller"):
        result = await apps.NotesWorkbench().call_tool("shred_notes", {}, call_id="x1")
    assert result.is_error  # the workbench reports the failure instead of raising
    (trace,) = captured.traces()
    (done,) = events_of(trace, "tool_result")
    assert (done["tool"], done["call_id"], done["status"]) == ("shred_notes", "x1", "error")


async def test_a_tool_of_an_mcp_workbench_is_recorded_once(captured):
    pytest.importorskip("autogen_ext.tools.mcp", reason="needs autogen-ext[mcp] (the dev extra)")
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.tools.mcp import McpWorkbench, StdioServerParams

    server = StdioServerParams(command=sys.executable, args=[str(Path(__file__).with_name("mcp_notes_server.py"))],
                               read_timeout_seconds=30)
    workbench = McpWorkbench(server)
    try:
        keeper = AssistantAgent("keeper", workbench=workbench,
                                model_client=apps.replay(apps.tool_call("add_note", {"text": "milk"}, "m1")))
        result = await asyncio.wait_for(RoundRobinGroupChat([keeper], max_turns=1).run(task="remember milk"), 60)
    finally:
        await workbench.stop()
    assert result.messages[-1].content == "noted: milk"
    trace = one_trace(captured)
    assert [(e["agent"], e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")] == [("keeper", "add_note", "m1")]
    (done,) = events_of(trace, "tool_result")
    assert (done["call_id"], done["status"]) == ("m1", "ok")
    # MCP's workbench opens AutoGen's own execute_tool span too: only orch-otel's is left
    assert [s.name for s in captured.spans if s.name.startswith("execute_tool")] == ["execute_tool add_note"]
