"""A LangGraph graph run inside a run the app records itself
(``orch_otel.workflow(...)``, a ``@workflow`` function): one trace under the
app's root, the graph an agent that run spawned (an AutoGen agent's tool
that runs a graph too); inside ``orch_otel.task()``
the graph keeps its own root. Expected trees and events are written from the
apps' code (tests/langgraph_apps.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import langgraph_apps as apps
import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture, span_tree
from langchain_core.tools import tool
from langgraph.types import Command

import orch_otel
from orch_otel import Attr
from orch_otel.content import ContentPolicy
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel
from orch_otel.recorder import get_recorder
from orch_otel.replaying import replay

instrumented = instrumentor_fixture(LangGraphInstrumentor, AutoGenInstrumentor)


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def pairs(trace: dict, kind: str) -> list[tuple[str, str]]:
    return [(e["agent"], e["to"]) for e in events_of(trace, kind)]


def supervisor_agents() -> list[tuple]:
    """build_supervisor's agents as it runs them: supervisor hands off to math_expert, then to
    research_expert, then answers (each worker: a tool call, then its answer)."""
    def chat(model: str) -> tuple:
        return f"chat {model}", []

    def tool(name: str) -> tuple:
        return f"execute_tool {name}", []

    return [
        ("invoke_agent supervisor", [chat("supervisor-llm"), tool("transfer_to_math_expert")]),
        ("invoke_agent math_expert", [chat("math-llm"), tool("add"), chat("math-llm")]),
        ("invoke_agent supervisor", [chat("supervisor-llm"), tool("transfer_to_research_expert")]),
        ("invoke_agent research_expert", [chat("research-llm"), tool("lookup"), chat("research-llm")]),
        ("invoke_agent supervisor", [chat("supervisor-llm")]),
    ]


SUPERVISOR_SPAWNS = [("supervision", "supervisor"), ("supervision", "math_expert"), ("supervision", "supervisor"),
                     ("supervision", "research_expert"), ("supervision", "supervisor")]


def test_a_supervisor_graph_inside_the_apps_workflow_is_one_trace_under_its_root(captured):
    with orch_otel.workflow("support", task_id="ticket-30"):
        out = apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
    assert out["messages"][-1].content == "all done"
    assert span_tree(captured.spans) == [
        ("invoke_workflow support", [("invoke_agent supervision", supervisor_agents())])]
    graph = next(s for s in captured.spans if s.name == "invoke_agent supervision")
    assert (graph.attributes[Attr.AGENT_SPAWNED], graph.attributes[Attr.AGENT_ROLE]) == (True, "team")
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == ("ticket-30", "custom")
    assert pairs(trace, "spawn") == [("support", "supervision"), *SUPERVISOR_SPAWNS]
    assert pairs(trace, "return")[-1] == ("supervision", "support")
    assert [(d["agent"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("supervisor", "math_expert"), ("supervisor", "research_expert")]
    # the supervisor's answer ends the graph; the app's run then ends when its block does
    assert [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")] == [
        ("supervisor", "end"), ("support", "end")]


async def test_the_same_under_asyncio(captured):
    with orch_otel.workflow("support", task_id="ticket-30"):
        await apps.build_supervisor().ainvoke(apps.user_input("what is 1+2?"))
    assert span_tree(captured.spans) == [
        ("invoke_workflow support", [("invoke_agent supervision", supervisor_agents())])]
    assert pairs(one_trace(captured), "spawn")[0] == ("support", "supervision")


def test_a_graph_inside_an_apps_agent_is_spawned_by_that_agent(captured):
    with orch_otel.workflow("desk"), orch_otel.agent("triage"):
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
    assert span_tree(captured.spans) == [
        ("invoke_workflow desk", [("invoke_agent triage", [("invoke_agent supervision", supervisor_agents())])])]
    # triage is the app's own agent (not marked spawned); the graph is the one it spawned
    assert pairs(one_trace(captured), "spawn") == [("triage", "supervision"), *SUPERVISOR_SPAWNS]


async def test_a_graph_an_autogen_agents_tool_runs_is_spawned_by_that_agent(captured):
    from autogen_agentchat.agents import AssistantAgent

    from orch_otel.integrations.autogen.testing import replay as replay_client
    from orch_otel.integrations.autogen.testing import tool_call as autogen_tool_call

    async def ask_experts(question: str) -> str:
        """Ask the supervisor's experts."""
        out = await apps.build_supervisor().ainvoke(apps.user_input(question))
        return out["messages"][-1].content

    # desk's model asks for ask_experts (no reflection: the tool's result is desk's answer); the tool runs the graph
    desk = AssistantAgent("desk", tools=[ask_experts], model_client=replay_client(
        autogen_tool_call("ask_experts", {"question": "what is 1+2?"}, "call_desk")))
    await desk.run(task="go")
    assert span_tree(captured.spans) == [("invoke_agent desk", [
        ("chat ReplayChatCompletionClient", []),
        ("execute_tool ask_experts", [("invoke_agent supervision", supervisor_agents())]),
    ])]
    trace = one_trace(captured)
    assert trace["system"] == "autogen"
    assert pairs(trace, "spawn") == [("desk", "supervision"), *SUPERVISOR_SPAWNS]


