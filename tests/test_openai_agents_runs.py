"""OpenAI Agents SDK runs recorded by orch-otel: the real SDK (runner, tools,
handoffs, guardrails, sessions, streaming), only the model scripted
(tests/openai_agents_apps.py). Expected facts come from each app's code."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents import RunConfig, Runner, add_trace_processor, set_tracing_disabled  # noqa: E402
from agents.exceptions import InputGuardrailTripwireTriggered, MaxTurnsExceeded  # noqa: E402
from agents.lifecycle import RunHooks  # noqa: E402
from agents.tracing import TracingProcessor  # noqa: E402
from conftest import check_trace, events_of, instrumentor_fixture  # noqa: E402

from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.vocabulary import Attr  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)


def _one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def _spans(captured, operation: str) -> list:
    return [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == operation]


def test_a_handoff_run_is_one_trace_with_a_new_instance_per_agent_segment(captured):
    assert apps.support()().final_output == "Your invoice is paid."
    trace = _one_trace(captured)
    assert trace["system"] == "openai_agents"
    root = events_of(trace, "orchestrator_decision", decision="stop", agent="support")
    assert len(root) == 1  # rooted at the workflow name
    # triage, billing, triage again after the back-handoff: three segments, two of triage
    instances = [e["instance"] for e in events_of(trace, "return") if e["agent"] in ("triage", "billing")]
    assert instances == ["triage#1", "billing#1", "triage#2"]


def test_a_handoff_is_the_agents_delegation_among_its_enabled_handoffs_with_the_models_call_id(captured):
    apps.support()()
    trace = _one_trace(captured)
    delegations = [(e["agent"], e["to"], e["options"]) for e in events_of(trace, "orchestrator_decision",
                                                                           decision="delegate")]
    assert delegations == [("triage", "billing", ["billing"]), ("billing", "triage", ["triage"])]  # refunds: disabled
    calls = [(e["agent"], e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")]
    assert calls == [("triage", "transfer_to_billing", "h1"), ("billing", "lookup_invoice", "t1"),
                     ("billing", "transfer_to_triage", "h2")]


def test_model_calls_carry_each_calls_own_usage_and_model(captured):
    apps.support()()
    llm = [(s.attributes[Attr.REQUEST_MODEL], s.attributes[Attr.INPUT_TOKENS], s.attributes[Attr.OUTPUT_TOKENS])
           for s in _spans(captured, "chat")]
    assert llm == [("ScriptedModel", 20, 3), ("ScriptedModel", 30, 4), ("ScriptedModel", 35, 3),
                   ("ScriptedModel", 40, 6)]


@pytest.mark.parametrize("capture", [False, True])
def test_model_inputs_are_recorded_only_with_capture_on(captured, monkeypatch, capture):
    """A model's input is the whole conversation so far: with capture off no
    call hashes it (nor the tools offered), as in the AutoGen and LangGraph
    integrations; replies, tool arguments and results keep their refs."""
    from orch_otel.recorder import get_recorder

    monkeypatch.setattr(get_recorder().content, "capture", capture)
    apps.support()()
    chats, tools = _spans(captured, "chat"), _spans(captured, "execute_tool")
    assert len(chats) == 4 and len(tools) == 3
    assert all(Attr.OUTPUT_REF in s.attributes for s in chats)
    assert all(Attr.INPUT_REF in s.attributes for s in tools)
    inputs = [(Attr.INPUT_REF in s.attributes, Attr.INPUT_MESSAGES in s.attributes, Attr.TOOLS_REF in s.attributes)
              for s in chats]
    if capture:
        assert inputs == [(True, True, True)] * 4  # every agent here has a tool or a handoff to offer
        first = json.loads(chats[0].attributes[Attr.INPUT_MESSAGES])
        assert first[0] == {"role": "system", "content": "Route the customer."}
    else:
        assert inputs == [(False, False, False)] * 4


def test_parallel_tools_overlap_and_a_raising_tool_is_an_error(captured):
    assert apps.parallel_tools().final_output == "a and b; c failed"
    trace = _one_trace(captured)
    results = {e["call_id"]: e["status"] for e in events_of(trace, "tool_result")}
    assert results == {"p1": "ok", "p2": "ok", "p3": "error"}
    tools = {s.attributes[Attr.TOOL_CALL_ID]: s for s in _spans(captured, "execute_tool")}
    a, b = tools["p1"], tools["p2"]  # the async tool waits for the sync one: both in flight at once
    assert a.start_ns < b.end_ns and b.start_ns < a.end_ns
    assert tools["p3"].attributes[Attr.ERROR_TYPE] == "RuntimeError"


def test_agents_as_tools_are_spawned_sub_agents_of_the_caller_inside_its_tool_calls(captured):
    assert apps.agents_as_tools().final_output == "report"
    trace = _one_trace(captured)
    spawns = sorted((e["agent"], e["to"]) for e in events_of(trace, "spawn"))
    assert spawns == [("manager", "researcher"), ("manager", "writer")]
    by_id = {s.span_id: s for s in captured.spans}
    for agent in ("researcher", "writer"):
        (span,) = [s for s in _spans(captured, "invoke_agent") if s.attributes[Attr.AGENT_NAME] == agent]
        assert by_id[span.parent_id].attributes[Attr.OPERATION] == "execute_tool"
    # each model call's own tokens: the manager's reply is not charged with its sub-agents' calls
    tokens = sorted((s.attributes[Attr.INPUT_TOKENS], s.attributes[Attr.OUTPUT_TOKENS]) for s in _spans(captured, "chat"))
    assert tokens == [(7, 1), (9, 1), (12, 4), (30, 2)]


def _stops(trace: dict) -> list[tuple]:
    return [(e["agent"], e["reason"], e.get("source"), e["forced"])
            for e in events_of(trace, "orchestrator_decision", decision="stop")]


def test_an_input_guardrail_tripwire_is_the_runs_forced_stop_naming_the_guardrail(captured):
    with pytest.raises(InputGuardrailTripwireTriggered):
        apps.input_tripwire()
    trace = _one_trace(captured)
    assert _stops(trace) == [("guarded", "input_guardrail_tripwire", "no_secrets", True)]
    assert events_of(trace, "message") == []  # the blocking guardrail ran before any model call


def test_an_input_guardrail_tripwire_of_a_run_inside_a_tool_is_its_spawned_agents_forced_stop(captured):
    """assistant, asked as desk's tool, is stopped by its blocking guardrail before its first turn: it is still
    desk's sub-agent (the SDK had started it), with no model call, stopped by the tripwire and failing with it;
    the tool failed, and desk goes on and answers."""
    from conftest import span_tree

    assert apps.nested_input_tripwire().final_output == "The assistant could not help."
    assert span_tree(captured.spans) == [("invoke_workflow helpdesk", [("invoke_agent desk", [
        ("chat ScriptedModel", []), ("execute_tool ask_assistant", [("invoke_agent assistant", [])]),
        ("chat ScriptedModel", [])])])]
    trace = _one_trace(captured)
    assert [(e["agent"], e["to"]) for e in events_of(trace, "spawn")] == [("desk", "assistant")]
    assert _stops(trace) == [("assistant", "input_guardrail_tripwire", "no_secrets", True),
                             ("desk", "end", None, False), ("helpdesk", "end", None, False)]
    (agent_return,) = events_of(trace, "return", agent="assistant")
    assert agent_return["status"] == "error"


def test_an_output_guardrail_tripwire_follows_the_agents_own_answer(captured):
    with pytest.raises(Exception, match="Guardrail"):
        apps.output_tripwire()
    trace = _one_trace(captured)
    assert _stops(trace) == [("assistant", "end", None, False),
                             ("guarded", "output_guardrail_tripwire", "polite", True)]


def test_max_turns_is_a_forced_stop_raised_or_answered_by_an_error_handler(captured):
    with pytest.raises(MaxTurnsExceeded):
        apps.max_turns()
    assert apps.max_turns_handled().final_output == "gave up"
    raised, handled = [check_trace(t) for t in captured.traces()]
    for trace in (raised, handled):
        assert _stops(trace) == [("polling", "max_turns", "max_turns", True)]
        (agent_return,) = events_of(trace, "return", agent="poller")
        assert agent_return["status"] == "error"  # the SDK marks the agent: Max turns exceeded
        assert [e["call_id"] for e in events_of(trace, "tool_call")] == ["m1", "m2"]


def test_tool_use_behavior_stops_are_the_agents_voluntary_stop_naming_the_tool(captured):
    assert apps.stop_on_first_tool().final_output == "sunny in Paris"
    assert apps.stop_at_tools().final_output == "sunny"
    first, at_tools = [check_trace(t) for t in captured.traces()]
    assert _stops(first) == [("forecaster", "stop_on_first_tool", "get_weather", False), ("weather", "end", None, False)]
    assert _stops(at_tools) == [("forecaster", "stop_at_tools", "finish", False), ("weather", "end", None, False)]


def test_a_streamed_run_is_recorded_like_the_same_run_not_streamed(captured):
    assert apps.support_streamed() == "Your invoice is paid."
    apps.support()()
    streamed, plain = [check_trace(t) for t in captured.traces()]

    def shape(trace: dict) -> list[tuple]:
        return [(e["type"], e["agent"], e.get("to"), e.get("call_id"), e.get("decision"), e.get("instance"))
                for e in trace["events"] if e["type"] != "message"]

    assert sorted(shape(streamed), key=str) == sorted(shape(plain), key=str)
    assert len(events_of(streamed, "message", channel="llm")) == 4


def test_two_runs_in_one_session_are_two_traces_of_one_task(captured):
    assert apps.two_runs_in_one_session() == ("Hello Ada.", "You are Ada.")
    first, second = [check_trace(t) for t in captured.traces()]
    assert first["trace_id"] != second["trace_id"]
    assert first["task_id"] == second["task_id"] == "conv-7"


def test_the_group_id_is_the_task_id(captured):
    apps.run(apps.support_agents(), run_config=RunConfig(workflow_name="support", group_id="thread-9"))
    assert _one_trace(captured)["task_id"] == "thread-9"


def _shape(trace: dict) -> list[tuple]:
    return [(e["type"], e["agent"], e.get("to"), e.get("call_id"), e.get("decision"), e.get("reason"))
            for e in trace["events"]]


def test_runs_are_recorded_the_same_with_the_sdks_tracing_disabled(captured):
    apps.support()()
    apps.run(apps.support_agents(), "Is invoice 42 paid?",
             run_config=RunConfig(workflow_name="support", tracing_disabled=True))
    set_tracing_disabled(True)
    try:
        apps.support()()
    finally:
        set_tracing_disabled(False)
    on, off_in_config, off_globally = [check_trace(t) for t in captured.traces()]
    assert _shape(off_in_config) == _shape(on) == _shape(off_globally)


def test_concurrent_runs_are_one_trace_each(captured):
    async def both():
        return await asyncio.gather(Runner.run(apps.support_agents(), "a", run_config=RunConfig(workflow_name="one")),
                                    Runner.run(apps.support_agents(), "b", run_config=RunConfig(workflow_name="two")))

    asyncio.run(asyncio.wait_for(both(), apps.TIMEOUT))
    traces = [check_trace(t) for t in captured.traces()]
    assert sorted(e["agent"] for t in traces for e in t["events"] if e.get("decision") == "stop"
                  and e["agent"] in ("one", "two")) == ["one", "two"]
    for trace in traces:
        assert [e["instance"] for e in events_of(trace, "return")] == ["triage#1", "billing#1", "triage#2"]


class _Counting(RunHooks):
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_agent_start(self, context, agent) -> None:
        self.seen.append(f"start {agent.name}")

    async def on_handoff(self, context, from_agent, to_agent) -> None:
        self.seen.append(f"handoff {from_agent.name}>{to_agent.name}")

    async def on_tool_end(self, context, agent, tool, result) -> None:
        self.seen.append(f"tool {tool.name}")

    async def on_agent_end(self, context, agent, output) -> None:
        self.seen.append(f"end {agent.name}")


def test_the_apps_own_run_hooks_see_every_callback(captured):
    hooks = _Counting()
    apps.support(hooks=hooks)()
    assert hooks.seen == ["start triage", "handoff triage>billing", "start billing", "tool lookup_invoice",
                          "handoff billing>triage", "start triage", "end triage"]
    _one_trace(captured)


def test_hooks_the_sdk_refuses_are_still_refused(captured):
    with pytest.raises(TypeError, match="Run hooks must be instances of RunHooks"):
        apps.support(hooks=object())()


class _Recording(TracingProcessor):
    """The SDK's own trace as its processors see it (no ids, no times)."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def on_trace_start(self, trace) -> None:
        self.events.append(("trace start", trace.name))

    def on_trace_end(self, trace) -> None:
        self.events.append(("trace end", trace.name))

    def on_span_start(self, span) -> None:
        self.events.append(("span start", json.dumps(span.span_data.export(), sort_keys=True, default=str)))

    def on_span_end(self, span) -> None:
        self.events.append(("span end", json.dumps(span.span_data.export(), sort_keys=True, default=str),
                            span.error and span.error.get("message")))

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def test_the_sdks_own_trace_is_the_same_with_and_without_orch_otel(instrumented, captured):
    processor = _Recording()
    add_trace_processor(processor)  # the SDK keeps its processors: this one stays for the process

    def sdk_trace(app) -> list[tuple]:
        processor.events.clear()
        app()
        return list(processor.events)

    with_orch = [sdk_trace(apps.support()), sdk_trace(apps.parallel_tools)]
    instrumented.uninstrument()
    try:
        without = [sdk_trace(apps.support()), sdk_trace(apps.parallel_tools)]
    finally:
        instrumented.instrument()
    processor.events.clear()  # inert from here on
    assert len(with_orch[0]) > 10 and with_orch[0] == without[0]  # one agent at a time: the same order
    assert sorted(with_orch[1], key=repr) == sorted(without[1], key=repr)  # parallel tools end in any order


