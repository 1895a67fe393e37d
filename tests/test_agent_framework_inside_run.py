"""A Microsoft Agent Framework workflow or agent run inside a run the app
records itself (``orch_otel.workflow(...)``, a ``@workflow`` function, an
``orch_otel.agent``): one trace under the app's root, the workflow (or agent)
a sub-agent that run spawned; a request for a person's answer and the
continuation that brings it in the same trace; inside ``orch_otel.task()``
the run keeps its own root. Expected trees and events are written from the
apps' code (tests/maf_apps.py)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture, need_agent_framework, span_tree

need_agent_framework()

import maf_apps as apps  # noqa: E402
from agent_framework import AgentSession, Message  # noqa: E402

import orch_otel  # noqa: E402
from orch_otel import Attr  # noqa: E402
from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import replay  # noqa: E402

instrumented = instrumentor_fixture(AgentFrameworkInstrumentor)

TIMEOUT = 30
CHAT = ("chat scripted-model", [])
# sequential(): the conversation goes to drafter ("a draft"), then to reviewer ("looks good"): one model call each
SEQUENTIAL_AGENTS = [("invoke_agent drafter", [CHAT]), ("invoke_agent reviewer", [CHAT])]


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def pairs(trace: dict, kind: str) -> list[tuple[str, str]]:
    return [(e["agent"], e["to"]) for e in events_of(trace, kind)]


def stops(trace: dict) -> list[tuple[str, str]]:
    return [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")]


def run(coro) -> None:
    asyncio.run(asyncio.wait_for(coro, TIMEOUT))


@pytest.mark.parametrize("stream", [False, True])
def test_a_sequential_workflow_inside_the_apps_workflow_is_one_trace_under_its_root(captured, stream):
    async def app() -> None:
        with orch_otel.workflow("support", task_id="ticket-70"):
            await apps.consume(apps.sequential(), "go", stream=stream)

    run(app())
    assert span_tree(captured.spans) == [("invoke_workflow support", [("invoke_agent Sequential", SEQUENTIAL_AGENTS)])]
    workflow = next(s for s in captured.spans if s.name == "invoke_agent Sequential")
    assert (workflow.attributes[Attr.AGENT_SPAWNED], workflow.attributes[Attr.AGENT_ROLE]) == (True, "Workflow")
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == ("ticket-70", "custom")
    assert [(d["agent"], d["targets"]) for d in decisions_of(trace, "spawn")] == [("support", ["Sequential"])]
    assert pairs(trace, "spawn") == [("support", "Sequential")]  # its participants' turns are no spawns
    assert [(d["agent"], d["to"], d["options"]) for d in decisions_of(trace, "delegate")] == [
        ("Sequential", "drafter", ["drafter"]), ("Sequential", "reviewer", ["reviewer"])]
    assert pairs(trace, "return")[-1] == ("Sequential", "support")
    # the workflow runs out of messages: its own end; the app's block then ends the app's run
    assert stops(trace) == [("Sequential", "end"), ("support", "end")]


def test_a_standalone_agent_inside_an_apps_agent_is_spawned_by_that_agent(captured):
    async def app() -> None:
        with orch_otel.workflow("desk"), orch_otel.agent("front"):
            await apps.consume(apps.weather_agent(), "weather?", stream=True)

    run(app())
    # weather calls get_weather twice in one turn (w1, w2), then answers
    assert span_tree(captured.spans) == [("invoke_workflow desk", [("invoke_agent front", [("invoke_agent weather", [
        CHAT, ("execute_tool get_weather", []), ("execute_tool get_weather", []), CHAT])])])]
    trace = one_trace(captured)
    assert trace["system"] == "custom"
    assert pairs(trace, "spawn") == [("front", "weather")]
    assert [e["call_id"] for e in events_of(trace, "tool_call")] == ["w1", "w2"]
    assert stops(trace) == [("weather", "end"), ("desk", "end")]


def test_a_request_and_the_continuation_answering_it_inside_the_apps_workflow_are_one_trace(captured):
    async def app() -> None:
        with orch_otel.workflow("support", task_id="ticket-72"):
            await apps.handoff_and_resume()

    run(app())
    # triage looks the weather up (t1) and hands off (h1); billing answers, the workflow asks the user;
    # the continuation gives billing the user's answer, billing answers again and the workflow asks again
    assert span_tree(captured.spans) == [("invoke_workflow support", [
        ("invoke_agent Handoff", [
            ("invoke_agent triage", [CHAT, ("execute_tool get_weather", []), CHAT,
                                     ("execute_tool handoff_to_billing", [])]),
            ("invoke_agent billing", [CHAT, ("orch.stop", [])])]),
        ("invoke_agent Handoff", [("invoke_agent billing", [CHAT, ("orch.stop", [])])]),
    ])]
    trace = one_trace(captured)
    assert trace["task_id"] == "ticket-72"
    assert pairs(trace, "spawn") == [("support", "Handoff"), ("support", "Handoff")]
    assert [(e["instance"], e.get("outcome")) for e in events_of(trace, "return", agent="Handoff")] == [
        ("Handoff#1", "interrupted"), ("Handoff#2", "interrupted")]
    (human,) = events_of(trace, "human_intervention")
    assert human["recipients"] == ["billing"]  # the agent whose reply the workflow asked the user about
    assert "resume_of" not in human  # the run it continues is this trace: no other run to chain
    assert stops(trace) == [("billing", "end"), ("Handoff", "interrupt"), ("billing", "end"),
                            ("Handoff", "interrupt"), ("support", "end")]


def test_a_continuation_inside_the_apps_workflow_names_the_run_it_continues(captured):
    async def app() -> None:
        workflow = apps.handoff()
        result = await workflow.run("my bill")  # the framework's own root: it asks the user
        (request,) = [e for e in result if e.type == "request_info"]
        with orch_otel.workflow("support", task_id="ticket-74"):
            await workflow.run(responses={request.request_id: [Message(role="user", contents=["thanks"])]})

    run(app())
    # the continuation gives billing the user's answer; billing answers, and the workflow asks again
    assert span_tree(captured.spans)[1] == ("invoke_workflow support", [
        ("invoke_agent Handoff", [("invoke_agent billing", [CHAT, ("orch.stop", [])])])])
    asked, continued = (check_trace(t) for t in captured.traces())
    assert (asked["system"], continued["system"], continued["task_id"]) == ("agent_framework", "custom", "ticket-74")
    (human,) = events_of(continued, "human_intervention")
    assert (human["recipients"], human["resume_of"]) == (["billing"], asked["trace_id"])


def test_a_request_inside_the_apps_workflow_answered_at_the_top_level_joins_its_task(captured):
    async def app() -> None:
        workflow = apps.handoff()
        with orch_otel.workflow("support", task_id="ticket-77"):
            result = await workflow.run("my bill")
        (request,) = [e for e in result if e.type == "request_info"]
        await workflow.run(responses={request.request_id: [Message(role="user", contents=["thanks"])]})

    run(app())
    asked, continued = (check_trace(t) for t in captured.traces())
    assert (asked["system"], continued["system"]) == ("custom", "agent_framework")
    assert continued["task_id"] == "ticket-77"  # the app's task: one conversation, one task
    (human,) = events_of(continued, "human_intervention")
    assert (human["recipients"], human["resume_of"]) == (["billing"], asked["trace_id"])


@pytest.mark.parametrize("block", ["none", "task"])
def test_outside_any_run_and_inside_task_the_workflow_keeps_its_own_root(captured, block):
    async def app() -> None:
        if block == "task":  # task() starts no span: no run around the workflow's
            with orch_otel.task("ticket-73"):
                await apps.consume(apps.sequential(), "go")
        else:
            await apps.consume(apps.sequential(), "go")

    run(app())
    assert span_tree(captured.spans) == [("invoke_workflow Sequential", SEQUENTIAL_AGENTS)]
    trace = one_trace(captured)
    assert trace["system"] == "agent_framework"
    if block == "task":
        assert trace["task_id"] == "ticket-73"  # the block's task, not the workflow object's id
    assert events_of(trace, "spawn") == []
    assert stops(trace) == [("Sequential", "end")]


# A standalone agent's root (docs/ids-and-rewards.md#which-task-id-wins): the task() block's id, else its
# session's id (the framework's conversation), else the trace id.
@pytest.mark.parametrize(("block", "session", "expected"), [
    ("task", None, "ticket-78"),
    ("task", "session-5", "ticket-78"),   # the block's before the session's
    ("none", "session-5", "session-5"),
    ("none", None, None),                 # the trace id
])
@pytest.mark.parametrize("stream", [False, True])
def test_a_standalone_agents_root_takes_the_blocks_task_then_its_sessions(captured, block, session, expected,
                                                                          stream):
    async def ask() -> None:
        agent = apps.writer("drafter", "a draft")
        kwargs = {"session": AgentSession(session_id=session)} if session else {}
        if stream:
            async for _ in agent.run("go", stream=True, **kwargs):
                pass
        else:
            await agent.run("go", **kwargs)

    async def app() -> None:
        if block == "task":
            with orch_otel.task("ticket-78"):
                await ask()
        else:
            await ask()

    run(app())
    trace = one_trace(captured)
    assert (trace["system"], trace["task_id"]) == ("agent_framework", expected or trace["trace_id"])


@orch_otel.workflow("support", task_id="ticket-75")
async def review_desk(text: str) -> str:
    result = await apps.sequential().run(text)  # a fresh workflow per call, as a replay needs
    return result.get_outputs()[-1].messages[-1].text


def test_a_workflow_inside_a_workflow_function_replays_with_every_call_served(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        assert asyncio.run(review_desk("go")) == "looks good"
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert pairs(trace, "spawn") == [("support", "Sequential")]
    monkeypatch.setattr(apps, "REPLAYING", True)  # from here on the scripted model raises if called
    result = replay(trace, review_desk, contents=conversion.contents)
    assert result.equal, result.divergence.describe()
    assert (result.served, result.live, result.app_errors) == (2, 0, [None])  # drafter's and reviewer's calls
