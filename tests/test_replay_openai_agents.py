"""Replay of OpenAI Agents SDK apps: each app is recorded with content, then
run again on agents whose models have no scripted reply left and whose tools
raise if called, so every answer must come from the recording; the
orchestration must be the recorded one."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents import Agent, function_tool, handoff  # noqa: E402
from agents.testing import ScriptedModel  # noqa: E402
from conftest import check_trace, instrumentor_fixture  # noqa: E402

from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import replay  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)


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


def _record(run, captured, monkeypatch) -> tuple[dict, dict[str, str]]:
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        run()
    (conversion,) = captured.conversions()
    return check_trace(conversion.trace), conversion.contents


def test_a_handoff_run_replays_with_every_model_and_tool_call_served(captured, monkeypatch):
    trace, contents = _record(apps.support(), captured, monkeypatch)
    result = replay(trace, _support_without_answers(), contents=contents)
    assert result.equal, result.divergence
    assert result.served == 5 and result.live == 0  # four model calls and the lookup
    assert result.trace["trace_id"] != trace["trace_id"]


def test_parallel_tools_replay_and_the_failed_tool_runs_as_itself_and_fails_again(captured, monkeypatch):
    """As for the other frameworks: a failure is no result a replay can serve."""
    trace, contents = _record(apps.parallel_tools, captured, monkeypatch)
    agent = Agent(name="researcher", tools=[raising_fetch_async, raising_fetch_sync, failing_again],
                  model=_unscripted())
    result = replay(trace, agent, contents=contents)
    assert result.equal, result.divergence
    assert result.served == 4 and result.live == 1  # two model calls and two tools served; broken ran
    (failed,) = [e for e in result.trace["events"] if e["type"] == "tool_result" and e["status"] == "error"]
    assert failed["call_id"] == "p3"


def test_agents_as_tools_replay_with_the_sub_agents_model_calls_served(captured, monkeypatch):
    trace, contents = _record(apps.agents_as_tools, captured, monkeypatch)
    researcher = Agent(name="researcher", model=_unscripted())
    writer = Agent(name="writer", model=_unscripted())
    manager = Agent(name="manager", model=_unscripted(), tools=[
        researcher.as_tool(tool_name="research", tool_description="Research a topic."),
        writer.as_tool(tool_name="write", tool_description="Write it up."),
    ])
    result = replay(trace, manager, contents=contents)
    assert result.equal, result.divergence
    assert result.served == 4 and result.live == 0  # the manager's two calls and one per sub-agent


def test_a_changed_prompt_is_not_served_and_the_replay_diverges(captured, monkeypatch):
    trace, contents = _record(apps.support(), captured, monkeypatch)
    app = _support_without_answers()
    app.instructions = "Route the customer politely."  # not the recorded system prompt
    result = replay(trace, app, contents=contents)
    assert not result.equal
    assert result.app_errors == ["NotRecorded"]


def test_a_fork_at_a_handoff_hands_off_to_the_chosen_agent(captured, monkeypatch):
    """router handed off to sales; forked to support, the served reply calls
    transfer_to_support, and support's own model answers from there on."""
    trace, contents = _record(apps.routed, captured, monkeypatch)
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
