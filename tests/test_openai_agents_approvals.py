"""Human approvals in OpenAI Agents SDK runs (``needs_approval`` tools): the
real SDK's interrupt, ``RunState.approve``/``reject`` and resume, only the
model scripted (tests/openai_agents_apps.py). Expected facts come from the
apps' code: the cashier asks to refund 5 (a1) and 500 (a2); a human
approves a1 and rejects a2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from conftest import check_trace, events_of, instrumentor_fixture  # noqa: E402

import orch_otel  # noqa: E402
from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.tracefiles import read_lines, trace_files  # noqa: E402
from orch_otel.vocabulary import Attr  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)
TESTS = Path(__file__).resolve().parent


def _stops(trace: dict) -> list[tuple]:
    return [(e["agent"], e["reason"], e.get("source"), e.get("forced")) for e in trace["events"]
            if e.get("decision") == "stop"]


def test_a_rejected_call_is_the_agents_failed_tool_call_and_the_intervention_names_each_decision(captured):
    agent, first, second = apps.decided_after_interrupt(rejection_message="over the limit")
    assert second.final_output == "Refunded 5; 500 was refused."
    interrupted, resumed = [check_trace(t) for t in captured.traces()]
    assert _stops(interrupted) == [("refunds", "interrupt", None, True)]
    assert events_of(interrupted, "tool_call") == []  # both waited for a human: neither ran
    (intervention,) = events_of(resumed, "human_intervention")
    assert resumed["events"][0] is intervention and intervention["resume_of"] == interrupted["trace_id"]
    assert intervention["approved"] == ["a1"] and intervention["rejected"] == ["a2"]
    # the approved refund ran; the rejected one did not, and the model got the rejection as its output
    calls = {e["call_id"]: (e["agent"], e["instance"]) for e in events_of(resumed, "tool_call")}
    assert calls == {"a1": ("cashier", "cashier#1"), "a2": ("cashier", "cashier#1")}
    results = {e["call_id"]: e["status"] for e in events_of(resumed, "tool_result")}
    assert results == {"a1": "ok", "a2": "error"}
    sent = {i["call_id"]: i["output"] for i in agent.model.calls[-1].input if i.get("type") == "function_call_output"}
    assert sent == {"a1": "refunded 5", "a2": "over the limit"}
    assert _stops(resumed) == [("cashier", "end", None, False), ("refunds", "end", None, False)]


def test_a_rejected_call_is_failed_as_a_rejection_not_as_a_raised_error(captured):
    apps.decided_after_interrupt()
    (rejected,) = [s for s in captured.spans if s.attributes.get(Attr.TOOL_CALL_ID) == "a2"]
    assert rejected.attributes[Attr.ERROR_TYPE] == "approval_rejected"
    assert not any(e.name == "exception" for e in rejected.events)  # nothing raised


def test_the_decisions_content_is_kept_only_when_captured_and_then_redacted(captured, monkeypatch):
    apps.decided_after_interrupt(rejection_message="over the limit")
    spans_text = json.dumps([dict(s.attributes) for s in captured.spans]
                            + [dict(e.attributes) for s in captured.spans for e in s.events], default=str)
    assert "over the limit" not in spans_text  # the human's words are content: not captured by default
    captured.spans.clear()
    policy = get_recorder().content
    monkeypatch.setattr(policy, "capture", True)
    monkeypatch.setattr(policy, "redactors", [lambda text: text.replace("limit", "<redacted>")])
    apps.decided_after_interrupt(rejection_message="over the limit")
    conversion = captured.conversions()[-1]
    (intervention,) = events_of(conversion.trace, "human_intervention")
    assert json.loads(conversion.contents[intervention["content_ref"]]) == [
        {"call_id": "a1", "approved": True}, {"call_id": "a2", "approved": False, "message": "over the <redacted>"}]
    (rejected,) = [e for e in events_of(conversion.trace, "tool_result") if e["call_id"] == "a2"]
    assert json.loads(conversion.contents[rejected["content_ref"]]) == "over the <redacted>"


def test_a_rejection_without_a_message_records_the_sdks_default_output(captured, monkeypatch):
    monkeypatch.setattr(get_recorder().content, "capture", True)
    agent, _, _ = apps.decided_after_interrupt()
    conversion = captured.conversions()[-1]
    (intervention,) = events_of(conversion.trace, "human_intervention")
    assert json.loads(conversion.contents[intervention["content_ref"]]) == [
        {"call_id": "a1", "approved": True}, {"call_id": "a2", "approved": False}]  # the human wrote nothing
    sent = {i["call_id"]: i["output"] for i in agent.model.calls[-1].input if i.get("type") == "function_call_output"}
    (rejected,) = [e for e in events_of(conversion.trace, "tool_result") if e["call_id"] == "a2"]
    assert json.loads(conversion.contents[rejected["content_ref"]]) == sent["a2"]  # what the model got


INTERRUPT = """
import sys
import orch_otel
orch_otel.instrument()
import openai_agents_apps as apps
from agents import RunConfig

