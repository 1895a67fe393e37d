"""Replay of OpenAI Agents SDK apps: each app is recorded with content, then
run again on agents whose models have no scripted reply left and whose tools
raise if called, so every answer must come from the recording; the
orchestration must be the recorded one."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents import Agent, Runner, function_tool, handoff  # noqa: E402
from agents.testing import ScriptedModel  # noqa: E402
from conftest import check_trace, instrumentor_fixture, recorded_with_content  # noqa: E402

import orch_otel  # noqa: E402
from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import ReplayError, replay  # noqa: E402
from orch_otel.tracefiles import load_contents, read_lines, trace_files  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)
TESTS = Path(__file__).resolve().parent


class CalledForReal(AssertionError):
    """A replay called a tool instead of serving it."""


def _unscripted() -> ScriptedModel:
    return ScriptedModel([])  # raises UnexpectedModelCall if the replay calls it


@function_tool(name_override="lookup_invoice")
def raising_lookup(number: str) -> str:
    """Look an invoice up."""
    raise CalledForReal("a tool was called during replay")


@function_tool(name_override="fetch_async", failure_error_function=None)
def raising_fetch_async(key: str) -> str:
    """Fetch a value (async)."""
    raise CalledForReal("a tool was called during replay")


@function_tool(name_override="fetch_sync", failure_error_function=None)
def raising_fetch_sync(key: str) -> str:
    """Fetch a value (sync, run in a thread)."""
    raise CalledForReal("a tool was called during replay")


@function_tool(name_override="broken")
def failing_again(key: str) -> str:
    """A tool that fails."""
    raise RuntimeError("backend down")


def _support_without_answers() -> Agent:
    triage = Agent(name="triage", instructions="Route the customer.", model=_unscripted())
    billing = Agent(name="billing", handoff_description="invoices", tools=[raising_lookup], model=_unscripted())
    triage.handoffs = [billing, handoff(Agent(name="refunds", model=_unscripted()), is_enabled=False)]
    billing.handoffs = [triage]
    return triage


def test_a_handoff_run_replays_with_every_model_and_tool_call_served(captured, monkeypatch):
    trace, contents = recorded_with_content(apps.support(), captured, monkeypatch)
    result = replay(trace, _support_without_answers(), contents=contents)
    assert result.equal, result.divergence
    assert result.served == 5 and result.live == 0  # four model calls and the lookup
    assert result.trace["trace_id"] != trace["trace_id"]


def test_parallel_tools_replay_and_the_failed_tool_runs_as_itself_and_fails_again(captured, monkeypatch):
    """As for the other frameworks: a failure is no result a replay can serve."""
    trace, contents = recorded_with_content(apps.parallel_tools, captured, monkeypatch)
    agent = Agent(name="researcher", tools=[raising_fetch_async, raising_fetch_sync, failing_again],
                  model=_unscripted())
    result = replay(trace, agent, contents=contents)
    assert result.equal, result.divergence
    assert result.served == 4 and result.live == 1  # two model calls and two tools served; broken ran
    (failed,) = [e for e in result.trace["events"] if e["type"] == "tool_result" and e["status"] == "error"]
    assert failed["call_id"] == "p3"


def test_agents_as_tools_replay_with_the_sub_agents_model_calls_served(captured, monkeypatch):
    trace, contents = recorded_with_content(apps.agents_as_tools, captured, monkeypatch)
    researcher = Agent(name="researcher", model=_unscripted())
    writer = Agent(name="writer", model=_unscripted())
    manager = Agent(name="manager", model=_unscripted(), tools=[
        researcher.as_tool(tool_name="research", tool_description="Research a topic."),
        writer.as_tool(tool_name="write", tool_description="Write it up."),
    ])
    result = replay(trace, manager, contents=contents)
    assert result.equal, result.divergence
    assert result.served == 4 and result.live == 0  # the manager's two calls and one per sub-agent


@pytest.mark.parametrize("streamed", [False, True])
def test_a_changed_prompt_is_not_served_and_the_replay_diverges(captured, monkeypatch, streamed):
    trace, contents = recorded_with_content(apps.support_streamed if streamed else apps.support(), captured, monkeypatch)
    app = _support_without_answers()
    app.instructions = "Route the customer politely."  # not the recorded system prompt
    result = replay(trace, app, contents=contents)
    assert not result.equal
    assert result.app_errors == ["NotRecorded"]


def test_a_fork_at_a_handoff_hands_off_to_the_chosen_agent(captured, monkeypatch):
    """router handed off to sales; forked to support, the served reply calls
    transfer_to_support, and support's own model answers from there on."""
    trace, contents = recorded_with_content(apps.routed, captured, monkeypatch)
    (handoff_decision,) = [e for e in trace["events"] if e.get("decision") == "delegate"]
    assert handoff_decision["options"] == ["sales", "support"]
    app = apps.router_agents(sales_reply="not asked")
    app.model = _unscripted()  # router's one reply is served (rewritten)
    result = replay(trace, app, contents=contents, fork=handoff_decision["id"], choose="support")
    assert result.equal, result.divergence  # equal up to the fork
    delegations = [(e["agent"], e["to"]) for e in result.trace["events"] if e.get("decision") == "delegate"]
    assert delegations == [("router", "support")]
    assert result.fork["recorded"] == ["sales"] and result.fork["forced"] == ["support"]
    stops = [(e["agent"], e["reason"]) for e in result.trace["events"] if e.get("decision") == "stop"]
    assert stops[0] == ("support", "end")


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_later_run_of_a_session_replays_on_the_history_its_agent_was_given(captured, monkeypatch, streamed):
    """The second run's model got the session's history before the new input;
    the record keeps that as the run's input, so a replay (no session) asks
    the same prompt and is served."""
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        assert apps.two_runs_in_one_session(streamed_second=streamed) == ("Hello Ada.", "You are Ada.")
    first, second = captured.conversions()
    recorded_input = json.loads(second.contents[second.trace["events"][0]["run_input_ref"]])["input"]
    assert [_text(item) for item in recorded_input] == ["I am Ada.", "Hello Ada.", "Who am I?"]
    result = replay(check_trace(second.trace), Agent(name="assistant", model=_unscripted()),
                    contents=second.contents)
    assert result.equal, result.divergence
    assert result.served == 1 and result.live == 0