def test_instrument_leaves_the_sdks_trace_processors_and_flags_alone(run_python):
    code = """
import orch_otel
from agents.tracing import get_trace_provider
from agents import RunConfig
before = list(get_trace_provider()._multi_processor._processors)
flags = (RunConfig().trace_include_sensitive_data, RunConfig().tracing_disabled)
orch_otel.instrument()
after = list(get_trace_provider()._multi_processor._processors)
assert before == after, (before, after)
assert flags == (RunConfig().trace_include_sensitive_data, RunConfig().tracing_disabled)
print("ok")
"""
    result = run_python(code)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_the_sdk_imported_after_instrument_is_patched_on_its_import():
    code = ("import sys, orch_otel\norch_otel.instrument()\nassert 'agents' not in sys.modules\n"
            "from agents.run import AgentRunner\nprint(hasattr(AgentRunner.run, '__orch_otel_original__'))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr


def test_run_sync_is_one_trace_like_run(captured):
    assert apps.support_sync().final_output == "Your invoice is paid."
    trace = _one_trace(captured)
    assert [e["instance"] for e in events_of(trace, "return") if e["agent"] != "support"] == [
        "triage#1", "billing#1", "triage#2"]


def test_an_agent_run_inside_a_guardrail_is_a_sub_agent_of_the_guarded_run(captured):
    assert apps.checked_by_an_agent().final_output == "hi"
    trace = _one_trace(captured)
    assert [(e["agent"], e["to"]) for e in events_of(trace, "spawn")] == [("checked", "checker")]
    assert _stops(trace) == [("checker", "end", None, False), ("assistant", "end", None, False),
                             ("checked", "end", None, False)]


def test_a_streamed_run_the_consumer_cancels_ends_its_trace_cancelled(captured):
    apps.support_streamed_cut_short()
    trace = _one_trace(captured)
    assert _stops(trace)[-1] == ("support", "cancelled", None, True)


def test_after_uninstrument_the_sdk_is_as_it_was_and_nothing_is_recorded(instrumented, captured):
    from agents.run import AgentRunner
    from agents.run_internal import run_loop

    instrumented.uninstrument()
    try:
        assert not hasattr(AgentRunner.run, "__orch_otel_original__")
        assert not hasattr(run_loop.get_handoffs, "__orch_otel_original__")
        assert apps.support()().final_output == "Your invoice is paid."
        assert captured.traces() == []
    finally:
        instrumented.instrument()
    assert hasattr(AgentRunner.run, "__orch_otel_original__")


def test_a_run_awaiting_approval_is_interrupted_and_its_resume_starts_with_the_humans_intervention(captured):
    first, second = apps.approved_after_interrupt()
    assert [i.raw_item.call_id for i in first.interruptions] == ["a1"] and second.final_output == "Refunded 5."
    interrupted, resumed = [check_trace(t) for t in captured.traces()]
    assert _stops(interrupted) == [("refunds", "interrupt", None, True)]
    assert events_of(interrupted, "tool_call") == []  # the refund waited for approval: it did not run
    (intervention,) = events_of(resumed, "human_intervention")
    assert resumed["events"][0] is intervention and intervention["resume_of"] == interrupted["trace_id"]
    # the approved refund runs in the resumed run, by the agent that asked for it: one instance of it
    assert [(e["agent"], e["call_id"], e["instance"]) for e in events_of(resumed, "tool_call")] == [
        ("cashier", "a1", "cashier#1")]
    assert _stops(resumed) == [("cashier", "end", None, False), ("refunds", "end", None, False)]


def test_example_runs_offline_with_the_sdks_tracing_off(run_python, tmp_path):
    example = str(Path(__file__).resolve().parents[1] / "examples" / "openai_agents_handoffs.py")
    code = f"""
import runpy, sys
sys.argv = ["openai_agents_handoffs.py", {str(tmp_path / 'out')!r}]
runpy.run_path({example!r}, run_name="__main__")
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "answer: Your invoice is paid." in result.stdout
    (path,) = (tmp_path / "out").glob("traces-*.jsonl")
    (trace,) = [json.loads(line) for line in path.read_text().splitlines()]
    check_trace(trace)
    assert [(e["agent"], e["to"]) for e in events_of(trace, "orchestrator_decision", decision="delegate")] == [
        ("triage", "billing"), ("billing", "triage")]


def test_a_run_is_recorded_with_the_sdks_tracing_disabled_by_its_environment_variable(run_python, tmp_path):
    """OPENAI_AGENTS_DISABLE_TRACING is read once, when the SDK sets its trace provider up: a fresh process."""
    tests = str(Path(__file__).resolve().parent)
    code = f"""
import sys
sys.path.insert(0, {tests!r})
import orch_otel
orch_otel.instrument(trace_dir={str(tmp_path / 'out')!r})
import openai_agents_apps as apps
from agents.tracing import get_trace_provider
apps.support()()
orch_otel.flush()
print("sdk tracing disabled:", get_trace_provider()._disabled)
"""
    result = run_python(code, env={"OPENAI_AGENTS_DISABLE_TRACING": "1"})
    assert result.returncode == 0, result.stderr
    assert "sdk tracing disabled: True" in result.stdout
    (path,) = (tmp_path / "out").glob("traces-*.jsonl")
    (trace,) = [json.loads(line) for line in path.read_text().splitlines()]
    check_trace(trace)
    assert [(e["agent"], e["to"]) for e in events_of(trace, "orchestrator_decision", decision="delegate")] == [
        ("triage", "billing"), ("billing", "triage")]
