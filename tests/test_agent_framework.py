"""Microsoft Agent Framework: what instrument() writes (one trace per run, none
made of the framework's own spans), the framework's spans suppressed without
switching them off for good or kept on request, lazy patching, and the stops
the fidelity suite does not cover (cancellation, the superstep limit).

The framework and its builders are the real ones; only the model is scripted
(tests/maf_apps.py). App truths are written by hand from that code."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import REPO, check_trace, decisions_of, events_of, instrumentor_fixture, need_agent_framework

need_agent_framework()

import maf_apps as apps  # noqa: E402

from orch_otel import testing  # noqa: E402
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor  # noqa: E402
from orch_otel.tracefiles import read_lines, trace_files  # noqa: E402

instrumented = instrumentor_fixture(AgentFrameworkInstrumentor)

TESTS = str(REPO / "tests")

# Two runs of one Sequential workflow (built once) and one standalone agent run.
RUNS = f"""
import asyncio, sys
sys.path.insert(0, {TESTS!r})
import maf_apps as apps
workflow = apps.sequential()
asyncio.run(workflow.run("first"))
workflow = apps.sequential()
asyncio.run(workflow.run("second"))
asyncio.run(apps.weather_agent().run("weather?"))
import orch_otel
orch_otel.flush()
"""

# Spans as the SDK sees them: (scope, name, parent name) of each.
SPANS = """
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orch_otel import testing
exporter = InMemorySpanExporter()
testing.ensure_sdk_provider().add_span_processor(SimpleSpanProcessor(exporter))

def spans():
    finished = exporter.get_finished_spans()
    names = {s.context.span_id: s.name for s in finished}
    exporter.clear()
    return [(s.instrumentation_scope.name, s.name, names.get(s.parent.span_id) if s.parent else None,
             s.context.trace_id) for s in finished]
"""


def _traces_in(directory: Path) -> list[dict]:
    if not directory.exists():
        return []
    return [check_trace(line.trace) for path in trace_files([directory]) for line in read_lines(path)]


def test_instrument_writes_one_trace_per_run_and_none_of_the_frameworks_own_spans(run_python, tmp_path):
    """The issue's defect: instrument() wrote trace files made only of the
    framework's spans, and a one-span trace per workflow.build()."""
    code = (f"import sys, orch_otel\norch_otel.instrument(trace_dir={str(tmp_path / 't')!r})\n"
            "print('agent_framework' in sys.modules)\n" + RUNS)
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False"]  # instrument() imported no framework
    traces = _traces_in(tmp_path / "t")
    roots = sorted((t["system"], t["events"][0]["agent"]) for t in traces)
    assert roots == [("agent_framework", "Sequential"), ("agent_framework", "Sequential"),
                     ("agent_framework", "weather")]
    for trace in traces:  # no trace is only a stop implied by the converter
        assert len(trace["events"]) > 1, trace
        assert [d["agent"] for d in decisions_of(trace, "stop")] in (["Sequential"], ["weather"])


def test_uninstrument_gives_the_framework_its_own_spans_back(run_python):
    """Suppression is not the framework's sticky disable_instrumentation()."""
    code = SPANS + f"""
import asyncio, sys
sys.path.insert(0, {TESTS!r})
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
import maf_apps as apps
from agent_framework.observability import OBSERVABILITY_SETTINGS
instrumentor = AgentFrameworkInstrumentor()
instrumentor.instrument()
asyncio.run(apps.weather_agent().run("weather?"))
print(sorted({{scope for scope, *_ in spans()}}))
instrumentor.uninstrument()
asyncio.run(apps.weather_agent().run("weather?"))
print(sorted({{scope for scope, *_ in spans()}}), OBSERVABILITY_SETTINGS.ENABLED)
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["['orch_otel']", "['agent_framework'] True"]


def test_runtime_spans_keeps_the_frameworks_spans_inside_the_run_only(run_python):
    code = SPANS + f"""