def _text(item: dict) -> str:
    content = item["content"]
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


# -- streamed runs ---------------------------------------------------------------------------


def _run_input(trace: dict, contents: dict[str, str]) -> dict:
    return json.loads(contents[trace["events"][0]["run_input_ref"]])


def test_a_streamed_run_replays_streamed_with_every_model_and_tool_call_served(captured, monkeypatch):
    trace, contents = recorded_with_content(apps.support_streamed, captured, monkeypatch)
    assert _run_input(trace, contents) == {"input": "Is invoice 42 paid?", "workflow": "support", "streamed": True}
    result = replay(trace, _support_without_answers(), contents=contents)
    assert result.equal, result.divergence
    assert result.served == 5 and result.live == 0  # four model calls (each a stream) and the lookup
    assert result.app_errors == [None]
    assert _run_input(result.trace, result.contents)["streamed"] is True  # replayed through run_streamed


def test_a_run_not_streamed_replays_not_streamed(captured, monkeypatch):
    trace, contents = recorded_with_content(apps.support(), captured, monkeypatch)
    assert _run_input(trace, contents) == {"input": "Is invoice 42 paid?", "workflow": "support"}
    result = replay(trace, _support_without_answers(), contents=contents)
    assert result.equal, result.divergence
    assert "streamed" not in _run_input(result.trace, result.contents)


