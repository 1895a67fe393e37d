"""LangGraph control flow: interrupt and resume, errors in nodes, the recursion
limit, and instrumenting / uninstrumenting."""

from __future__ import annotations

import langgraph_apps as apps
import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from langchain_core.tracers.context import _configure_hooks
from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from orch_otel import Attr
from orch_otel.content import ContentPolicy
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.recorder import get_recorder

instrumented = instrumentor_fixture(LangGraphInstrumentor)


def _interrupt_then_resume(captured, resume_value):
    app = apps.build_interrupt()
    config = {"configurable": {"thread_id": "thread-42"}}
    first = app.invoke(apps.user_input("write a post"), config)
    (pending,) = first["__interrupt__"]
    assert pending.value == {"question": "publish this draft?"}
    second = app.invoke(Command(resume=resume_value), config)
    assert second["messages"][-1].content == f"reviewer says {resume_value}"
    return captured.traces()


def _check_interrupt_pair(captured, interrupted: dict, resumed: dict, resume_value) -> None:
    for trace in (interrupted, resumed):
        check_trace(trace)
        assert trace["task_id"] == "thread-42"
    (stop,) = decisions_of(interrupted, "stop")
    assert (stop["agent"], stop["reason"], stop["status"]) == ("publishing", "interrupt", "ok")
    assert all(e["status"] == "ok" for e in interrupted["events"])  # an interrupt is not an error
    approval = events_of(interrupted, "return", agent="approval")[0]
    assert approval["outcome"] == "interrupted"
    assert agents_in(interrupted) == ["draft", "approval"]

    (human,) = events_of(resumed, "human_intervention")
    assert human["resume_of"] == interrupted["trace_id"] and human["to"] == "publishing"
    assert human["content_ref"] == ContentPolicy().apply(resume_value).ref
    assert agents_in(resumed) == ["approval"]  # the interrupted node runs again; draft does not
    assert decisions_of(resumed, "stop")[0]["reason"] == "end"
    root = next(s for s in captured.spans if s.trace_id == resumed["trace_id"] and s.parent_id is None)
    (link,) = root.links
    assert link.trace_id == interrupted["trace_id"]
    first_root = next(s for s in captured.spans if s.trace_id == interrupted["trace_id"] and s.parent_id is None)
    assert link.span_id == first_root.span_id
    assert first_root.attributes[Attr.OUTCOME] == "interrupted" and first_root.status == "unset"


def agents_in(trace: dict) -> list[str]:
    return [e["agent"] for e in events_of(trace, "return")]


def test_interrupt_then_resume_sync(captured):
    interrupted, resumed = _interrupt_then_resume(captured, "yes")
    _check_interrupt_pair(captured, interrupted, resumed, "yes")


async def test_interrupt_then_resume_async(captured):
    app = apps.build_interrupt()
    config = {"configurable": {"thread_id": "thread-42"}}
    first = await app.ainvoke(apps.user_input("write a post"), config)
    assert first["__interrupt__"]
    await app.ainvoke(Command(resume={"approved": True}), config)
    interrupted, resumed = captured.traces()
    _check_interrupt_pair(captured, interrupted, resumed, {"approved": True})


def test_exception_in_a_node_is_an_error_and_stops_the_run(captured):
    with pytest.raises(apps.BrokenNode, match="the node broke"):
        apps.build_failing().invoke(apps.user_input())
    (trace,) = captured.traces()
    check_trace(trace)
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"], stop["status"]) == ("failing", "error", "error")
    assert agents_in(trace) == ["ask"]  # 'explode' is a plain node: the error lands on the run
    root = next(s for s in captured.spans if s.parent_id is None)
    assert root.status == "error" and root.attributes[Attr.ERROR_TYPE] == "BrokenNode"
    assert [s.name for s in captured.spans if s.status == "error"] == ["invoke_workflow failing"]


async def test_exception_in_an_agent_node_marks_the_agent(captured):
    from langgraph.graph import START, StateGraph

    from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai

    model = FakeToolCallingModel(model_name="x-llm", responses=[ai("hm")])

    def thinker(state: apps.MessagesState) -> dict:
        model.invoke(state["messages"])
        raise apps.BrokenNode("after thinking")

    graph = StateGraph(apps.MessagesState)
    graph.add_node("thinker", thinker)
    graph.add_edge(START, "thinker")
    with pytest.raises(apps.BrokenNode):
        await graph.compile(name="g").ainvoke(apps.user_input())
    (trace,) = captured.traces()
    check_trace(trace)
    (ret,) = events_of(trace, "return")
    assert (ret["agent"], ret["status"]) == ("thinker", "error")
    assert decisions_of(trace, "stop")[0]["reason"] == "error"


def test_recursion_limit_stops_with_its_reason(captured):
    with pytest.raises(GraphRecursionError):
        apps.build_loop().invoke({}, {"recursion_limit": 3})
    (trace,) = captured.traces()
    check_trace(trace)
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"]) == ("loop", "recursion_limit")
    assert agents_in(trace) == ["thinker"] * 3
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [("thinker", "thinker")] * 3


def test_control_flow_is_registered_with_the_recorder():
    from langgraph.errors import GraphInterrupt, ParentCommand

    recorder = get_recorder()
    assert recorder.classify(ParentCommand(Command(goto="x"))) == "handoff"
    assert recorder.classify(GraphInterrupt(())) == "interrupted"


def test_uninstrument_stops_recording_and_instrument_again_works(captured, instrumented):
    instrumented.uninstrument()
    try:
        assert not any(hook[0] is instrumented._hook_var for hook in _configure_hooks)
        apps.build_fanout(2).invoke({})
        apps.build_supervisor().invoke(apps.user_input())
        assert captured.spans == []
        from langgraph._internal import _runnable

        assert not hasattr(_runnable._set_config_context, "__orch_otel_original__")
    finally:
        instrumented.instrument()
    apps.build_fanout(2).invoke({})
    (trace,) = captured.traces()
    check_trace(trace)
    assert len(events_of(trace, "spawn", to="worker")) == 2
    hooks = [hook for hook in _configure_hooks if hook[0] is instrumented._hook_var]
    assert len(hooks) == 1
