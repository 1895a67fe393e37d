"""Wrong arguments to the public helpers and faults inside orch-otel never
reach the app: logged once, nothing recorded, the app's code runs and its own
results and exceptions pass through. Strict mode raises instead."""

from __future__ import annotations

import logging

import pytest

import orch_otel
from orch_otel import _faults as faults
from orch_otel.recorder import Recorder, get_recorder, set_recorder

WRONG_CALLS = {
    'reward("high")': lambda: orch_otel.reward("high"),
    "reward(None)": lambda: orch_otel.reward(None),
    "delegate(5)": lambda: orch_otel.delegate(5),
    "spawn(None)": lambda: orch_otel.spawn(None),
    "message(recipients=5)": lambda: orch_otel.message("hi", recipients=5),
    "aggregate(sources=7)": lambda: orch_otel.aggregate("x", sources=7),
}


@pytest.fixture
def lenient():
    previous = faults.set_strict(False)
    faults._warned.clear()
    yield
    faults.set_strict(previous)


@pytest.mark.parametrize("call", sorted(WRONG_CALLS))
def test_a_wrong_argument_to_a_helper_is_logged_once_and_ignored(call, lenient, captured, caplog):
    @orch_otel.agent("caller")
    def caller() -> str:
        WRONG_CALLS[call]()
        WRONG_CALLS[call]()
        return "the app's result"

    with caplog.at_level(logging.WARNING, logger="orch_otel"):
        assert caller() == "the app's result"
    warnings = [r for r in caplog.records if "failed; not recorded" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]  # once, not per call
    (trace,) = captured.traces()
    assert [e["type"] for e in trace["events"] if e["type"] != "orchestrator_decision"] == []  # nothing half-recorded
    assert [e.get("decision") for e in trace["events"]] == ["stop"]  # only the run's own end


def test_set_response_with_a_wrong_token_count_is_ignored(lenient, captured):
    @orch_otel.agent("caller")
    def caller() -> str:
        with orch_otel.llm_call("m") as call:
            call.set_response("ok", input_tokens="many", output_tokens=3)
        return "done"

    assert caller() == "done"
    (chat,) = [s for s in captured.spans if s.name == "chat m"]
    assert "gen_ai.usage.input_tokens" not in chat.attributes


class _BrokenTracer:
    def start_span(self, *args, **kwargs):
        raise RuntimeError("tracer fault")


def test_a_fault_inside_the_recorder_does_not_reach_the_app(lenient, captured):
    broken = Recorder()
    broken.tracer = _BrokenTracer()
    previous = get_recorder()
    set_recorder(broken)
    try:
        @orch_otel.tool
        def add(a: int, b: int) -> int:
            return a + b

        @orch_otel.agent("worker")
        async def worker() -> int:
            return add(1, 2)

        @orch_otel.agent("streamer")
        def streamer():
            yield 1
            yield 2

        with pytest.raises(ZeroDivisionError):  # the app's own exception still passes through
            with orch_otel.agent("ctx"):
                _ = 1 / 0
        import asyncio

        assert asyncio.run(worker()) == 3
        assert list(streamer()) == [1, 2]
        with orch_otel.llm_call("m") as call:
            call.set_response("x", input_tokens=1)
    finally:
        set_recorder(previous)
    assert captured.spans == []


def test_strict_mode_raises_for_tests(captured):
    previous = faults.set_strict(True)
    try:
        with pytest.raises(TypeError), orch_otel.agent("caller"):
            orch_otel.delegate(5)
    finally:
        faults.set_strict(previous)


SECRET = "sk-live-planted-9f3a1c"


class _SecretTracer:
    """A tracer whose fault message carries content, as a ParentCommand repr does."""

    def start_span(self, *args, **kwargs):
        raise RuntimeError(f"messages=[HumanMessage('my key is {SECRET}')]")


def _logged_text(records: list[logging.LogRecord]) -> list[str]:
    formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
    return [formatter.format(record) for record in records]  # message, traceback and chain, as a handler writes them