def test_a_fork_at_a_handoff_of_a_streamed_run_goes_on_streamed_with_the_chosen_agent(captured, monkeypatch):
    """router handed off to sales in a streamed run; forked to support, support's
    own model answers, asked for a stream as in the recorded run."""
    trace, contents = recorded_with_content(apps.routed_streamed, captured, monkeypatch)
    (handoff_decision,) = [e for e in trace["events"] if e.get("decision") == "delegate"]
    app = apps.router_agents(sales_reply="not asked", support_reply="support here")
    app.model = _unscripted()  # router's one reply is served (rewritten)
    helpdesk = next(h for h in app.handoffs if h.name == "support")
    result = replay(trace, app, contents=contents, fork=handoff_decision["id"], choose="support")
    assert result.equal, result.divergence
    delegations = [(e["agent"], e["to"]) for e in result.trace["events"] if e.get("decision") == "delegate"]
    assert delegations == [("router", "support")]
    stops = [(e["agent"], e["reason"]) for e in result.trace["events"] if e.get("decision") == "stop"]
    assert stops[0] == ("support", "end")
    assert [call.streamed for call in helpdesk.model.calls] == [True]  # its own model, asked for a stream


def test_an_agent_tool_that_streams_has_its_nested_streamed_calls_served(captured, monkeypatch):
    """An agent used as a tool with on_stream runs its agent through
    Runner.run_streamed: its model calls are streams, served as well."""
    trace, contents = recorded_with_content(lambda: apps.agent_tool_streaming([]), captured, monkeypatch)
    seen: list = []
    manager = apps.streaming_agent_tools(_unscripted(), _unscripted(), seen)
    result = replay(trace, manager, contents=contents)
    assert result.equal, result.divergence
    assert result.served == 3 and result.live == 0  # the manager's two calls and the researcher's one
    # the app's on_stream saw the researcher's stream, ending in the recorded reply
    raw = [e["event"].data for e in seen if e["event"].type == "raw_response_event"]
    assert raw[-1].type == "response.completed"
    assert [part.text for item in raw[-1].response.output for part in item.content] == ["facts"]


CLI_APP = f'''
import sys
sys.path.insert(0, {str(TESTS)!r})
from agents import Agent
from agents.testing import ScriptedModel
from openai_agents_apps import lookup_invoice


def factory():  # the support app, its models with no reply left: every answer must come from the recording
    triage = Agent(name="triage", instructions="Route the customer.", model=ScriptedModel([]))
    billing = Agent(name="billing", handoff_description="invoices", tools=[lookup_invoice], model=ScriptedModel([]))
    triage.handoffs = [billing]
    billing.handoffs = [triage]
    return triage
'''


