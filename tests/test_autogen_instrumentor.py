"""The instrumentor's lifecycle: uninstrument removes every patch (no orch-otel
spans afterwards), instrument again works, and the runtime-spans option."""

from __future__ import annotations

import asyncio

import autogen_apps as apps
import pytest
from conftest import check_trace, decisions_of

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
