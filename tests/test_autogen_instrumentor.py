"""The instrumentor's lifecycle: uninstrument removes every patch (no orch-otel
spans afterwards), instrument again works, and the runtime-spans option, which
never touches a runtime on the app's own tracer provider."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

import autogen_apps as apps
import pytest
from autogen_core import (
    DefaultTopicId,
    MessageContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    default_subscription,
    message_handler,
)
from conftest import check_trace, decisions_of
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.autogen.package import _instruments

TIMEOUT = 20


@pytest.fixture
def instrumentor():
    instrumentor = AutoGenInstrumentor()
    yield instrumentor
    instrumentor.uninstrument()


def test_declares_supported_versions():
    assert AutoGenInstrumentor().instrumentation_dependencies() == _instruments
    assert any(req.startswith("autogen-agentchat") and "< 0.8" in req for req in _instruments)


async def test_uninstrument_then_instrument_again(instrumentor, captured):
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams._group_chat._base_group_chat import BaseGroupChat
    from autogen_core.tools import _base as tools_base

    original = (BaseGroupChat.run_stream, tools_base.trace_tool_span, TextMentionTermination.__call__)
    instrumentor.instrument()
    await asyncio.wait_for(apps.weather_round_robin().run(task="go"), TIMEOUT)
    assert len(captured.traces()) == 1

    instrumentor.uninstrument()
    assert (BaseGroupChat.run_stream, tools_base.trace_tool_span, TextMentionTermination.__call__) == original
    captured.spans.clear()
    await asyncio.wait_for(apps.weather_round_robin().run(task="go"), TIMEOUT)
    assert not [s for s in captured.spans if s.name.startswith(("invoke_workflow", "chat "))]
    assert not [s for s in captured.spans if "orch.system" in s.attributes]

    captured.spans.clear()
    instrumentor.instrument()
    await asyncio.wait_for(apps.swarm_team().run(task="go"), TIMEOUT)
    (trace,) = captured.traces()
    check_trace(trace)
    assert [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")] == [
        ("bob", "Handoff to user from bob detected."), ("Swarm", "Handoff to user from bob detected.")]


def test_uninstrument_restores_inherited_and_client_methods(instrumentor):
    from autogen_agentchat.teams._group_chat._magentic_one._magentic_one_orchestrator import (
        MagenticOneOrchestrator,
    )
    from autogen_ext.models.replay import ReplayChatCompletionClient

    create = vars(ReplayChatCompletionClient)["create"]
    instrumentor.instrument()
    assert "publish_message" in vars(MagenticOneOrchestrator)  # patched on the subclass only
    assert vars(ReplayChatCompletionClient)["create"] is not create
    instrumentor.uninstrument()
    assert "publish_message" not in vars(MagenticOneOrchestrator)
    assert vars(ReplayChatCompletionClient)["create"] is create


def test_uninstrument_restores_workbench_and_openai_sdk_methods(instrumentor):
    """Workbench classes and, once an autogen-ext OpenAI client class is patched,
    the openai SDK's completions methods are patched and put back."""
    pytest.importorskip("autogen_ext.models.openai", reason="needs autogen-ext[openai] (the dev extra)")
    from autogen_ext.models.openai import OpenAIChatCompletionClient  # noqa: F401 (loaded: patched up front)
    from openai.resources.chat.completions import AsyncCompletions

    originals = {(cls, name): vars(cls)[name] for cls, name in (
        (AsyncCompletions, "create"), (AsyncCompletions, "parse"), (apps.NotesWorkbench, "call_tool"))}
    instrumentor.instrument()
    assert all(vars(cls)[name] is not was for (cls, name), was in originals.items())
    instrumentor.uninstrument()
    assert all(vars(cls)[name] is was for (cls, name), was in originals.items())


async def test_runtime_spans_option_keeps_them_inside_the_run(instrumentor, captured):
    instrumentor.instrument(runtime_spans=True)
    await asyncio.wait_for(apps.two_agent_round_robin(3).run(task="go"), TIMEOUT)
    assert len(captured.by_trace()) == 1
    names = captured.names()
    assert any(n.startswith("autogen process") for n in names)
    assert names.count("invoke_agent a") == 1  # AutoGen's own invoke_agent stays suppressed
    (trace,) = captured.traces()
    check_trace(trace)
    assert [d["targets"] for d in decisions_of(trace, "delegate")] == [["a"], ["b"]]


@dataclass
class Note:
    text: str


@default_subscription
class Listener(RoutedAgent):
    """Notes the text of every note published to the default topic."""

    def __init__(self, received: list[str]) -> None:
        super().__init__("listens")
        self._received = received

    @message_handler
    async def on_note(self, message: Note, ctx: MessageContext) -> None:
        self._received.append(message.text)


async def _publish_one_note(tracer_provider=None) -> list[str]:
    """A bare autogen-core runtime: one agent subscribed to the default topic gets one note."""
    received: list[str] = []
    runtime = SingleThreadedAgentRuntime(tracer_provider=tracer_provider)
    await Listener.register(runtime, "listener", lambda: Listener(received))
    runtime.start()
    await runtime.publish_message(Note("hi"), topic_id=DefaultTopicId())
    await asyncio.wait_for(runtime.stop_when_idle(), TIMEOUT)
    return received


# autogen-core's runtime spans for one publish to one subscriber: the publish, the
# envelope it creates, the subscriber's processing
NOTE_SPANS = ["autogen create default.(default)-T", "autogen process listener.(default)-A",
              "autogen publish default.(default)-T"]


