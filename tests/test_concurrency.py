"""Concurrent runs give one correct trace each, with no cross-talk: 100
asyncio runs of hand-written agents; 1,000 concurrent LangGraph ``ainvoke``
runs and 200 threads each running ``invoke``; 200 concurrent AutoGen team
runs. Every run is tagged (its task id, and model, tool and agent names that
carry its number), so each trace is checked to hold exactly its own run's
events, counted by hand from the app."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from langchain_core.messages import HumanMessage
from langchain_core.tools import StructuredTool
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel
from typing_extensions import TypedDict

import orch_otel
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.autogen.testing import replay
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai

RUNS = 100
LANGGRAPH_ASYNC_RUNS = 1_000
LANGGRAPH_THREADS = 200
AUTOGEN_RUNS = 200

instrumented = instrumentor_fixture(LangGraphInstrumentor, AutoGenInstrumentor)


@orch_otel.tool
async def lookup(key: str) -> str:
    await asyncio.sleep(0)
    return key.upper()


@orch_otel.agent(role="worker")
async def helper(key: str) -> str:
    return await lookup(key)


async def one_run(i: int) -> list[str]:
    with orch_otel.workflow("batch", task_id=f"task-{i}"):
        with orch_otel.agent("lead"):
            orch_otel.spawn(["helper"] * (i % 3 + 1))
            results = await asyncio.gather(*(helper(f"{i}-{k}") for k in range(i % 3 + 1)))
            orch_otel.aggregate(sources=["helper"])
            orch_otel.stop("end")
            return results


async def test_hundred_concurrent_runs_make_hundred_traces(captured):
    results = await asyncio.gather(*(one_run(i) for i in range(RUNS)))
    assert results[5] == ["5-0", "5-1", "5-2"]
    traces = captured.traces()
    assert len(traces) == RUNS
    assert len({t["trace_id"] for t in traces}) == RUNS
    by_task = {t["task_id"]: t for t in traces}
    assert set(by_task) == {f"task-{i}" for i in range(RUNS)}
    for i in range(RUNS):
        trace = check_trace(by_task[f"task-{i}"])
        fanout = i % 3 + 1
        assert len(events_of(trace, "spawn", agent="lead", to="helper")) == fanout
        assert len(events_of(trace, "tool_call", agent="helper", tool="lookup")) == fanout
        assert len(events_of(trace, "return", agent="helper", to="lead")) == fanout
        (spawn_decision,) = decisions_of(trace, "spawn")
        assert spawn_decision["targets"] == ["helper"] * fanout
        assert [d["reason"] for d in decisions_of(trace, "stop")] == ["end"]


# -- LangGraph: triage (a model node) routes run i to billing (even i) or tech (odd i); the chosen
# node asks its model, then calls run i's own tool i % 3 + 1 times. Model and tool names carry i.

class Ticket(TypedDict, total=False):
    messages: list
    run: int
    route: str


def route_of(i: int) -> str:
    return "billing" if i % 2 == 0 else "tech"


def tool_calls_of(i: int) -> int:
    return i % 3 + 1


def _triage_model(state: Ticket) -> FakeToolCallingModel:
    return FakeToolCallingModel(model_name=f"triage-{state['run']}", responses=[ai(route_of(state["run"]))])


def _desk_model(state: Ticket) -> FakeToolCallingModel:
    return FakeToolCallingModel(model_name=f"desk-{state['run']}", responses=[ai("on it")])


class RecordQuery(BaseModel):
    item: int


def _desk_tool(i: int) -> StructuredTool:
    def look_up(item: int) -> str:
        return f"record {i}.{item}"

    async def alook_up(item: int) -> str:
        return look_up(item)

    # a shared schema: inferring one per run would cost more than the run
    return StructuredTool.from_function(look_up, coroutine=alook_up, name=f"records_{i}", description="Records.",
                                        args_schema=RecordQuery)


def build_helpdesk(use_async: bool) -> Any:
    if use_async:
        async def triage(state: Ticket) -> dict[str, Any]:
            reply = await _triage_model(state).ainvoke(state["messages"])
            return {"messages": [*state["messages"], reply], "route": str(reply.content)}

        async def desk(state: Ticket) -> dict[str, Any]:
            reply = await _desk_model(state).ainvoke(state["messages"])
            records = _desk_tool(state["run"])
            for item in range(tool_calls_of(state["run"])):
                await records.ainvoke({"item": item})
            return {"messages": [*state["messages"], reply]}
    else:
        def triage(state: Ticket) -> dict[str, Any]:
            reply = _triage_model(state).invoke(state["messages"])
            return {"messages": [*state["messages"], reply], "route": str(reply.content)}

        def desk(state: Ticket) -> dict[str, Any]:
            reply = _desk_model(state).invoke(state["messages"])
            records = _desk_tool(state["run"])
            for item in range(tool_calls_of(state["run"])):
                records.invoke({"item": item})
            return {"messages": [*state["messages"], reply]}

    graph = StateGraph(Ticket)
    graph.add_node("triage", triage)
    graph.add_node("billing", desk)
    graph.add_node("tech", desk)
    graph.add_edge(START, "triage")
    graph.add_conditional_edges("triage", lambda state: state["route"], ["billing", "tech"])
    graph.add_edge("billing", END)
    graph.add_edge("tech", END)
    return graph.compile(name="helpdesk")


def ticket(i: int) -> tuple[Ticket, dict[str, Any]]:
    return {"messages": [HumanMessage(f"ticket {i}")], "run": i}, {"metadata": {"orch.task_id": f"ticket-{i}"}}


def assert_one_helpdesk_trace_per_run(traces: list[dict], runs: int) -> None:
    assert len(traces) == runs
    assert len({t["trace_id"] for t in traces}) == runs
    by_task = {t["task_id"]: t for t in traces}
    assert set(by_task) == {f"ticket-{i}" for i in range(runs)}
    for i in range(runs):
        trace, desk = check_trace(by_task[f"ticket-{i}"]), route_of(i)
        assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [("triage", desk)]
        agents = {e["agent"] for e in trace["events"] if e["type"] in ("spawn", "return", "message")}
        assert agents == {"helpdesk", "triage", desk}
        llm = events_of(trace, "message", channel="llm")
        assert sorted((e["agent"], e["model"]) for e in llm) == sorted([("triage", f"triage-{i}"), (desk, f"desk-{i}")])
        calls = [(e["agent"], e["tool"]) for e in events_of(trace, "tool_call")]
        results = [(e["to"], e["tool"]) for e in events_of(trace, "tool_result")]
        assert calls == results == [(desk, f"records_{i}")] * tool_calls_of(i)
        assert [d["reason"] for d in decisions_of(trace, "stop")] == ["end"]


async def test_thousand_concurrent_langgraph_runs_make_one_trace_each(captured):
    graph = build_helpdesk(use_async=True)
    outputs = await asyncio.gather(*(graph.ainvoke(*ticket(i)) for i in range(LANGGRAPH_ASYNC_RUNS)))
    assert [out["route"] for out in outputs[:2]] == ["billing", "tech"]
    assert_one_helpdesk_trace_per_run(captured.traces(), LANGGRAPH_ASYNC_RUNS)


def test_two_hundred_threads_of_langgraph_runs_make_one_trace_each(captured):
    graph = build_helpdesk(use_async=False)
    start = threading.Barrier(LANGGRAPH_THREADS)
    failures: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait()  # all threads run at once
            graph.invoke(*ticket(i))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(LANGGRAPH_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert_one_helpdesk_trace_per_run(captured.traces(), LANGGRAPH_THREADS)


# -- AutoGen: run i is a round robin of ask_i and answer_i stopped after i % 3 + 2 messages (the task
# counts as one), so it delegates i % 3 + 1 times, alternating ask_i, answer_i, each turn's message
# relayed to the other agent.

def autogen_team(i: int) -> RoundRobinGroupChat:
    ask = AssistantAgent(f"ask_{i}", model_client=replay(*[f"ask {i}"] * 3))
    answer = AssistantAgent(f"answer_{i}", model_client=replay(*[f"answer {i}"] * 3))
    return RoundRobinGroupChat([ask, answer], termination_condition=MaxMessageTermination(i % 3 + 2))


async def test_two_hundred_concurrent_autogen_team_runs_make_one_trace_each(captured):
    results = await asyncio.gather(*(autogen_team(i).run(task=f"task {i}") for i in range(AUTOGEN_RUNS)))
    assert [len(r.messages) for r in results[:3]] == [2, 3, 4]
    traces = captured.traces()
    assert len(traces) == AUTOGEN_RUNS
    by_team = {}
    for trace in traces:
        check_trace(trace)
        first_speaker = decisions_of(trace, "delegate")[0]["targets"][0]  # ask_<i>
        by_team[int(first_speaker.removeprefix("ask_"))] = trace
    assert set(by_team) == set(range(AUTOGEN_RUNS))
    for i, trace in by_team.items():
        turns = i % 3 + 1
        expected = [[f"ask_{i}"], [f"answer_{i}"], [f"ask_{i}"]][:turns]
        assert [d["targets"] for d in decisions_of(trace, "delegate")] == expected
        agents = {e["agent"] for e in trace["events"] if e.get("agent") != "RoundRobinGroupChat"}
        assert agents == {name[0] for name in expected}
        ask, answer = f"ask_{i}", f"answer_{i}"
        spoken = [(e["from"], e["to"]) for e in events_of(trace, "message", channel="agent")]
        assert spoken == [(ask, answer), (answer, ask), (ask, answer)][:turns]
        assert len(decisions_of(trace, "stop")) == 1
