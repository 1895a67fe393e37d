"""LangGraph apps end to end: supervisor, swarm, Send fan-out, nested subgraphs,
routing, Command handoffs, prebuilt agents and the demo. Every trace validates
and its events match what the app did."""

from __future__ import annotations

import warnings

import langgraph_apps as apps
import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from langchain.agents import create_agent

from orch_otel import Attr
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.demo import run_demo_app
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

instrumented = instrumentor_fixture(LangGraphInstrumentor)


def names(captured) -> list[str]:
    return sorted(captured.names())


def agents_in_order(trace: dict) -> list[str]:
    return [e["agent"] for e in events_of(trace, "return")]


def test_supervisor_hands_off_to_each_worker_and_back(captured):
    out = apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
    assert out["messages"][-1].content == "all done"
    (trace,) = captured.traces()
    check_trace(trace)
    assert trace["system"] == "langgraph"
    delegations = [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")]
    assert delegations == [("supervisor", "math_expert"), ("supervisor", "research_expert")]
    handoffs = events_of(trace, "message", channel="agent", message_type="handoff")
    assert [(m["from"], m["recipients"]) for m in handoffs] == [
        ("supervisor", ["math_expert"]), ("supervisor", ["research_expert"])]
    assert agents_in_order(trace) == ["supervisor", "math_expert", "supervisor", "research_expert", "supervisor"]
    returns = events_of(trace, "return")
    assert [r.get("outcome") for r in returns] == ["handoff", None, "handoff", None, None]
    assert all(e["status"] == "ok" for e in trace["events"])  # handoffs are never errors
    tools = [(c["agent"], c["tool"], c["call_id"]) for c in events_of(trace, "tool_call")]
    assert tools == [
        ("supervisor", "transfer_to_math_expert", "call_to_math"),
        ("math_expert", "add", "call_add"),
        ("supervisor", "transfer_to_research_expert", "call_to_research"),
        ("research_expert", "lookup", "call_lookup"),
    ]
    llm = events_of(trace, "message", channel="llm")
    assert [m["model"] for m in llm] == ["supervisor-llm", "math-llm", "math-llm", "supervisor-llm",
                                         "research-llm", "research-llm", "supervisor-llm"]
    assert all(m["input_tokens"] > 0 and m["output_tokens"] > 0 for m in llm)
    assert trace["costs"]["tokens"] == sum(m["input_tokens"] + m["output_tokens"] for m in llm)
    # the supervisor's last turn answers with no handoff: its own stop, then the workflow's
    stops = [(d["agent"], d["reason"], d["forced"]) for d in decisions_of(trace, "stop")]
    assert stops == [("supervisor", "end", False), ("supervision", "end", False)]
    # 1 workflow + 5 agent invocations + 7 model calls + 4 tools: no node or router spans
    assert len(captured.spans) == 17
    error_spans = [s.name for s in captured.spans if s.status == "error"]
    assert error_spans == []


def test_swarm_routes_to_the_active_agent_then_hands_off(captured):
    app = apps.build_swarm()
    out = app.invoke(apps.user_input(), {"configurable": {"thread_id": "swarm-1"}})
    assert out["active_agent"] == "Bob"
    (trace,) = captured.traces()
    check_trace(trace)
    assert trace["task_id"] == "swarm-1"
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [("swarm", "Alice"), ("Alice", "Bob")]
    assert agents_in_order(trace) == ["Alice", "Bob"]
    assert [(c["agent"], c["tool"]) for c in events_of(trace, "tool_call")] == [
        ("Alice", "transfer_to_bob"), ("Bob", "add")]
    (handoff,) = events_of(trace, "message", channel="agent")
    assert (handoff["from"], handoff["to"]) == ("Alice", "Bob")
    assert decisions_of(trace, "stop")[0]["reason"] == "end"
    assert len(captured.spans) == 8


@pytest.mark.parametrize("n", [1, 3, 5])
def test_send_fans_out_to_n_workers_and_fans_in(captured, n):
    out = apps.build_fanout(n).invoke({})
    assert len(out["notes"]) == n
    (trace,) = captured.traces()
    check_trace(trace)
    (spawn_decision,) = decisions_of(trace, "spawn")
    assert spawn_decision["agent"] == "fanout" and spawn_decision["targets"] == ["worker"] * n
    assert not spawn_decision.get("implied")
    spawns = events_of(trace, "spawn", agent="fanout", to="worker")
    assert sorted(s["fanout_index"] for s in spawns) == list(range(n))
    assert {s["fanout_size"] for s in spawns} == {n}
    assert all({"src": spawn_decision["id"], "dst": s["id"], "type": "spawn"} in trace["edges"] for s in spawns)
    assert len(events_of(trace, "tool_call", agent="worker", tool="lookup")) == n
    assert len(events_of(trace, "return", agent="worker", to="fanout")) == n
    (agg,) = events_of(trace, "aggregate")
    assert agg["agent"] == "fanout" and agg["sources"] == ["worker"] * n
    last_return = max(events_of(trace, "return"), key=lambda e: e["t"])
    assert agg["t"] >= last_return["t"]
    assert trace["metrics"]["max_fanout"] == n
    assert len(captured.spans) == 1 + 3 * n  # workflow + (agent, chat, tool) per branch


async def test_send_fan_out_async(captured):
    out = await apps.build_fanout(3).ainvoke({})
    assert len(out["notes"]) == 3
    (trace,) = captured.traces()
    check_trace(trace)
    assert len(events_of(trace, "spawn", to="worker")) == 3
    assert len(events_of(trace, "aggregate")) == 1


def test_three_levels_of_subgraphs(captured):
    out = apps.build_nested().invoke(apps.user_input())
    assert out["messages"][-1].content == "leaf answer"
    (trace,) = captured.traces()
    check_trace(trace)
    spawns = [(s["agent"], s["to"]) for s in events_of(trace, "spawn")]
    # level 3's model-calling node is an agent the level-3 graph starts, as every agent a graph runs
    assert spawns == [("level1", "middle"), ("middle", "call_inner"), ("call_inner", "leaf")]
    assert [(r["from"], r["to"]) for r in events_of(trace, "return")] == [
        ("leaf", "call_inner"), ("call_inner", "middle"), ("middle", "level1")]
    (llm,) = events_of(trace, "message", channel="llm")
    assert (llm["agent"], llm["model"]) == ("leaf", "leaf-llm")
    assert trace["metrics"]["max_depth"] == 4  # workflow, middle, call_inner, leaf
    # the plain nodes ('tidy', the node hosting level2) and level 3's node 'leaf' wrapper add nothing
    assert names(captured) == sorted([
        "invoke_workflow level1", "invoke_agent middle", "invoke_agent call_inner", "invoke_agent leaf",
        "chat leaf-llm"])
    inner = next(s for s in captured.spans if s.name == "invoke_agent call_inner")
    assert inner.attributes[Attr.AGENT_ID] == "level3"


@pytest.mark.parametrize("route", ["billing", "tech"])
def test_conditional_router_delegates_to_the_chosen_node(captured, route):
    apps.build_router(route).invoke(apps.user_input())
    (trace,) = captured.traces()
    check_trace(trace)
    (delegation,) = decisions_of(trace, "delegate")
    assert (delegation["agent"], delegation["to"]) == ("triage", route)
    assert agents_in_order(trace) == ["triage", route]
    # the chosen node is spawned by the workflow right after the decision
    edge = {"src": delegation["id"], "dst": events_of(trace, "spawn", to=route)[0]["id"], "type": "causal"}
    assert edge in trace["edges"]


def test_command_goto_and_parent_handoff(captured):
    out = apps.build_command_handoffs().invoke(apps.user_input())
    assert out["messages"][-1].content == "approved"
    (trace,) = captured.traces()
    check_trace(trace)
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("planner", "team"), ("lead", "reviewer")]
    returns = {r["from"]: r for r in events_of(trace, "return")}
    assert returns["lead"]["outcome"] == returns["team"]["outcome"] == "handoff"
    assert returns["lead"]["to"] == "team" and returns["team"]["to"] == "handoffs"
    assert all(s.status != "error" for s in captured.spans)
    assert decisions_of(trace, "stop")[0]["reason"] == "end"