def test_orch_otel_replay_replays_a_streamed_recording(tmp_path):
    """Recorded with ORCH_OTEL_RECORD_FOR_REPLAY=true in a process of its own, replayed by the CLI."""
    (tmp_path / "supportapp.py").write_text(CLI_APP)
    env = {"ORCH_OTEL_RECORD_FOR_REPLAY": "true", "ORCH_OTEL_TRACE_DIR": str(tmp_path / "orch-traces"),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(TESTS)}
    record = ("import orch_otel, openai_agents_apps as apps\n"
              "orch_otel.instrument()\n"
              "print(apps.support_streamed())\n"
              "orch_otel.flush()\n")
    done = subprocess.run([sys.executable, "-c", record], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0 and "Your invoice is paid." in done.stdout, done.stderr
    done = subprocess.run([sys.executable, "-m", "orch_otel.cli", "replay", "orch-traces", "--app", "supportapp:factory",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "ORCH_OTEL_RECORD_FOR_REPLAY": ""}, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert "the same orchestration" in out and "(5 calls served, 0 run by the app)" in out
    (new,) = [line.trace for file in trace_files([tmp_path / "out"]) for line in read_lines(file) if line.trace]
    assert _run_input(new, load_contents(tmp_path / "out"))["streamed"] is True


def _desk(model) -> object:
    """An app of the user's own: a workflow function that streams a run of the SDK itself."""

    @orch_otel.workflow("desk")
    async def desk(question: str) -> str:
        result = Runner.run_streamed(Agent(name="clerk", instructions="Answer.", model=model), question)
        async for _event in result.stream_events():
            pass
        return str(result.final_output)

    return desk


def test_an_app_function_that_runs_the_sdk_streamed_itself_has_its_calls_served(captured, monkeypatch):
    trace, contents = recorded_with_content(lambda: asyncio.run(_desk(apps.model(apps.step(apps.assistant_message("hi"))))("hello")),
                              captured, monkeypatch)
    result = replay(trace, _desk(_unscripted()), contents=contents)
    assert result.equal, result.divergence
    assert (result.served, result.live, result.app_errors) == (1, 0, [None])


@function_tool(name_override="refund", needs_approval=True)
def raising_refund(amount: int) -> str:
    """Refund an amount (a human approves it first)."""
    raise CalledForReal("a tool was called during replay")


def test_an_interrupted_run_and_its_resume_replay_as_a_chain_with_the_humans_decisions(captured, monkeypatch):
    """The cashier asked to refund 5 (a1) and 500 (a2); the human approved a1 and
    rejected a2 with a message. Replayed: the same interrupt, the same decisions,
    the rejection message sent to the (served) model as recorded."""
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        apps.decided_after_interrupt(rejection_message="over the limit")
    conversions = captured.conversions()
    chain = [check_trace(c.trace) for c in conversions]
    contents = {k: v for c in conversions for k, v in c.contents.items()}
    result = replay(chain, Agent(name="cashier", tools=[raising_refund], model=_unscripted()), contents=contents)
    assert result.equal, result.divergence
    assert len(result.traces) == 2 and result.app_errors == [None, None]
    assert (result.served, result.live) == (3, 0)  # two model calls and the approved refund
    interrupted, resumed = result.traces
    intervention = resumed["events"][0]
    assert intervention["resume_of"] == interrupted["trace_id"]
    assert (intervention["approved"], intervention["rejected"]) == (["a1"], ["a2"])


def test_a_resume_given_without_its_interrupted_run_is_refused_before_the_app_runs(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        apps.decided_after_interrupt()
    conversions = captured.conversions()
    contents = {k: v for c in conversions for k, v in c.contents.items()}
    with pytest.raises(ReplayError, match=r"replay it after that run, as one chain \[interrupted, resumed\]"):
        replay(conversions[1].trace, Agent(name="cashier", tools=[raising_refund], model=_unscripted()),
               contents=contents)


def test_orch_otel_replay_chains_an_interrupted_run_and_its_resume(tmp_path):
    (tmp_path / "cashierapp.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from agents import Agent\nfrom agents.testing import ScriptedModel\nfrom openai_agents_apps import refund\n\n"
        "def factory():\n    return Agent(name='cashier', tools=[refund], model=ScriptedModel([]))\n")
    env = {"ORCH_OTEL_RECORD_FOR_REPLAY": "true", "ORCH_OTEL_TRACE_DIR": str(tmp_path / "orch-traces"),
           "PATH": "/usr/bin:/bin", "PYTHONPATH": str(TESTS)}
    record = ("import orch_otel, openai_agents_apps as apps\norch_otel.instrument()\n"
              "apps.decided_after_interrupt(rejection_message='over the limit')\norch_otel.flush()\n")
    done = subprocess.run([sys.executable, "-c", record], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "orch_otel.cli", "replay", "orch-traces", "--app", "cashierapp:factory",
                           "-o", str(tmp_path / "out")], capture_output=True, text=True, cwd=tmp_path,
                          env={**env, "ORCH_OTEL_RECORD_FOR_REPLAY": ""}, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    out = " ".join(done.stdout.split())
    assert " -> " in out and "the same orchestration (3 calls served, 0 run by the app)" in out  # one chain of two
