"""LangGraph routing facts of issue 13: router targets through path maps,
routes and ``Command`` gotos to END as the deciding agent's stop, the options
of every delegation, the supervisor's own stop, and the recursion limit as a
forced stop. Expected values come from the apps' code (tests/langgraph_apps.py)."""

from __future__ import annotations

from uuid import uuid4

import langgraph_apps as apps
import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import GraphRecursionError

from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.vocabulary import Attr, SpanEvent

instrumented = instrumentor_fixture(LangGraphInstrumentor)


def delegations(trace: dict) -> list[tuple[str, str, set[str] | None]]:
    return [(d["agent"], d["to"], set(d["options"]) if "options" in d else None)
            for d in decisions_of(trace, "delegate")]


def stops(trace: dict) -> list[tuple[str, str, bool]]:
    return [(d["agent"], d["reason"], d["forced"]) for d in decisions_of(trace, "stop")]


def test_path_map_router_delegates_to_the_mapped_node_and_its_end_route_is_a_stop(captured):
    apps.build_path_map_router().invoke(apps.user_input("find out"))
    (trace,) = captured.traces()
    check_trace(trace)
    # "go_research" is a label: the path map sends it to researcher; "FINISH" maps to END
    assert delegations(trace) == [("supervisor", "researcher", {"researcher"})]
    assert stops(trace) == [("supervisor", "end", False), ("path_map", "end", False)]
    (delegation,) = decisions_of(trace, "delegate")
    spawn = events_of(trace, "spawn", to="researcher")[0]
    assert {"src": delegation["id"], "dst": spawn["id"], "type": "causal"} in trace["edges"]


async def test_path_map_router_async(captured):
    await apps.build_path_map_router().ainvoke(apps.user_input("find out"))
    (trace,) = captured.traces()
    assert delegations(trace) == [("supervisor", "researcher", {"researcher"})]
    assert stops(trace)[0] == ("supervisor", "end", False)


def test_command_goto_end_is_a_stop_by_that_nodes_agent(captured):
    apps.build_command_end().invoke(apps.user_input("it crashes"))
    (trace,) = captured.traces()
    check_trace(trace)
    assert stops(trace) == [("fixer", "end", False), ("command_end", "end", False)]


def test_command_literal_return_type_gives_the_options(captured):
    apps.build_command_end().invoke(apps.user_input("it crashes"))
    (trace,) = captured.traces()
    # Command[Literal["fixer", "__end__"]]: END is the stop option, not a delegation target
    assert delegations(trace) == [("triager", "fixer", {"fixer"})]


def test_declared_destinations_are_the_options_of_command_handoffs(captured):
    apps.build_command_handoffs().invoke(apps.user_input())
    (trace,) = captured.traces()
    # planner: destinations=("team",); lead hands off from inside team, which the parent declares -> reviewer
    assert delegations(trace) == [("planner", "team", {"team"}), ("lead", "reviewer", {"reviewer"})]


@pytest.mark.parametrize(("build", "workflow"), [(apps.build_router, "helpdesk"),
                                               (apps.build_literal_router, "literal_router")])
@pytest.mark.parametrize("route", ["billing", "tech"])
def test_declared_router_targets_are_the_options(captured, build, workflow, route):
    build(route).invoke(apps.user_input())
    (trace,) = captured.traces()
    assert delegations(trace) == [("triage", route, {"billing", "tech"})]
    # billing/tech -> END is the graph's static edge, not the worker's choice: only the workflow stops
    assert stops(trace) == [(workflow, "end", False)]


def test_supervisor_options_are_its_handoff_tools_and_its_answer_is_its_stop(captured):
    apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
    (trace,) = captured.traces()
    workers = {"math_expert", "research_expert"}
    assert delegations(trace) == [("supervisor", "math_expert", workers), ("supervisor", "research_expert", workers)]
    assert stops(trace) == [("supervisor", "end", False), ("supervision", "end", False)]


def test_swarm_options_are_the_router_path_map_and_the_active_agents_handoff_tools(captured):
    apps.build_swarm().invoke(apps.user_input(), {"configurable": {"thread_id": "t-swarm"}})
    (trace,) = captured.traces()
    assert delegations(trace) == [("swarm", "Alice", {"Alice", "Bob"}), ("Alice", "Bob", {"Bob"})]
    assert stops(trace) == [("Bob", "end", False), ("swarm", "end", False)]


def test_recursion_limit_is_a_forced_stop_recorded_as_such(captured):
    with pytest.raises(GraphRecursionError):
        apps.build_loop().invoke({}, {"recursion_limit": 3})
    (trace,) = captured.traces()
    check_trace(trace)
    assert stops(trace) == [("loop", "recursion_limit", True)]
    root = next(s for s in captured.spans if s.parent_id is None)
    (stop,) = [e for e in root.events if e.name == SpanEvent.DECISION and e.attributes.get(Attr.DECISION) == "stop"]
    assert stop.attributes.get(Attr.STOP_FORCED) is True  # on the span itself, for readers of raw spans
    assert delegations(trace) == [("thinker", "thinker", {"thinker"})] * 3


class _RunIds(BaseCallbackHandler):
    def __init__(self) -> None:
        self.roots: list = []

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):
        if parent_run_id is None:
            self.roots.append(run_id)


def test_the_callers_config_and_handlers_are_untouched(captured):
    handler = _RunIds()
    run_id = uuid4()
    out = apps.build_path_map_router().invoke(apps.user_input(), {"run_id": run_id, "callbacks": [handler]})
    assert out["messages"][-1].content == "finish"
    assert handler.roots == [run_id]
    (trace,) = captured.traces()
    assert delegations(trace) == [("supervisor", "researcher", {"researcher"})]


