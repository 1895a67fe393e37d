"""LangGraph runtime conditions: every stream mode, concurrency (asyncio and
threads), spans started inside nodes, and the zero-code path."""

from __future__ import annotations

import asyncio
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated

import langgraph_apps as apps
import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from langchain.agents import create_agent
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.config import get_stream_writer
from langgraph.graph import START, StateGraph
from langgraph.types import Send
from opentelemetry import trace as otel_trace
from typing_extensions import TypedDict

import orch_otel
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

STREAM_MODES = ["values", "updates", "checkpoints", "tasks", "debug", "messages", "custom"]
SUPERVISOR_SPANS = 17


instrumented = instrumentor_fixture(LangGraphInstrumentor)


def check_supervisor_trace(trace: dict, task_id: str | None = None) -> None:
    check_trace(trace)
    if task_id is not None:
        assert trace["task_id"] == task_id
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("supervisor", "math_expert"), ("supervisor", "research_expert")]
    assert [e["agent"] for e in events_of(trace, "return")] == [
        "supervisor", "math_expert", "supervisor", "research_expert", "supervisor"]
    assert [c["tool"] for c in events_of(trace, "tool_call")] == [
        "transfer_to_math_expert", "add", "transfer_to_research_expert", "lookup"]
    # the supervisor's last turn answers with no handoff: it stops, then the workflow ends
    assert [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")] == [
        ("supervisor", "end"), ("supervision", "end")]


def spans_per_trace(captured) -> list[int]:
    return sorted(len(spans) for spans in captured.by_trace().values())


# -- stream modes -------------------------------------------------------------------------------

def _supervisor_with_checkpointer():
    app = apps.build_supervisor()
    app.checkpointer = MemorySaver()
    return app


@pytest.mark.parametrize("mode", [*STREAM_MODES, STREAM_MODES])
def test_every_stream_mode_sync(captured, mode):
    chunks = list(_supervisor_with_checkpointer().stream(
        apps.user_input(), {"configurable": {"thread_id": "s"}}, stream_mode=mode, subgraphs=True))
    assert chunks or mode == "custom"
    (trace,) = captured.traces()
    check_supervisor_trace(trace, "s")
    assert len(captured.spans) == SUPERVISOR_SPANS


@pytest.mark.parametrize("mode", [*STREAM_MODES, STREAM_MODES])
async def test_every_stream_mode_async(captured, mode):
    chunks = [c async for c in _supervisor_with_checkpointer().astream(
        apps.user_input(), {"configurable": {"thread_id": "a"}}, stream_mode=mode)]
    assert chunks or mode == "custom"
    (trace,) = captured.traces()
    check_supervisor_trace(trace, "a")
    assert len(captured.spans) == SUPERVISOR_SPANS


async def test_astream_events(captured):
    kinds = {event["event"] async for event in apps.build_supervisor().astream_events(apps.user_input(), version="v2")}
    assert {"on_chain_start", "on_chat_model_start", "on_tool_start"} <= kinds
    (trace,) = captured.traces()
    check_supervisor_trace(trace)
    assert len(captured.spans) == SUPERVISOR_SPANS


def test_custom_stream_chunks_from_a_node(captured):
    def talk(state: apps.MessagesState) -> dict:
        get_stream_writer()({"progress": 1})
        return {}

    graph = StateGraph(apps.MessagesState)
    graph.add_node("talk", talk)
    graph.add_edge(START, "talk")
    assert list(graph.compile(name="talky").stream(apps.user_input(), stream_mode="custom")) == [{"progress": 1}]
    (trace,) = captured.traces()
    check_trace(trace)
    assert captured.names() == ["invoke_workflow talky"]  # a plain node adds no span


# -- concurrency ----------------------------------------------------------------------------------

async def test_fifty_concurrent_ainvoke_runs_give_fifty_traces(captured):
    app = apps.build_supervisor()  # one compiled app, shared by every run

    async def one(i: int):
        return await app.ainvoke(apps.user_input(f"question {i}"), {"metadata": {"orch.task_id": f"task-{i}"}})

    outs = await asyncio.gather(*(one(i) for i in range(50)))
    assert all(out["messages"][-1].content == "all done" for out in outs)
    traces = captured.traces()
    assert len(traces) == 50
    assert sorted(t["task_id"] for t in traces) == sorted(f"task-{i}" for i in range(50))
    for trace in traces:
        check_supervisor_trace(trace)
    assert spans_per_trace(captured) == [SUPERVISOR_SPANS] * 50
    assert sum(1 for s in captured.spans if s.parent_id is None) == 50


async def test_concurrent_fan_outs_keep_their_branches(captured):
    await asyncio.gather(*(apps.build_fanout(n).ainvoke({}) for n in (2, 3, 4)))
    traces = captured.traces()
    assert len(traces) == 3
    widths = sorted(len(events_of(t, "spawn", to="worker")) for t in traces)
    assert widths == [2, 3, 4]
    for trace in traces:
        check_trace(trace)
        (agg,) = events_of(trace, "aggregate")
        assert len(agg["sources"]) == len(events_of(trace, "spawn", to="worker"))


def test_runs_in_threads_give_one_trace_each(captured):
    app = apps.build_supervisor()
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda i: app.invoke(apps.user_input(), {"metadata": {"orch.task_id": f"th-{i}"}}), range(12)))
    traces = captured.traces()
    assert sorted(t["task_id"] for t in traces) == sorted(f"th-{i}" for i in range(12))
    for trace in traces:
        check_supervisor_trace(trace)
    assert spans_per_trace(captured) == [SUPERVISOR_SPANS] * 12