def _own_provider():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_a_runtime_on_the_apps_own_provider_keeps_its_runtime_spans(instrumentor, captured):
    instrumentor.instrument()
    provider, exporter = _own_provider()
    assert await _publish_one_note(provider) == ["hi"]
    assert sorted(s.name for s in exporter.get_finished_spans()) == NOTE_SPANS
    assert not [s for s in captured.spans if s.name.startswith("autogen ")]  # nothing moved to the global one


_TEAM_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # in AutoGen's span names


async def _team_on_own_runtime() -> tuple[list[str], int]:
    """A team run on a runtime the app started with its own provider: the
    runtime spans that provider gets (names) and how many traces they form."""
    provider, exporter = _own_provider()
    runtime = SingleThreadedAgentRuntime(tracer_provider=provider)
    runtime.start()
    await asyncio.wait_for(apps.two_agent_round_robin(3, runtime=runtime).run(task="go"), TIMEOUT)
    await asyncio.wait_for(runtime.stop_when_idle(), TIMEOUT)
    spans = exporter.get_finished_spans()
    return sorted(_TEAM_ID.sub("{team}", s.name) for s in spans), len({s.context.trace_id for s in spans})


async def test_adopting_runtime_spans_leaves_a_runtime_on_the_apps_own_provider_as_autogen_makes_it(
        instrumentor, captured):
    names, traces = await _team_on_own_runtime()  # without orch-otel
    assert any(n.startswith("autogen process") for n in names) and traces > 1  # linked, not nested, by AutoGen
    instrumentor.instrument(runtime_spans=True)
    assert await _team_on_own_runtime() == (names, traces)  # not pulled into orch-otel's run trace
    assert len([n for n in captured.names() if n.startswith("invoke_workflow")]) == 1  # the run still recorded


async def test_runtime_spans_on_the_global_provider_are_still_suppressed(instrumentor, captured):
    assert await _publish_one_note() == ["hi"]
    assert sorted(n for n in captured.names() if n.startswith("autogen ")) == NOTE_SPANS  # without orch-otel
    captured.spans.clear()
    instrumentor.instrument()
    assert await _publish_one_note() == ["hi"]
    assert not [n for n in captured.names() if n.startswith("autogen ")]


async def test_runtime_spans_on_orch_otels_own_provider_are_suppressed(instrumentor):
    provider, exporter = _own_provider()
    instrumentor.instrument(tracer_provider=provider)
    assert await _publish_one_note(provider) == ["hi"]
    assert not [s for s in exporter.get_finished_spans() if s.name.startswith("autogen ")]


def test_orch_otel_instrument_passes_runtime_spans(run_python, tmp_path):
    code = f"""
import asyncio, sys
sys.path.insert(0, {str(apps.__file__.rsplit('/', 1)[0])!r})
import orch_otel
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import autogen_apps as apps
counts = []
for runtime_spans in (None, True):
    state = orch_otel.instrument(trace_dir={str(tmp_path / 'traces')!r}, runtime_spans=runtime_spans)
    exporter = InMemorySpanExporter()
    state.tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    asyncio.run(apps.two_agent_round_robin(3).run(task="go"))
    spans = exporter.get_finished_spans()
    counts.append((sum(s.name.startswith("autogen process") for s in spans), len({{s.context.trace_id for s in spans}})))
    orch_otel.uninstrument()
print(counts)
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    (off, on) = eval(result.stdout.strip().splitlines()[-1])
    assert off == (0, 1)  # suppressed by default: one trace, no runtime spans
    assert on[0] > 0 and on[1] == 1  # kept with runtime_spans=True, inside the run's one trace


def test_orch_otel_instrument_picks_up_autogen(run_python, tmp_path):
    code = f"""
import asyncio, json, sys
sys.path.insert(0, {str(apps.__file__.rsplit('/', 1)[0])!r})
import orch_otel
state = orch_otel.instrument(trace_dir={str(tmp_path / 'traces')!r})
assert any(type(i).__name__ == "AutoGenInstrumentor" for i in state.instrumentors), state.instrumentors
import autogen_apps as apps
async def main():
    for _ in range(3):
        await apps.two_agent_round_robin(3).run(task="go")
asyncio.run(main())
orch_otel.flush()
orch_otel.uninstrument()
"""
    code += f"""
import glob
lines = [l for f in sorted(glob.glob({str(tmp_path / "traces")!r} + '/**/*.jsonl', recursive=True)) for l in open(f) if l.strip()]
traces = [json.loads(l) for l in lines]
print(json.dumps([[e.get("reason") for e in t["events"] if e.get("decision") == "stop"] for t in traces]))
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    import json

    reasons = json.loads(result.stdout.strip().splitlines()[-1])
    assert reasons == [["Maximum number of messages 3 reached, current message count: 3"]] * 3


def test_example_runs_offline(run_python, tmp_path):
    example = apps.__file__.rsplit("/", 2)[0] + "/examples/autogen_team.py"
    code = f"""
import runpy, sys
sys.argv = ["autogen_team.py", {str(tmp_path / 'out')!r}]
runpy.run_path({example!r}, run_name="__main__")
"""
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert "stop reason: Handoff to user from billing detected." in result.stdout
    (path,) = (tmp_path / "out").glob("traces-*.jsonl")
    import json

    (trace,) = [json.loads(line) for line in path.read_text().splitlines()]
    check_trace(trace)
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("Swarm", "triage"), ("triage", "billing"), ("Swarm", "billing"), ("billing", "user")]