@orch_otel.workflow("support", task_id="ticket-31")
def support_desk(question: str) -> str:
    out = apps.build_supervisor().invoke(apps.user_input(question))
    return out["messages"][-1].content


class CalledForReal(AssertionError):
    """A replay called a model or a tool instead of serving it."""


class RaisingModel(FakeToolCallingModel):
    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise CalledForReal(f"model {self.model_name} was called during replay")


@tool("add")
def raising_add(a: int, b: int) -> int:
    """Add two numbers."""
    raise CalledForReal("tool add was called during replay")


@tool("lookup")
def raising_lookup(query: str) -> str:
    """Look something up."""
    raise CalledForReal("tool lookup was called during replay")


def test_a_graph_inside_a_workflow_function_replays_with_every_call_served(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        assert support_desk("what is 1+2?") == "all done"
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert pairs(trace, "spawn")[0] == ("support", "supervision")
    # from here on a model or tool called for real raises
    monkeypatch.setattr(apps, "FakeToolCallingModel", RaisingModel)
    monkeypatch.setattr(apps, "add", raising_add)
    monkeypatch.setattr(apps, "lookup", raising_lookup)
    result = replay(trace, support_desk, contents=conversion.contents)
    assert result.equal, result.divergence.describe()
    # served: supervisor's 3 model calls, math_expert's 2 and add, research_expert's 2 and lookup;
    # live: the 2 handoff tools, which run as themselves (docs/langgraph.md, Replay seams)
    assert (result.served, result.live, result.app_errors) == (9, 2, [None])


def test_an_interrupt_and_its_resume_inside_the_apps_workflow(captured):
    app = apps.build_interrupt()
    config = {"configurable": {"thread_id": "thread-43"}}
    with orch_otel.workflow("review", task_id="ticket-32"):
        first = app.invoke(apps.user_input("write a post"), config)
        (pending,) = first["__interrupt__"]
        second = app.invoke(Command(resume="yes"), config)
    assert second["messages"][-1].content == "reviewer says yes"
    # draft calls its model; approval's ask interrupts; the resume runs approval again (draft does not run)
    assert span_tree(captured.spans) == [("invoke_workflow review", [
        ("invoke_agent publishing", [("invoke_agent draft", [("chat draft-llm", [])]), ("invoke_agent approval", [])]),
        ("invoke_agent publishing", [("invoke_agent approval", [])]),
    ])]
    trace = one_trace(captured)
    assert trace["task_id"] == "ticket-32"
    assert pairs(trace, "spawn") == [("review", "publishing"), ("publishing", "draft"), ("publishing", "approval"),
                                     ("review", "publishing"), ("publishing", "approval")]
    assert [(e["agent"], e.get("outcome")) for e in events_of(trace, "return")] == [
        ("draft", None), ("approval", "interrupted"), ("publishing", "interrupted"),
        ("approval", None), ("publishing", None)]
    (human,) = events_of(trace, "human_intervention")
    assert human["to"] == "publishing" and human["content_ref"] == ContentPolicy().apply("yes").ref
    assert "resume_of" not in human  # the interrupted run is this trace: no other run to chain
    assert [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")] == [("review", "end")]
    graphs = [s for s in captured.spans if s.name == "invoke_agent publishing"]
    assert [s.attributes.get(Attr.OUTCOME) for s in graphs] == ["interrupted", None]
    assert all(s.status == "unset" for s in graphs)  # an interrupt is not an error


def test_a_resume_inside_the_apps_workflow_names_the_run_it_resumes(captured):
    app = apps.build_interrupt()
    config = {"configurable": {"thread_id": "thread-44"}}
    app.invoke(apps.user_input("write a post"), config)  # the graph's own run: interrupted
    with orch_otel.workflow("review", task_id="ticket-33"):
        app.invoke(Command(resume="no"), config)
    interrupted, resumed = (check_trace(t) for t in captured.traces())
    assert (interrupted["system"], resumed["system"]) == ("langgraph", "custom")
    (human,) = events_of(resumed, "human_intervention")
    assert (human["to"], human["resume_of"]) == ("publishing", interrupted["trace_id"])


@pytest.mark.parametrize("block", ["none", "task"])
def test_outside_any_run_and_inside_task_the_graph_keeps_its_own_root(captured, block):
    config = {"metadata": {"orch.task_id": "ticket-34"}}
    if block == "task":  # task() starts no span: no run around the graph
        with orch_otel.task("ticket-35"):
            apps.build_supervisor().invoke(apps.user_input("what is 1+2?"), config)
    else:
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"), config)
    assert span_tree(captured.spans) == [("invoke_workflow supervision", supervisor_agents())]
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == ("ticket-34", "langgraph")  # the run's metadata names its task
    assert pairs(trace, "spawn") == SUPERVISOR_SPAWNS
    assert [(d["agent"], d["reason"]) for d in decisions_of(trace, "stop")] == [
        ("supervisor", "end"), ("supervision", "end")]


# The task id of a graph's own root (docs/ids-and-rewards.md#which-task-id-wins): the run's orch.task_id
# metadata, else the task() block's, else the interrupted run's it resumes, else the thread id, else the trace id.
@pytest.mark.parametrize(("config", "expected"), [
    ({}, "ticket-37"),                                                    # no id of its own: the block's
    ({"configurable": {"thread_id": "thread-46"}}, "ticket-37"),          # the block's before the thread's
    ({"configurable": {"thread_id": "thread-46"}, "metadata": {"orch.task_id": "ticket-38"}}, "ticket-38"),
])
def test_inside_task_the_graphs_root_takes_the_blocks_task_unless_its_metadata_names_one(captured, config,
                                                                                          expected):
    with orch_otel.task("ticket-37"):
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"), config)
    trace = one_trace(captured)
    assert (trace["task_id"], trace["system"]) == (expected, "langgraph")


def test_an_async_graph_run_inside_task_takes_the_blocks_task(captured):
    async def app() -> None:
        with orch_otel.task("ticket-41"):
            await apps.build_supervisor().ainvoke(apps.user_input("what is 1+2?"),
                                                  {"configurable": {"thread_id": "thread-48"}})

    asyncio.run(app())
    assert one_trace(captured)["task_id"] == "ticket-41"


def test_two_graph_runs_in_one_task_block_are_two_traces_of_that_task(captured):
    with orch_otel.task("ticket-39"):
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))
    first, second = (check_trace(t) for t in captured.traces())
    assert first["trace_id"] != second["trace_id"]
    assert first["task_id"] == second["task_id"] == "ticket-39"


