"""An OpenAI Agents SDK run inside a run the app records itself
(``orch_otel.workflow(...)``, a ``@workflow`` function, an ``orch_otel.agent``):
one trace under the app's root, the run's starting agent a sub-agent that run
spawned, its handoffs new instances beside it; its stops on its agents, its
exceptions the app's as before; an approval's interrupt and resume in the same
trace; inside ``orch_otel.task()`` the run keeps its own root. Expected trees
and events are written from the apps' code (tests/openai_agents_apps.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents import RunConfig, Runner, SQLiteSession, function_tool  # noqa: E402
from agents.exceptions import InputGuardrailTripwireTriggered, MaxTurnsExceeded  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture, span_tree  # noqa: E402

import orch_otel  # noqa: E402
from orch_otel import Attr  # noqa: E402
from orch_otel.integrations.autogen import AutoGenInstrumentor  # noqa: E402
from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import replay  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor, AutoGenInstrumentor)

CHAT = ("chat ScriptedModel", [])  # the scripted model's class names its calls


def tool(name: str) -> tuple:
    return f"execute_tool {name}", []


# support_agents' run: triage hands off to billing (h1); billing looks invoice 42 up (t1) and hands back (h2);
# triage answers. Each agent a new instance at each handoff, all beside each other under whoever ran the run.
SUPPORT_AGENTS = [
    ("invoke_agent triage", [CHAT, tool("transfer_to_billing")]),
    ("invoke_agent billing", [CHAT, tool("lookup_invoice"), CHAT, tool("transfer_to_triage")]),
    ("invoke_agent triage", [CHAT]),
]


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def pairs(trace: dict, kind: str) -> list[tuple[str, str]]:
    return [(e["agent"], e["to"]) for e in events_of(trace, kind)]


def stops(trace: dict) -> list[tuple]:
    return [(d["agent"], d["reason"], d.get("source"), d["forced"]) for d in decisions_of(trace, "stop")]


def test_a_handoff_run_inside_the_apps_workflow_is_one_trace_under_its_root(captured):
    with orch_otel.workflow("support", task_id="ticket-50"):
        assert apps.support()().final_output == "Your invoice is paid."
    assert span_tree(captured.spans) == [("invoke_workflow support", SUPPORT_AGENTS)]
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == ("ticket-50", "custom")
    # the app's run spawned the run's starting agent; the handoffs are the runner's, not spawns
    assert [(d["agent"], d["targets"]) for d in decisions_of(trace, "spawn")] == [("support", ["triage"])]
    assert pairs(trace, "spawn") == [("support", "triage")]
    assert [(e["agent"], e["instance"]) for e in events_of(trace, "return")] == [
        ("triage", "triage#1"), ("billing", "billing#1"), ("triage", "triage#2")]
    assert [(d["agent"], d["to"], d["options"]) for d in decisions_of(trace, "delegate")] == [
        ("triage", "billing", ["billing"]), ("billing", "triage", ["triage"])]  # refunds is disabled
    assert [(e["agent"], e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")] == [
        ("triage", "transfer_to_billing", "h1"), ("billing", "lookup_invoice", "t1"),
        ("billing", "transfer_to_triage", "h2")]
    # triage's answer ends the SDK run; the app's block then ends its own run
    assert stops(trace) == [("triage", "end", None, False), ("support", "end", None, False)]


def test_the_same_streamed_and_inside_an_apps_agent(captured):
    with orch_otel.workflow("desk"), orch_otel.agent("front"):
        assert apps.support_streamed() == "Your invoice is paid."
    assert span_tree(captured.spans) == [("invoke_workflow desk", [("invoke_agent front", SUPPORT_AGENTS)])]
    trace = one_trace(captured)
    assert pairs(trace, "spawn") == [("front", "triage")]  # the app's agent spawned it, not its workflow
    assert stops(trace) == [("triage", "end", None, False), ("desk", "end", None, False)]


async def test_a_run_an_autogen_agents_tool_makes_is_spawned_by_that_agent(captured):
    from autogen_agentchat.agents import AssistantAgent

    from orch_otel.integrations.autogen.testing import replay as replay_client
    from orch_otel.integrations.autogen.testing import tool_call as autogen_tool_call

    async def ask_support(question: str) -> str:
        """Ask the support desk."""
        out = await Runner.run(apps.support_agents(), question, run_config=RunConfig(workflow_name="support"))
        return out.final_output

    # desk's model asks for ask_support (no reflection: the tool's result is desk's answer); the tool runs the SDK
    desk = AssistantAgent("desk", tools=[ask_support], model_client=replay_client(
        autogen_tool_call("ask_support", {"question": "Is invoice 42 paid?"}, "call_desk")))
    await desk.run(task="go")
    assert span_tree(captured.spans) == [("invoke_agent desk", [
        ("chat ReplayChatCompletionClient", []), ("execute_tool ask_support", SUPPORT_AGENTS)])]
    trace = one_trace(captured)
    assert trace["system"] == "autogen"
    assert pairs(trace, "spawn") == [("desk", "triage")]


def test_an_input_guardrail_tripwire_inside_the_apps_workflow_is_the_guarded_agents_forced_stop(captured):
    with pytest.raises(InputGuardrailTripwireTriggered), orch_otel.workflow("support", task_id="ticket-52"):
        apps.input_tripwire()
    # the blocking guardrail trips before the agent's first turn: its agent, spawned, makes no call
    assert span_tree(captured.spans) == [("invoke_workflow support", [("invoke_agent assistant", [])])]
    trace = one_trace(captured)
    assert pairs(trace, "spawn") == [("support", "assistant")]
    # the tripwire stops the agent's run; its exception ends the app's block, the app's run failing with it
    assert stops(trace) == [("assistant", "input_guardrail_tripwire", "no_secrets", True),
                            ("support", "error", None, True)]
    (agent_return,) = events_of(trace, "return", agent="assistant")
    assert agent_return["status"] == "error"


def test_max_turns_inside_the_apps_workflow_is_the_agents_forced_stop_and_still_raises(captured):
    with pytest.raises(MaxTurnsExceeded), orch_otel.workflow("support", task_id="ticket-52"):
        apps.max_turns()
    assert span_tree(captured.spans) == [("invoke_workflow support", [
        ("invoke_agent poller", [CHAT, tool("poll"), CHAT, tool("poll")])])]  # m1, m2: then the limit
    trace = one_trace(captured)
    assert stops(trace) == [("poller", "max_turns", "max_turns", True), ("support", "error", None, True)]
    assert [e["call_id"] for e in events_of(trace, "tool_call")] == ["m1", "m2"]


def test_a_tool_use_behavior_stop_inside_the_apps_workflow_is_the_agents_own(captured):
    with orch_otel.workflow("weather-desk"):
        assert apps.stop_on_first_tool().final_output == "sunny in Paris"
    assert span_tree(captured.spans) == [("invoke_workflow weather-desk", [
        ("invoke_agent forecaster", [CHAT, tool("get_weather")])])]  # no second workflow inside the app's
    trace = one_trace(captured)
    assert stops(trace) == [("forecaster", "stop_on_first_tool", "get_weather", False),
                            ("weather-desk", "end", None, False)]


def test_an_approval_interrupt_and_its_resume_inside_the_apps_workflow_are_one_trace(captured):
    with orch_otel.workflow("refunds-desk", task_id="ticket-53"):
        first, second = apps.approved_after_interrupt()
    assert [i.raw_item.call_id for i in first.interruptions] == ["a1"] and second.final_output == "Refunded 5."
    # the cashier asks for refund a1 and waits; the resumed run runs a1 in the cashier's next instance, then it answers
    assert span_tree(captured.spans) == [("invoke_workflow refunds-desk", [
        ("invoke_agent cashier", [CHAT]), ("invoke_agent cashier", [tool("refund"), CHAT])])]
    trace = one_trace(captured)
    assert trace["task_id"] == "ticket-53"
    assert pairs(trace, "spawn") == [("refunds-desk", "cashier"), ("refunds-desk", "cashier")]
    assert [(e["instance"], e.get("outcome")) for e in events_of(trace, "return", agent="cashier")] == [
        ("cashier#1", "interrupted"), ("cashier#2", None)]
    (human,) = events_of(trace, "human_intervention")
    assert (human["to"], human["approved"]) == ("cashier", ["a1"])
    assert "resume_of" not in human  # the interrupted run is this trace: no other run to chain
    assert [(e["call_id"], e["instance"]) for e in events_of(trace, "tool_call")] == [("a1", "cashier#2")]
    assert stops(trace) == [("cashier", "end", None, False), ("refunds-desk", "end", None, False)]
    cashiers = [s for s in captured.spans if s.name == "invoke_agent cashier"]
    assert [s.attributes.get(Attr.OUTCOME) for s in cashiers] == ["interrupted", None]
    assert all(s.status == "unset" for s in cashiers)  # waiting for a human is not an error


def test_a_resume_inside_the_apps_workflow_names_the_run_it_resumes(captured):
    agent = apps.approval_agent()
    first = apps.run(agent, "Refund 5.", run_config=RunConfig(workflow_name="refunds"))  # the SDK's own root
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    with orch_otel.workflow("refunds-desk", task_id="ticket-54"):
        asyncio.run(Runner.run(agent, state, run_config=RunConfig(workflow_name="refunds")))
    interrupted, resumed = (check_trace(t) for t in captured.traces())
    assert (interrupted["system"], resumed["system"], resumed["task_id"]) == ("openai_agents", "custom", "ticket-54")
    (human,) = events_of(resumed, "human_intervention")
    assert (human["to"], human["resume_of"]) == ("cashier", interrupted["trace_id"])


def test_a_top_level_resume_of_an_interrupt_inside_the_apps_workflow_joins_its_trace_and_task(captured):
    agent = apps.approval_agent()
    with orch_otel.workflow("refunds-desk", task_id="ticket-58"):
        first = apps.run(agent, "Refund 5.", run_config=RunConfig(workflow_name="refunds"))
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    apps.run(agent, state, run_config=RunConfig(workflow_name="refunds"))  # the SDK's own root
    interrupted, resumed = (check_trace(t) for t in captured.traces())
    assert (interrupted["system"], resumed["system"]) == ("custom", "openai_agents")
    assert resumed["task_id"] == "ticket-58"  # the app's task: one conversation, one task
    (human,) = events_of(resumed, "human_intervention")
    assert human["resume_of"] == interrupted["trace_id"]


@pytest.mark.parametrize("block", ["none", "task"])
def test_outside_any_run_and_inside_task_the_run_keeps_its_own_root(captured, block):
    if block == "task":  # task() starts no span: no run around the SDK's; it names the task
        with orch_otel.task("ticket-55"):
            apps.support()()
    else:
        apps.support()()
    assert span_tree(captured.spans) == [("invoke_workflow support", SUPPORT_AGENTS)]
    trace = one_trace(captured)
    assert trace["system"] == "openai_agents"
    if block == "task":
        assert trace["task_id"] == "ticket-55"
    assert events_of(trace, "spawn") == []
    assert stops(trace) == [("triage", "end", None, False), ("support", "end", None, False)]


# The task id of the SDK's own root (docs/ids-and-rewards.md#which-task-id-wins): the run's group_id, else the
# task() block's, else the interrupted run's it resumes, else the session's id, else the trace id.
def test_inside_task_two_runs_of_a_session_take_the_blocks_task_not_the_sessions(captured):
    with orch_otel.task("ticket-57"):
        assert apps.two_runs_in_one_session() == ("Hello Ada.", "You are Ada.")  # session "conv-7"
    first, second = (check_trace(t) for t in captured.traces())
    assert first["trace_id"] != second["trace_id"]
    assert first["task_id"] == second["task_id"] == "ticket-57"


def test_inside_task_the_runs_group_id_names_its_task(captured):
    with orch_otel.task("ticket-57"):
        apps.run(apps.support_agents(), run_config=RunConfig(workflow_name="support", group_id="thread-10"))
    assert one_trace(captured)["task_id"] == "thread-10"


def test_a_resume_outside_the_block_joins_the_task_of_the_run_it_resumes_not_the_sessions(captured):
    agent, session = apps.approval_agent(), SQLiteSession("conv-12")
    with orch_otel.task("ticket-59"):
        first = apps.run(agent, "Refund 5.", session=session, run_config=RunConfig(workflow_name="refunds"))
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    apps.run(agent, state, session=session, run_config=RunConfig(workflow_name="refunds"))
    interrupted, resumed = (check_trace(t) for t in captured.traces())
    assert interrupted["task_id"] == resumed["task_id"] == "ticket-59"
    (human,) = events_of(resumed, "human_intervention")
    assert human["resume_of"] == interrupted["trace_id"]


@orch_otel.workflow("support", task_id="ticket-56")
def support_desk(question: str) -> str:
    # a fresh app per call, as a replay needs
    return apps.run(apps.support_agents(), question, run_config=RunConfig(workflow_name="support")).final_output


class CalledForReal(AssertionError):
    """A replay called a model or a tool instead of serving it."""


class RaisingModel(Model):
    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise CalledForReal("a model was called during replay")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise CalledForReal("a model was called during replay")


@function_tool(name_override="lookup_invoice")
def raising_lookup(number: str) -> str:
    """Look an invoice up."""
    raise CalledForReal("tool lookup_invoice was called during replay")


def test_a_run_inside_a_workflow_function_replays_with_every_call_served(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        assert support_desk("Is invoice 42 paid?") == "Your invoice is paid."
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert pairs(trace, "spawn") == [("support", "triage")]
    # from here on a model or the lookup tool called for real raises
    monkeypatch.setattr(apps, "model", lambda *steps, traces=True: RaisingModel())
    monkeypatch.setattr(apps, "lookup_invoice", raising_lookup)
    result = replay(trace, support_desk, contents=conversion.contents)
    assert result.equal, result.divergence.describe()
    # served: triage's 2 model calls, billing's 2 and its lookup_invoice; nothing live (the two
    # handoffs are the runner's own moves, no call a replay serves or makes)
    assert (result.served, result.live, result.app_errors) == (5, 0, [None])


@orch_otel.workflow("refunds-desk", task_id="ticket-59")
def refunds_desk(text: str) -> str:
    agent = apps.approval_agent()  # a fresh agent (and model script) per call, as a replay needs
    first = apps.run(agent, text, run_config=RunConfig(workflow_name="refunds"))
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    return apps.run(agent, state, run_config=RunConfig(workflow_name="refunds")).final_output


@function_tool(name_override="refund", needs_approval=True)
def raising_refund(amount: int) -> str:
    """Refund an amount (a human approves it first)."""
    raise CalledForReal("tool refund was called during replay")


def test_an_approval_and_its_resume_inside_a_workflow_function_replay_with_every_call_served(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        assert refunds_desk("Refund 5.") == "Refunded 5."
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert [e["to"] for e in events_of(trace, "human_intervention")] == ["cashier"]
    monkeypatch.setattr(apps, "model", lambda *steps, traces=True: RaisingModel())
    monkeypatch.setattr(apps, "refund", raising_refund)
    result = replay(trace, refunds_desk, contents=conversion.contents)
    assert result.equal, result.divergence.describe()
    # served: the cashier's call asking for refund a1, the approved refund, and its answer after it
    assert (result.served, result.live, result.app_errors) == (3, 0, [None])