def test_create_agent_as_the_whole_app(captured):
    model = FakeToolCallingModel(model_name="solo-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "x"}, "call_solo")]), ai("done")])
    agent = create_agent(model, [apps.lookup], name="solo")
    agent.invoke(apps.user_input())
    (trace,) = captured.traces()
    check_trace(trace)
    # the agent's own model -> tools loop is not orchestration: no agents, no routing decisions
    assert names(captured) == sorted(["invoke_workflow solo", "chat solo-llm", "execute_tool lookup", "chat solo-llm"])
    assert decisions_of(trace, "delegate") == [] and decisions_of(trace, "spawn") == []
    (call,) = events_of(trace, "tool_call")
    assert (call["agent"], call["call_id"]) == ("solo", "call_solo")


def test_deprecated_create_react_agent_as_the_whole_app(captured):
    from langgraph_apps import create_react_agent

    model = FakeToolCallingModel(model_name="react-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("add", {"a": 1, "b": 1}, "call_r")]), ai("2")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = create_react_agent(model, [apps.add], name="reactor")
    agent.invoke(apps.user_input())
    (trace,) = captured.traces()
    check_trace(trace)
    assert names(captured) == sorted(["invoke_workflow reactor", "chat react-llm", "execute_tool add", "chat react-llm"])
    assert decisions_of(trace, "delegate") == []


def test_create_agent_node_with_a_plain_node_after_it(captured):
    apps.build_agent_pipeline().invoke(apps.user_input())
    (trace,) = captured.traces()
    check_trace(trace)
    assert names(captured) == sorted([
        "invoke_workflow pipeline", "invoke_agent researcher", "chat researcher-llm", "execute_tool lookup",
        "chat researcher-llm"])
    (spawn,) = events_of(trace, "spawn")
    assert (spawn["agent"], spawn["to"]) == ("pipeline", "researcher")


async def test_demo_app(captured):
    out = await run_demo_app("demo-test")
    assert out["messages"][-1].content == "The report is ready."
    (trace,) = captured.traces()
    check_trace(trace)
    assert (trace["task_id"], trace["topology"], trace["system"]) == ("demo-test", "hierarchical", "langgraph")
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("supervisor", "research_team"), ("supervisor", "writer")]
    (fanout,) = [d for d in decisions_of(trace, "spawn") if not d.get("implied")]
    assert (fanout["agent"], fanout["targets"]) == ("research_team", ["worker"] * 3)
    workers = events_of(trace, "spawn", agent="research_team", to="worker")
    assert sorted(w["fanout_index"] for w in workers) == [0, 1, 2]
    (agg,) = events_of(trace, "aggregate")
    assert (agg["agent"], agg["sources"]) == ("research_team", ["worker"] * 3)
    tools = sorted((c["agent"], c["tool"]) for c in events_of(trace, "tool_call"))
    assert tools == sorted([("supervisor", "transfer_to_research_team"), ("supervisor", "transfer_to_writer"),
                            ("worker", "search"), ("worker", "search"), ("worker", "search"),
                            ("writer", "format_report")])
    # the supervisor answers with no handoff ("the run ends"): its stop, then the workflow's
    stops = [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")]
    assert stops == [("supervisor", "end"), ("research_workflow", "end")]
    assert len(captured.spans) == 26


@pytest.mark.parametrize("capture", [False, True])
def test_model_prompts_and_tools_are_recorded_only_with_capture_on(captured, capture):
    from orch_otel import ContentPolicy
    from orch_otel.recorder import Recorder, get_recorder, set_recorder

    old = get_recorder()
    set_recorder(Recorder(content=ContentPolicy(capture=capture)))
    try:
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
    finally:
        set_recorder(old)
    chats = [s for s in captured.spans if s.name.startswith("chat ")]
    tools = [s for s in captured.spans if s.name.startswith("execute_tool ") and "transfer_to" not in s.name]
    assert chats and tools  # (handoff tools return a Command: recorded as a handoff message instead)
    assert all(Attr.OUTPUT_REF in s.attributes for s in chats + tools)  # replies and results: refs always
    assert all(Attr.INPUT_REF in s.attributes for s in tools)
    offered = {s.attributes[Attr.TOOL_DEFINITIONS] for s in chats if Attr.TOOL_DEFINITIONS in s.attributes}
    if capture:
        assert all(s.attributes[Attr.INPUT_MESSAGES].startswith("[") and Attr.INPUT_REF in s.attributes
                   for s in chats)
        assert any('"name":"add"' in tools for tools in offered)  # the math expert's bound tool
    else:  # no content, and no per-call hash of the whole conversation or of the tools
        assert not any(Attr.INPUT_MESSAGES in s.attributes or Attr.INPUT_REF in s.attributes for s in chats)
        assert not offered and not any(Attr.TOOLS_REF in s.attributes for s in chats)