first = apps.run(apps.refund_desk(), "Refund 5 and 500.", run_config=RunConfig(workflow_name="refunds"{group}))
open(sys.argv[1], "w").write(first.to_state().to_string())  # the app keeps the state: a queue, a database
orch_otel.flush()
"""

RESUME = """
import asyncio, sys
import orch_otel
orch_otel.instrument()
import openai_agents_apps as apps
from agents import RunConfig, Runner, RunState

async def resume():
    agent = apps.refund_desk()
    agent.model = apps.model(apps.step(apps.assistant_message("Refunded 5; 500 was refused.")))
    state = await RunState.from_string(agent, open(sys.argv[1]).read())
    for item in state.get_interruptions():
        if item.raw_item.call_id == "a1":
            state.approve(item)
        else:
            state.reject(item, rejection_message="over the limit")
    return await Runner.run(agent, state, run_config=RunConfig(workflow_name="refunds"))

print(asyncio.run(resume()).final_output)
orch_otel.flush()
"""


def _recorded(folder) -> dict:
    (trace,) = [line.trace for file in trace_files([folder]) for line in read_lines(file) if line.trace]
    return check_trace(trace)


@pytest.mark.parametrize("group_id", [None, "order-77"])
def test_a_run_resumed_in_another_process_records_the_humans_decisions_and_joins_its_interrupted_run(
        tmp_path, group_id):
    """The resuming process never saw the interrupted run: nothing in the
    serialized state names orch-otel's trace, so there is no resume_of; the
    approved and rejected call ids are exactly the calls the interrupted run's
    stop awaited, and with a group id both runs are one task."""
    state_file = str(tmp_path / "state.json")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(TESTS)}
    group = f", group_id={group_id!r}" if group_id else ""
    for name, script in (("first", INTERRUPT.format(group=group)), ("second", RESUME)):
        done = subprocess.run([sys.executable, "-c", script, state_file], capture_output=True, text=True,
                              cwd=tmp_path, env={**env, "ORCH_OTEL_TRACE_DIR": str(tmp_path / name)}, timeout=300,
                              check=False)
        assert done.returncode == 0, done.stderr
    assert "Refunded 5; 500 was refused." in done.stdout
    interrupted, resumed = _recorded(tmp_path / "first"), _recorded(tmp_path / "second")
    (stop,) = [e for e in interrupted["events"] if e.get("decision") == "stop"]
    assert (stop["agent"], stop["reason"], stop["awaiting"]) == ("refunds", "interrupt", ["a1", "a2"])
    intervention = resumed["events"][0]
    assert intervention["type"] == "human_intervention" and "resume_of" not in intervention
    assert intervention["approved"] == ["a1"] and intervention["rejected"] == ["a2"]
    assert sorted(intervention["approved"] + intervention["rejected"]) == stop["awaiting"]  # the join
    if group_id:
        assert interrupted["task_id"] == resumed["task_id"] == group_id  # the state carries the group id
    results = {e["call_id"]: e["status"] for e in events_of(resumed, "tool_result")}
    assert results == {"a1": "ok", "a2": "error"}
    assert _stops(resumed) == [("cashier", "end", None, False), ("refunds", "end", None, False)]


def test_a_resume_in_the_same_process_names_the_interrupted_run_and_awaits_its_calls(captured):
    apps.decided_after_interrupt()
    interrupted, resumed = [check_trace(t) for t in captured.traces()]
    (stop,) = [e for e in interrupted["events"] if e.get("decision") == "stop"]
    assert stop["awaiting"] == ["a1", "a2"]
    assert resumed["events"][0]["resume_of"] == interrupted["trace_id"]
    assert resumed["task_id"] == interrupted["task_id"]  # one conversation: the resume joins the run's task


def test_the_timeline_shows_the_calls_awaited_and_the_humans_decisions(captured):
    apps.decided_after_interrupt()
    interrupted, resumed = captured.traces()
    assert "awaiting approval of a1, a2" in orch_otel.view(interrupted)
    assert "approved a1; rejected a2" in orch_otel.view(resumed)