def _with_broken_recorder(instrumentor_class, run_app, caplog):
    """Instrument with a recorder whose every span start fails, run the app, return its result and the log."""
    broken = Recorder()
    broken.tracer = _SecretTracer()
    previous = get_recorder()
    set_recorder(broken)
    instrumentor = instrumentor_class()
    instrumentor.instrument()
    try:
        with caplog.at_level(logging.DEBUG, logger="orch_otel"):
            result = run_app()
    finally:
        instrumentor.uninstrument()
        set_recorder(previous)
    return result, _logged_text(caplog.records)


def test_a_fault_inside_a_langgraph_hook_logs_no_content(lenient, caplog):
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    class State(TypedDict):
        x: int

    graph = StateGraph(State)
    graph.add_node("step", lambda state: {"x": state["x"] + 1})
    graph.add_edge(START, "step")
    graph.add_edge("step", END)
    result, logged = _with_broken_recorder(LangGraphInstrumentor, lambda: graph.compile().invoke({"x": 1}), caplog)
    assert result == {"x": 2}
    assert any("on_chain_start failed (RuntimeError" in line for line in logged), logged  # the fault was logged
    assert [line for line in logged if SECRET in line] == []


def test_a_fault_inside_an_autogen_hook_logs_no_content(lenient, caplog):
    import asyncio

    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    from orch_otel.integrations.autogen import AutoGenInstrumentor
    from orch_otel.integrations.autogen.testing import replay

    def run_team():
        team = RoundRobinGroupChat([AssistantAgent("a", model_client=replay("a says hi"))],
                                   termination_condition=MaxMessageTermination(2))
        return asyncio.run(team.run(task="go")).stop_reason

    stop_reason, logged = _with_broken_recorder(AutoGenInstrumentor, run_team, caplog)
    assert stop_reason == "Maximum number of messages 2 reached, current message count: 2"
    assert any("AutoGen hook" in line and "(RuntimeError" in line for line in logged), logged
    assert [line for line in logged if SECRET in line] == []


def test_a_fault_inside_an_agent_framework_hook_logs_no_content(lenient, caplog):
    import asyncio

    from conftest import need_agent_framework

    need_agent_framework()
    import maf_apps as apps

    from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor

    async def run_apps():
        handoff = await apps.handoff().run("my bill")
        chunks = [u.text async for u in apps.weather_agent().run("weather?", stream=True)]
        concurrent = await apps.concurrent().run("q")
        return ([e.type for e in handoff], "".join(chunks),
                sorted(m.text for m in concurrent.get_outputs()[-1].messages if m.role == "assistant"))

    results, logged = _with_broken_recorder(AgentFrameworkInstrumentor, lambda: asyncio.run(run_apps()), caplog)
    kinds, streamed, answers = results
    assert "request_info" in kinds and "handoff_sent" in kinds  # the handoff happened, the user was asked
    assert streamed == "Paris and Rome are sunny."
    assert answers == ["maybe", "no", "yes"]
    assert any("Agent Framework hook" in line and "(RuntimeError" in line for line in logged), logged


class _FailsInsideRuns:
    """A tracer that starts a run's root span, then fails on every span inside it."""

    def __init__(self, tracer) -> None:
        self._tracer = tracer

    def start_span(self, name, *args, **kwargs):
        if name.startswith("invoke_workflow"):
            return self._tracer.start_span(name, *args, **kwargs)
        raise RuntimeError(f"messages=[{{'content': 'my key is {SECRET}'}}]")


def test_a_fault_inside_an_openai_agents_hook_logs_no_content(lenient, caplog):
    pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")
    import openai_agents_apps as apps

    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    broken = Recorder()
    broken.tracer = _FailsInsideRuns(broken.tracer)
    previous = get_recorder()
    set_recorder(broken)
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()
    try:
        with caplog.at_level(logging.DEBUG, logger="orch_otel"):
            answers = (apps.support()().final_output, apps.parallel_tools().final_output,
                       apps.agents_as_tools().final_output, apps.stop_on_first_tool().final_output)
            with pytest.raises(Exception, match="Guardrail"):  # the app's own exception still passes through
                apps.output_tripwire()
    finally:
        instrumentor.uninstrument()
        set_recorder(previous)
    assert answers == ("Your invoice is paid.", "a and b; c failed", "report", "sunny in Paris")
    logged = _logged_text(caplog.records)
    assert any("OpenAI Agents hook" in line and "(RuntimeError" in line for line in logged), logged
    assert [line for line in logged if SECRET in line] == []