def test_uninstrument_restores_the_wrapped_pregel_method(instrumented):
    from langgraph.pregel.main import Pregel

    original = Pregel._defaults.__orch_otel_original__
    instrumented.uninstrument()
    try:
        assert Pregel._defaults is original
    finally:
        instrumented.instrument()


async def test_concurrent_runs_each_resolve_their_own_graph(captured):
    import asyncio

    runs = [apps.build_path_map_router().ainvoke(apps.user_input()) for _ in range(8)]
    runs += [apps.build_literal_router("billing").ainvoke(apps.user_input()) for _ in range(8)]
    await asyncio.gather(*runs)
    traces = captured.traces()
    assert len(traces) == 16
    got = sorted(repr(delegations(trace)) for trace in traces)
    assert got == sorted([repr([("supervisor", "researcher", {"researcher"})])] * 8
                         + [repr([("triage", "billing", {"billing", "tech"})])] * 8)


def test_send_fan_out_spawn_decision_carries_the_edges_declared_targets(captured):
    apps.build_fanout(3).invoke({})
    (trace,) = captured.traces()
    (spawn,) = [d for d in decisions_of(trace, "spawn") if not d.get("implied")]
    assert (spawn["agent"], spawn["targets"], spawn["options"]) == ("fanout", ["worker"] * 3, ["worker"])


# -- issue 32: the shapes the docs teach (apps in tests/langgraph_shapes.py) -------------------------

def _tool_loop_truth():
    import fidelity_cases_langgraph

    return next(c.truth for c in fidelity_cases_langgraph.DOCS_SHAPES if c.truth.app.startswith("hand-written"))


async def test_the_tool_loop_is_one_agent_instance_under_ainvoke_and_astream(captured):
    import langgraph_shapes as shapes
    from fidelity import assert_faithful

    await shapes.build_tool_loop_router().ainvoke(apps.user_input("fix it"))
    async for _ in shapes.build_tool_loop_router().astream(apps.user_input("fix it"), stream_mode="updates"):
        pass
    traces = captured.traces()
    assert len(traces) == 2
    for trace in traces:
        check_trace(trace)
        assert_faithful(trace, _tool_loop_truth())
    coder_spans = [s for s in captured.spans if s.name == "invoke_agent coder"]
    assert len(coder_spans) == 2  # one per run: the coder's two model turns share its span


def test_the_tool_loop_in_concurrent_runs_keeps_each_runs_agent_apart(captured):
    from concurrent.futures import ThreadPoolExecutor

    import langgraph_shapes as shapes
    from fidelity import assert_faithful

    app = shapes.build_tool_loop_router()  # one compiled graph, four runs at once
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: app.invoke(apps.user_input("fix it")), range(4)))
    traces = captured.traces()
    assert len(traces) == 4
    for trace in traces:
        assert_faithful(trace, _tool_loop_truth())


def test_a_tool_node_that_leads_elsewhere_ends_the_agents_turn(captured):
    """coder -> tools -> writer: the tools ran coder's calls, then coder's turn is
    over; writer is the graph's next agent, not started while coder runs."""
    import langgraph_shapes as shapes
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

    coder_model = FakeToolCallingModel(model_name="coder-llm", responses=[
        ai(tool_calls=[tool_call("run_code", {"code": "x"}, "call_x")])])
    writer_model = FakeToolCallingModel(model_name="writer-llm", responses=[ai("written")])
    graph = StateGraph(apps.RouteState)
    graph.add_node("coder", lambda s: {"messages": [coder_model.bind_tools([shapes.run_code]).invoke(s["messages"])]})
    graph.add_node("tools", ToolNode([shapes.run_code]))
    graph.add_node("writer", lambda s: {"messages": [writer_model.invoke(s["messages"])]})
    graph.add_edge(START, "coder")
    graph.add_conditional_edges("coder", tools_condition)
    graph.add_edge("tools", "writer")
    graph.add_edge("writer", END)
    graph.compile(name="handover").invoke(apps.user_input("x"))
    (trace,) = captured.traces()
    check_trace(trace)
    kinds = [(e["type"], e.get("agent"), e.get("to")) for e in trace["events"] if e["type"] in ("spawn", "return")]
    assert kinds == [("spawn", "handover", "coder"), ("return", "coder", "handover"),
                     ("spawn", "handover", "writer"), ("return", "writer", "handover")]
    assert [(e["agent"], e["tool"]) for e in events_of(trace, "tool_call")] == [("coder", "run_code")]
    assert not decisions_of(trace, "delegate")  # routing to the tools node is no delegation


@pytest.mark.parametrize(("build", "graph_input", "spans"), [
    # workflow, triage + its model call, coder (one span for its loop) + 2 model calls, run_code
    ("build_tool_loop_router", "messages", 7),
    # workflow (lead) + 3 model calls, 3 tools, researcher x 2 (each 2 model calls, lookup), writer + 1 model call
    ("build_agents_as_tools", "messages", 17),
    # workflow, planner + its model call, 3 x (worker, model call, lookup)
    ("build_planner_split", "messages", 12),
])
def test_spans_per_run_of_the_docs_shapes(captured, build, graph_input, spans):
    """The counts docs/langgraph.md gives ("Spans per run")."""
    import langgraph_shapes as shapes

    getattr(shapes, build)().invoke(apps.user_input("go"))
    assert len(captured.spans) == spans