import asyncio, sys
sys.path.insert(0, {TESTS!r})
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
import maf_apps as apps
AgentFrameworkInstrumentor().instrument(runtime_spans=True)
workflow = apps.sequential()  # workflow.build outside any run: no span, no trace of its own
asyncio.run(workflow.run("go"))
print(json.dumps(spans()))
"""
    result = run_python("import json\n" + code)
    assert result.returncode == 0, result.stderr
    spans = json.loads(result.stdout.splitlines()[-1])
    assert len({trace_id for *_, trace_id in spans}) == 1
    mine = {(name, parent) for scope, name, parent, _ in spans if scope == "orch_otel"}
    theirs = {name for scope, name, _, _ in spans if scope == "agent_framework"}
    assert "workflow.build" not in theirs and "invoke_workflow Sequential" in theirs
    assert {"invoke_agent drafter", "executor.process drafter", "chat scripted-model"} <= theirs
    # The framework's spans nest under orch-otel's: the workflow's run span is orch-otel's root.
    assert ("invoke_workflow Sequential", None) in mine
    assert ("invoke_workflow Sequential", "invoke_workflow Sequential") in {
        (name, parent) for scope, name, parent, _ in spans if scope == "agent_framework"}


def test_a_streamed_agents_spans_stay_under_its_invocation(captured):
    """The framework re-activates its own (suppressed) span around each stream
    pull: orch-otel's model and tool spans keep the agent's span as parent."""

    async def run():
        async for _ in apps.weather_agent().run("weather?", stream=True):
            pass

    asyncio.run(run())
    by_id = {s.span_id: s for s in captured.spans}
    agent = next(s for s in captured.spans if s.name == "invoke_agent weather")
    children = sorted(s.name for s in captured.spans if s.parent_id == agent.span_id)
    assert children == ["chat scripted-model", "chat scripted-model", "execute_tool get_weather",
                        "execute_tool get_weather"]
    assert len(by_id) == 5 and agent.parent_id is None
    (trace,) = captured.traces()
    chats = events_of(trace, "message", channel="llm")
    assert [(c["model"], c["provider"], c["input_tokens"], c["output_tokens"]) for c in chats] == [
        ("scripted-model", "scripted", 7, 3)] * 2


def _cancelled(run_it, client) -> tuple[dict, dict[str, str | None]]:
    """The trace of a run cancelled while ``client`` answers (a model call in
    progress), and each span's outcome by name."""

    async def cancel_mid_call() -> None:
        client.waiting = asyncio.Event()
        task = asyncio.ensure_future(run_it())
        await asyncio.wait_for(client.waiting.wait(), 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with testing.capture() as captured:
        asyncio.run(cancel_mid_call())
    (trace,) = captured.traces()
    return check_trace(trace), {s.name: s.attributes.get("orch.outcome") for s in captured.spans}


def test_an_agent_cancelled_mid_model_call_stops_cancelled_not_error():
    slow = apps.weather_agent(["never answered"])
    slow.client.delay = 30  # type: ignore[attr-defined]
    trace, outcomes = _cancelled(lambda: slow.run("weather?"), slow.client)
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"], stop["forced"]) == ("weather", "cancelled", True)
    assert outcomes == {"chat scripted-model": "cancelled", "invoke_agent weather": "cancelled"}
    assert [e["status"] for e in events_of(trace, "message", channel="llm")] == ["ok"]  # not an error


def test_a_workflow_cancelled_mid_model_call_stops_cancelled():
    workflow = apps.sequential()
    drafter = workflow.executors["drafter"].agent
    drafter.client.delay = 30

    async def consume():
        async for _ in workflow.run("go", stream=True):
            pass

    trace, outcomes = _cancelled(consume, drafter.client)
    assert outcomes == {"chat scripted-model": "cancelled", "invoke_agent drafter": "cancelled",
                        "invoke_workflow Sequential": "cancelled"}
    stops = [(d["agent"], d["reason"], d["forced"]) for d in decisions_of(trace, "stop")]
    assert stops == [("Sequential", "cancelled", True)]
    assert [d["to"] for d in decisions_of(trace, "delegate")] == ["drafter"]


def test_the_superstep_limit_is_a_forced_stop():
    """helpdesk loops triage -> billing -> triage ...; max_iterations=2 cuts it."""
    from agent_framework.exceptions import WorkflowConvergenceException

    workflow = apps.switch_case_loop(max_iterations=2)
    with testing.capture() as captured:
        with pytest.raises(WorkflowConvergenceException):
            asyncio.run(workflow.run("help"))
    (trace,) = captured.traces()
    check_trace(trace)
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"], stop["forced"]) == ("helpdesk", "recursion_limit", True)
    assert [d["to"] for d in decisions_of(trace, "delegate")] == ["triage", "billing"]


def test_a_responses_continuation_is_linked_to_the_run_that_asked():
    with testing.capture() as captured:
        asyncio.run(apps.handoff_and_resume())
    first, second = (check_trace(t) for t in captured.traces())
    assert [(d["reason"], d["forced"]) for d in decisions_of(first, "stop") if d["agent"] == "Handoff"] == [
        ("interrupt", True)]
    assert second["task_id"] == first["task_id"]
    (answer,) = events_of(second, "human_intervention")
    assert answer["resume_of"] == first["trace_id"]
    root = next(s for s in captured.spans if s.trace_id == second["trace_id"] and s.parent_id is None)
    assert [link.trace_id for link in root.links] == [first["trace_id"]]


def test_uninstrument_removes_every_patch_the_orchestrations_too(run_python):
    code = """
import orch_otel
orch_otel.instrument()
import agent_framework_orchestrations  # patched on its import, after agent_framework's
from agent_framework import Agent
from agent_framework_orchestrations._base_group_chat_orchestrator import BaseGroupChatOrchestrator as B
print(type(vars(Agent)["run"]).__name__, type(vars(B)["_send_request_to_participant"]).__name__)
orch_otel.uninstrument()
print(type(vars(Agent)["run"]).__name__, type(vars(B)["_send_request_to_participant"]).__name__)
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["FunctionWrapper FunctionWrapper", "function function"]


def test_a_checkpointed_request_answered_on_a_new_workflow_object_resumes_the_same_task():
    with testing.capture() as captured:
        asyncio.run(apps.handoff_resumed_from_checkpoint())
    first, second = (check_trace(t) for t in captured.traces())
    roots = [s for s in captured.spans if s.parent_id is None]
    assert len({s.attributes["gen_ai.conversation.id"] for s in roots}) == 2  # two Workflow objects
    assert second["task_id"] == first["task_id"]
    (answer,) = events_of(second, "human_intervention")
    assert answer["resume_of"] == first["trace_id"]
    assert [(d["agent"], d["to"]) for d in decisions_of(second, "delegate")] == [("Handoff", "billing")]


def test_a_raising_tool_is_an_error_span_and_the_run_goes_on(captured):
    asyncio.run(apps.flaky_agent().run("look it up"))
    (trace,) = captured.traces()
    check_trace(trace)
    (result,) = events_of(trace, "tool_result", call_id="f1")
    assert result["status"] == "error"
    tool = next(s for s in captured.spans if s.name == "execute_tool flaky_lookup")
    assert "exception.message" not in {k for e in tool.events for k in e.attributes}  # content stays out
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"]) == ("weather", "end")


def test_parallel_workflow_runs_are_separate_traces(captured):
    async def many():
        await asyncio.gather(*(apps.sequential().run(f"task {i}") for i in range(8)))

    asyncio.run(many())
    traces = captured.traces()
    assert len(traces) == 8
    for trace in traces:
        check_trace(trace)
        assert [d["to"] for d in decisions_of(trace, "delegate")] == ["drafter", "reviewer"]
        assert sorted(e["agent"] for e in events_of(trace, "message", channel="llm")) == ["drafter", "reviewer"]


def test_a_fan_out_gives_each_target_its_index_and_the_size(captured):
    async def run():
        await apps.concurrent().run("q")

    asyncio.run(run())
    agents = {s.attributes["gen_ai.agent.name"]: s for s in captured.spans if s.name.startswith("invoke_agent ")}
    assert {name: (s.attributes.get("orch.fanout.index"), s.attributes.get("orch.fanout.size"))
            for name, s in agents.items()} == {"optimist": (0, 3), "pessimist": (1, 3), "realist": (2, 3)}


@pytest.mark.parametrize("stream", [False, True])
def test_the_tool_loop_limit_is_the_agents_forced_stop(stream, captured):
    asyncio.run(apps.consume(apps.looping_agent(), "weather?", stream))
    (trace,) = captured.traces()
    check_trace(trace)
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"], stop["forced"]) == ("weather", "function invocation limit", True)
    assert [e["call_id"] for e in events_of(trace, "tool_call")] == ["l1"]


@pytest.mark.parametrize("stream", [False, True])
def test_agents_of_other_classes_have_their_turns(stream, captured):
    asyncio.run(apps.consume(apps.sequential_with_other_agents(), "go", stream))
    agents = {s.attributes["gen_ai.agent.name"]: s for s in captured.spans if s.name.startswith("invoke_agent ")}
    assert sorted(agents) == ["echo", "raw_writer"]
    assert (agents["raw_writer"].attributes["orch.agent.role"], agents["echo"].attributes["orch.agent.role"]) == (
        "RawAgent", "EchoAgent")
    chat = next(s for s in captured.spans if s.name.startswith("chat "))
    assert chat.parent_id == agents["raw_writer"].span_id


def test_a_run_restored_from_a_checkpoint_continues_the_task_of_the_run_that_wrote_it():
    with testing.capture() as captured:
        asyncio.run(apps.sequential_restarted_from_a_checkpoint())
    first, restored = (check_trace(t) for t in captured.traces())
    assert restored["task_id"] == first["task_id"]
    roots = {s.trace_id: s for s in captured.spans if s.parent_id is None}
    conversations = {t: s.attributes["gen_ai.conversation.id"] for t, s in roots.items()}
    assert conversations[restored["trace_id"]] != conversations[first["trace_id"]]  # another Workflow object
    assert [link.trace_id for link in roots[restored["trace_id"]].links] == [first["trace_id"]]
    assert events_of(restored, "human_intervention") == []  # nobody answered anything: a restart


def test_instrumenting_warns_nothing_into_the_app(run_python):
    """The framework deprecates some names orch-otel could import (its Runner): instrumenting must not warn."""
    code = """
import warnings
import agent_framework, agent_framework_orchestrations  # the framework's own import, before
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import orch_otel
    orch_otel.instrument()
    orch_otel.uninstrument()
print([f"{w.category.__name__}: {w.message}" for w in caught])
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "[]"


def test_the_frameworks_spans_to_a_provider_orch_otel_does_not_record_to_are_left_alone(run_python):
    """instrument(tracer_provider=P) with the app's global provider elsewhere: the
    framework's spans go to the app's provider, untouched; orch-otel's to P."""
    code = SPANS + f"""
import asyncio, sys
sys.path.insert(0, {TESTS!r})
from opentelemetry.sdk.trace import TracerProvider
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
import maf_apps as apps
mine = TracerProvider()
mine_spans = InMemorySpanExporter()
mine.add_span_processor(SimpleSpanProcessor(mine_spans))
AgentFrameworkInstrumentor().instrument(tracer_provider=mine)
asyncio.run(apps.weather_agent().run("weather?"))
print(sorted({{scope for scope, *_ in spans()}}), sorted({{s.instrumentation_scope.name for s in mine_spans.get_finished_spans()}}))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "['agent_framework'] ['orch_otel']"