# -- spans started inside nodes nest under the node's span ------------------------------------------

tracer = otel_trace.get_tracer("user-code")


@orch_otel.tool
def score(text: str) -> int:
    return len(text)


@tool
def measured(query: str) -> str:
    """A tool that does traced work of its own."""
    with tracer.start_as_current_span("inside_tool"):
        return query.upper()


class NestState(TypedDict, total=False):
    messages: Annotated[list, apps.add_messages]
    items: list[str]
    scores: Annotated[list[int], lambda a, b: a + b]


def build_nesting_app():
    think_model = FakeToolCallingModel(model_name="think-llm", responses=[ai("thought")])
    agent_model = FakeToolCallingModel(model_name="tool-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("measured", {"query": "q"}, "call_m")]), ai("ok")])

    def plain(state: NestState) -> dict:
        with tracer.start_as_current_span("plain_work"):
            pass
        return {"items": ["a", "b"]}

    def fan(state: NestState) -> list[Send]:
        return [Send("worker", {"items": [item]}) for item in state["items"]]

    def worker(state: NestState) -> dict:
        with tracer.start_as_current_span("worker_work"):
            return {"scores": [score(state["items"][0])]}

    def thinker(state: NestState) -> dict:
        reply = think_model.invoke([apps.HumanMessage("think")])
        with tracer.start_as_current_span("after_llm"):
            pass
        return {"messages": [reply]}

    graph = StateGraph(NestState)
    graph.add_node("plain", plain)
    graph.add_node("worker", worker)
    graph.add_node("thinker", thinker)
    graph.add_node("helper", create_agent(agent_model, [measured], name="helper"))
    graph.add_edge(START, "plain")
    graph.add_conditional_edges("plain", fan, ["worker"])
    graph.add_edge("worker", "thinker")
    graph.add_edge("thinker", "helper")
    return graph.compile(name="nesting")


def check_nesting(captured) -> None:
    spans = captured.spans
    by_id = {s.span_id: s for s in spans}
    assert len(captured.by_trace()) == 1

    def parent_of(name: str) -> list[str]:
        return [by_id[s.parent_id].name for s in spans if s.name == name]

    assert parent_of("plain_work") == ["invoke_workflow nesting"]  # a plain node belongs to its enclosing agent
    assert parent_of("worker_work") == ["invoke_agent worker"] * 2
    assert parent_of("execute_tool score") == ["worker_work"] * 2  # decorators inside nodes nest too
    assert parent_of("after_llm") == ["invoke_agent thinker"]
    assert parent_of("inside_tool") == ["execute_tool measured"]
    workers = {s.span_id for s in spans if s.name == "invoke_agent worker"}
    assert {s.parent_id for s in spans if s.name == "worker_work"} == workers  # each under its own branch
    (trace,) = captured.traces()
    check_trace(trace)
    assert sorted(e["agent"] for e in events_of(trace, "tool_call", tool="score")) == ["worker", "worker"]


def test_spans_in_nodes_nest_under_the_node_sync(captured):
    build_nesting_app().invoke({"messages": []})
    check_nesting(captured)
    assert otel_trace.get_current_span() is otel_trace.INVALID_SPAN


async def test_spans_in_nodes_nest_under_the_node_async(captured):
    await build_nesting_app().ainvoke({"messages": []})
    check_nesting(captured)
    assert otel_trace.get_current_span() is otel_trace.INVALID_SPAN  # nothing leaks into the caller


async def test_graph_inside_a_user_span_nests_under_it(captured):
    with tracer.start_as_current_span("request"):
        await apps.build_fanout(2).ainvoke({})
        await apps.build_fanout(2).ainvoke({})
    roots = [s for s in captured.spans if s.name == "invoke_workflow fanout"]
    request = next(s for s in captured.spans if s.name == "request")
    assert [r.parent_id for r in roots] == [request.span_id] * 2  # siblings: the first run did not leak


# -- zero code ----------------------------------------------------------------------------------

ZERO_CODE_APP = """
import asyncio
from orch_otel.integrations.langgraph.demo import run_demo_app
out = asyncio.run(run_demo_app("zero-code-1"))
print(out["messages"][-1].content)
"""


def test_opentelemetry_instrument_zero_code(run_zero_code, tmp_path):
    trace_dir = tmp_path / "traces"
    result = run_zero_code(ZERO_CODE_APP, trace_dir)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "The report is ready."
    files = sorted(trace_dir.glob("traces-*.jsonl"))
    assert len(files) == 1
    (trace,) = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    check_trace(trace)
    assert trace["task_id"] == "zero-code-1"
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("supervisor", "research_team"), ("supervisor", "writer")]
    assert len(events_of(trace, "spawn", agent="research_team", to="worker")) == 3
    assert len(events_of(trace, "tool_call")) == 6
    assert decisions_of(trace, "stop")[0]["reason"] == "end"


def test_the_supervisor_example_runs_offline(tmp_path):
    import subprocess

    example = Path(__file__).resolve().parents[1] / "examples" / "langgraph_supervisor.py"
    result = subprocess.run([sys.executable, str(example), str(tmp_path)], capture_output=True, text=True, check=False,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (path,) = tmp_path.glob("traces-*.jsonl")
    (trace,) = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    check_trace(trace)
    assert (trace["task_id"], trace["topology"]) == ("example-supervisor-1", "centralized")
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("supervisor", "math_expert"), ("supervisor", "research_expert")]
    assert [c["tool"] for c in events_of(trace, "tool_call")] == [
        "transfer_to_math_expert", "add", "transfer_to_research_expert", "lookup"]