def test_a_resume_outside_the_block_joins_the_task_of_the_run_it_resumes(captured):
    app = apps.build_interrupt()
    config = {"configurable": {"thread_id": "thread-47"}}
    with orch_otel.task("ticket-40"):
        app.invoke(apps.user_input("write a post"), config)  # interrupted
    app.invoke(Command(resume="yes"), config)  # no block, no metadata: the interrupted run's task, not the thread's
    interrupted, resumed = (check_trace(t) for t in captured.traces())
    assert interrupted["task_id"] == resumed["task_id"] == "ticket-40"
    (human,) = events_of(resumed, "human_intervention")
    assert human["resume_of"] == interrupted["trace_id"]


@orch_otel.workflow("review", task_id="ticket-36")
def review_desk(text: str, answer: str) -> str:
    app = apps.build_interrupt()  # a fresh checkpointer per call: the replay's run starts from nothing too
    config = {"configurable": {"thread_id": "thread-45"}}
    app.invoke(apps.user_input(text), config)
    return app.invoke(Command(resume=answer), config)["messages"][-1].content


def test_an_interrupt_and_its_resume_inside_a_workflow_function_replay_with_every_call_served(captured, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        assert review_desk("write a post", "yes") == "reviewer says yes"
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert [e["to"] for e in events_of(trace, "human_intervention")] == ["publishing"]
    monkeypatch.setattr(apps, "FakeToolCallingModel", RaisingModel)
    result = replay(trace, review_desk, contents=conversion.contents)
    assert result.equal, result.divergence.describe()
    assert (result.served, result.live, result.app_errors) == (1, 0, [None])  # draft's one model call
