"""Replay of LangGraph apps: each test app is recorded with content, then run
again by a factory whose models and tools raise if they are called at all,
so every answer must come from the recording; the orchestration must be the
recorded one. Also: changed apps diverge where they change, forks, and
recordings a replay cannot use."""

from __future__ import annotations

from typing import Any

import langgraph_apps as apps
import langgraph_shapes as shapes
import pytest
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from langchain_core.tools import tool
from langgraph.types import Command

from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel
from orch_otel.recorder import get_recorder
from orch_otel.replaying import ForkError, MissingContent, options_at, orchestration, replay
from orch_otel.replaying._compare import first_divergence
from orch_otel.testing import capture

instrumented = instrumentor_fixture(LangGraphInstrumentor)


class CalledForReal(AssertionError):
    """A replay called a model or a tool instead of serving it."""


class RaisingModel(FakeToolCallingModel):
    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise CalledForReal(f"model {self.model_name} was called during replay")


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    raise CalledForReal("tool add was called during replay")


@tool
def lookup(query: str) -> str:
    """Look something up."""
    raise CalledForReal("tool lookup was called during replay")


# app name -> how the test runs it: (builder, input, config)
RUNS: dict[str, tuple[Any, Any, dict | None]] = {
    "supervisor": (apps.build_supervisor, apps.user_input("what is 1+2?"), None),
    "swarm": (apps.build_swarm, apps.user_input("what is 2+2?"), {"configurable": {"thread_id": "replay-swarm"}}),
    "fanout": (lambda: apps.build_fanout(3), {}, None),
    "nested": (apps.build_nested, apps.user_input(), None),
    "router": (lambda: apps.build_router("billing"), apps.user_input("my bill"), None),
    "path_map_router": (apps.build_path_map_router, apps.user_input("find out"), None),
    "literal_router": (lambda: apps.build_literal_router("tech"), apps.user_input("it is broken"), None),
    "command_handoffs": (apps.build_command_handoffs, apps.user_input(), None),
    "command_end": (apps.build_command_end, apps.user_input("it crashes"), None),
    "agent_pipeline": (apps.build_agent_pipeline, apps.user_input("research langgraph"), None),
    "failing": (apps.build_failing, apps.user_input(), None),
}


def record(captured, monkeypatch, run) -> tuple[list[dict], dict[str, str]]:
    """Run ``run()`` with content captured; its traces and contents."""
    with monkeypatch.context() as m, capture() as spans:
        m.setattr(get_recorder().content, "capture", True)
        run()
    conversions = spans.conversions()
    contents = {ref: text for c in conversions for ref, text in c.contents.items()}
    return [check_trace(c.trace) for c in conversions], contents


def raising(monkeypatch) -> None:
    """From here on the apps build models and tools that raise when called."""
    monkeypatch.setattr(apps, "FakeToolCallingModel", RaisingModel)
    monkeypatch.setattr(apps, "add", add)
    monkeypatch.setattr(apps, "lookup", lookup)


def invoke(name: str) -> None:
    build, graph_input, config = RUNS[name]
    try:
        build().invoke(graph_input, config)
    except apps.BrokenNode:
        pass  # the failing app fails: that is its run


@pytest.mark.parametrize("name", sorted(RUNS))
def test_replay_serves_every_call_and_gives_the_recorded_orchestration(name, captured, monkeypatch):
    (trace,), contents = record(captured, monkeypatch, lambda: invoke(name))
    raising(monkeypatch)
    result = replay(trace, RUNS[name][0](), contents=contents)
    assert result.equal, result.divergence.describe()
    replayed = check_trace(result.trace)
    # the same events (parallel branches, as in fanout, may interleave otherwise)
    assert sorted(e["type"] for e in replayed["events"]) == sorted(e["type"] for e in trace["events"])
    models = len(events_of(trace, "message", channel="llm"))
    assert result.served >= models  # every model call was served (tools too, but for handoff tools)


def test_an_interrupted_run_and_its_resume_replay_as_one_chain(captured, monkeypatch):
    config = {"configurable": {"thread_id": "replay-interrupt"}}

    def run() -> None:
        app = apps.build_interrupt()
        app.invoke(apps.user_input("write a post"), config)
        app.invoke(Command(resume="yes"), config)

    (first, resumed), contents = record(captured, monkeypatch, run)
    assert decisions_of(first, "stop")[-1]["reason"] == "interrupt"
    (human,) = events_of(resumed, "human_intervention")
    assert human["resume_of"] == first["trace_id"]
    raising(monkeypatch)
    result = replay([first, resumed], apps.build_interrupt(), contents=contents)
    assert result.equal, result.divergence.describe()
    new_first, new_resumed = result.traces
    assert decisions_of(new_first, "stop")[-1]["reason"] == "interrupt"
    (new_human,) = events_of(new_resumed, "human_intervention")
    assert new_human["resume_of"] == new_first["trace_id"]  # the resume continues the replayed run


def helpdesk(pick) -> Any:
    """``build_router``'s graph with the routing function given: triage (model) -> pick -> billing | tech."""
    from langgraph.graph import END, START, StateGraph

    triage_model = FakeToolCallingModel(model_name="triage-llm", responses=[apps.ai("billing")])
    desk_models = {n: FakeToolCallingModel(model_name=f"{n}-llm", responses=[apps.ai(n)]) for n in ("billing", "tech")}
    graph = StateGraph(apps.RouteState)
    graph.add_node("triage", lambda s: {"messages": [triage_model.invoke(s["messages"])], "route": "billing"})
    for name, model in desk_models.items():
        graph.add_node(name, lambda s, m=model: {"messages": [m.invoke(s["messages"])]})
        graph.add_edge(name, END)
    graph.add_edge(START, "triage")
    graph.add_conditional_edges("triage", pick, ["billing", "tech"])
    return graph.compile(name="helpdesk")


def test_another_routing_function_diverges_at_the_routing_decision(captured, monkeypatch):
    """Recorded with a router that follows the triage (billing); replayed with
    one that always says tech: the first difference is the router's delegation."""
    (trace,), contents = record(captured, monkeypatch, lambda: helpdesk(lambda s: s["route"]).invoke(apps.user_input()))
    result = replay(trace, helpdesk(lambda s: "tech"), contents=contents)
    assert not result.equal
    (recorded_route,) = decisions_of(trace, "delegate")
    assert result.divergence.event_id == recorded_route["id"]
    assert result.divergence.expected["targets"] == ["billing"]
    assert result.divergence.got["targets"] == ["tech"]


def test_a_tool_that_now_returns_something_else_diverges_at_its_result(captured, monkeypatch):
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("supervisor"))

    @tool("lookup")
    def changed(query: str) -> str:
        """Look something up."""
        return "something else"

    monkeypatch.setattr(apps, "lookup", changed)
    result = replay(trace, apps.build_supervisor(), contents=contents, serve_tools=False)
    assert not result.equal
    (recorded,) = events_of(trace, "tool_result", tool="lookup")
    assert result.divergence.event_id == recorded["id"]
    assert result.divergence.expected["content_ref"] != result.divergence.got["content_ref"]


def test_fork_at_the_supervisors_first_delegation(captured, monkeypatch):
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("supervisor"))
    first = decisions_of(trace, "delegate")[0]
    assert first["targets"] == ["math_expert"]
    result = replay(trace, apps.build_supervisor(), contents=contents, fork=first["id"], choose="research_expert")
    branch = check_trace(result.trace)
    assert result.equal  # the prefix up to the supervisor's reply is the recorded one
    forced = decisions_of(branch, "delegate")[0]
    assert forced["targets"] == ["research_expert"] and forced["id"] == first["id"]
    assert forced["fork"] == {"source_trace_id": trace["trace_id"], "event_id": first["id"], "decision": "delegate",
                              "recorded": ["math_expert"], "forced": ["research_expert"],
                              "group": f"{trace['trace_id']}/{first['id']}"}
    prefix = trace["events"].index(next(e for e in trace["events"] if e.get("channel") == "llm"))
    assert [orchestration(e) for e in branch["events"][:prefix]] == [orchestration(e) for e in trace["events"][:prefix]]
    assert events_of(branch, "spawn", to="research_expert")  # the branch ran the chosen agent, live


def test_fork_stop_instead_of_handing_off(captured, monkeypatch):
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("supervisor"))
    first = decisions_of(trace, "delegate")[0]
    result = replay(trace, apps.build_supervisor(), contents=contents, fork=first["id"], choose="stop")
    branch = check_trace(result.trace)
    assert not decisions_of(branch, "delegate")
    assert [s["reason"] for s in decisions_of(branch, "stop")] == ["end", "end"]  # the supervisor's, the run's


def test_fork_errors_name_the_event(captured, monkeypatch):
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("supervisor"))
    spawn = decisions_of(trace, "spawn")[0]
    with pytest.raises(ForkError, match=f"event {spawn['id']} is a orchestrator_decision spawn"):
        replay(trace, apps.build_supervisor(), contents=contents, fork=spawn["id"], choose="math_expert")
    with pytest.raises(ForkError, match="has no event e999"):
        replay(trace, apps.build_supervisor(), contents=contents, fork="e999", choose="math_expert")
    first = decisions_of(trace, "delegate")[0]
    with pytest.raises(ForkError, match="'nobody' is not an option"):
        replay(trace, apps.build_supervisor(), contents=contents, fork=first["id"], choose="nobody")


def test_a_router_that_follows_its_model_is_forked_through_the_models_answer(captured, monkeypatch):
    """build_router routes on the triage model's answer: forcing tech changes that answer."""
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("router"))
    (route,) = decisions_of(trace, "delegate")
    result = replay(trace, apps.build_router("billing"), contents=contents, fork=route["id"], choose="tech")
    assert result.equal
    assert decisions_of(result.trace, "delegate")[0]["targets"] == ["tech"]
    assert events_of(result.trace, "spawn", to="tech")


def test_a_router_is_forked_through_its_routing_functions_result(captured, monkeypatch):
    """helpdesk's triage node sets the route itself, whatever its model says: the
    fork forces the routing function's result, so it takes all the same."""
    (trace,), contents = record(captured, monkeypatch, lambda: helpdesk(lambda s: s["route"]).invoke(apps.user_input()))
    (route,) = decisions_of(trace, "delegate")
    assert route["router"] and route["router_call"] == 1
    result = replay(trace, helpdesk(lambda s: s["route"]), contents=contents, fork=route["id"], choose="tech")
    assert result.equal, result.divergence.describe()
    assert decisions_of(result.trace, "delegate")[0]["targets"] == ["tech"]
    assert events_of(result.trace, "spawn", to="tech")


def test_a_fork_that_does_not_take_is_a_divergence(captured, monkeypatch):
    """build_router's edge declares billing and tech, no END: a forced stop cannot take."""
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("router"))
    (route,) = decisions_of(trace, "delegate")
    result = replay(trace, apps.build_router("billing"), contents=contents, fork=route["id"], choose="stop")
    assert not result.equal
    assert "did not take" in result.divergence.note and "declares no route to '__end__'" in result.divergence.note
    assert result.divergence.got["targets"] == ["billing"]


def test_a_label_router_is_forked_at_its_delegation_and_at_its_stop(captured, monkeypatch):
    """Issue 32: the supervisor's model answers a label ("research", "finish") and
    ``route`` maps it through the path map {go_research: researcher, FINISH: END}.
    A fork forces the label the map gives the chosen option."""
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("path_map_router"))
    (delegation,) = decisions_of(trace, "delegate")
    stop = next(s for s in decisions_of(trace, "stop") if s["agent"] == "supervisor")
    assert (delegation["router_call"], stop["router_call"]) == (1, 2)
    assert options_at(trace, contents, stop["id"]) == ["stop", "researcher"]  # the recorded stop is a branch too
    ended = replay(trace, apps.build_path_map_router(), contents=contents, fork=delegation["id"], choose="stop")
    assert ended.equal, ended.divergence.describe()
    assert not decisions_of(ended.trace, "delegate") and not events_of(ended.trace, "spawn", to="researcher")
    assert decisions_of(ended.trace, "stop")[0]["fork"]["event_id"] == delegation["id"]
    again = replay(trace, apps.build_path_map_router(), contents=contents, fork=stop["id"], choose="researcher")
    assert again.equal, again.divergence.describe()
    forced = next(e for e in again.trace["events"] if e.get("fork"))
    assert (forced["decision"], forced["targets"], forced["agent"]) == ("delegate", ["researcher"], "supervisor")
    assert len(events_of(again.trace, "spawn", to="researcher")) >= 2  # the researcher ran again, live


async def test_a_label_router_fork_under_asyncio(captured, monkeypatch):
    from orch_otel.replaying import areplay

    (trace,), contents = record(captured, monkeypatch, lambda: invoke("path_map_router"))
    (delegation,) = decisions_of(trace, "delegate")
    ended = await areplay(trace, apps.build_path_map_router(), contents=contents, fork=delegation["id"], choose="stop")
    assert ended.equal, ended.divergence.describe()
    assert not events_of(ended.trace, "spawn", to="researcher")


def test_a_decision_made_by_a_nodes_code_names_what_a_fork_can_force(captured, monkeypatch):
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("command_end"))
    fixer_stop = next(s for s in decisions_of(trace, "stop") if s["agent"] == "fixer")
    with pytest.raises(ForkError, match="Command\\(goto=END\\).*a LangGraph routing function's result.*cannot be forced"):
        replay(trace, apps.build_command_end(), contents=contents, fork=fixer_stop["id"], choose="triager")


def test_fork_when_bind_tools_returns_the_model_itself(captured, monkeypatch):
    """Issue 32: the supervisor's model exposes no bound tools; the handoff tools
    come from the supervisor's own definition (recorded on the decision)."""
    (trace,), contents = record(captured, monkeypatch,
                                lambda: shapes.build_supervisor(bind_returns_self=True).invoke(apps.user_input("1+2?")))
    first = decisions_of(trace, "delegate")[0]
    assert first["handoff_tools"] == {"transfer_to_math_expert": "math_expert",
                                      "transfer_to_research_expert": "research_expert"}
    result = replay(trace, shapes.build_supervisor(bind_returns_self=True), contents=contents, fork=first["id"],
                    choose="research_expert")
    assert result.equal, result.divergence.describe()
    assert decisions_of(result.trace, "delegate")[0]["targets"] == ["research_expert"]
    assert events_of(result.trace, "spawn", to="research_expert")


def test_fork_at_a_stop_offers_the_agents_by_their_names_also_those_that_never_ran(captured, monkeypatch):
    """Issue 32: research_expert never ran; the stop's options once read researchexpert."""
    (trace,), contents = record(captured, monkeypatch,
                                lambda: shapes.build_supervisor(math_only=True).invoke(apps.user_input("1+2?")))
    assert not events_of(trace, "spawn", to="research_expert")
    stop = next(s for s in decisions_of(trace, "stop") if s["agent"] == "supervisor")
    assert stop["source"] == "answer"
    assert sorted(options_at(trace, contents, stop["id"])) == ["math_expert", "research_expert", "stop"]
    result = replay(trace, shapes.build_supervisor(math_only=True), contents=contents, fork=stop["id"],
                    choose="research_expert")
    assert result.equal, result.divergence.describe()
    assert events_of(result.trace, "spawn", to="research_expert")


SHAPES: dict[str, tuple[Any, Any]] = {
    "tool_loop_router": (shapes.build_tool_loop_router, apps.user_input("fix it")),
    "agents_as_tools": (shapes.build_agents_as_tools, apps.user_input("report")),
    "task_tool": (shapes.build_task_tool, apps.user_input("report")),
    "functional_reviews": (shapes.build_functional_reviews, "a text"),
    "planner_split": (shapes.build_planner_split, apps.user_input("plan it")),
    "single_agent": (shapes.build_single_agent, apps.user_input("find otel")),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_docs_shapes_replay_with_every_call_served(name, captured, monkeypatch):
    build, graph_input = SHAPES[name]
    (trace,), contents = record(captured, monkeypatch, lambda: build().invoke(graph_input))
    monkeypatch.setattr(shapes, "FakeToolCallingModel", RaisingModel)
    result = replay(trace, build(), contents=contents)
    assert result.equal, result.divergence.describe()


def test_a_trace_recorded_without_content_says_which_events_lack_it(captured):
    invoke("supervisor")
    (conversion,) = captured.conversions()
    llm_calls = [e["id"] for e in events_of(conversion.trace, "message", channel="llm")]
    with pytest.raises(MissingContent, match=", ".join(llm_calls[:3])):
        replay(conversion.trace, apps.build_supervisor(), contents=conversion.contents)


def test_a_replay_puts_back_everything_it_changed(captured, monkeypatch):
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.tools import BaseTool, StructuredTool

    from orch_otel._serving import ACTIVE

    before = {name: vars(BaseChatModel)[name] for name in ("_generate_with_cache", "_agenerate_with_cache")}
    tools_before = {name: vars(BaseTool)[name] for name in ("run", "arun")}
    structured_before = {name: vars(StructuredTool).get(name) for name in ("_run", "_arun")}
    policy = get_recorder().content
    policy_before = (policy.capture, policy.local)
    (trace,), contents = record(captured, monkeypatch, lambda: invoke("supervisor"))
    assert replay(trace, apps.build_supervisor(), contents=contents).equal
    assert {name: vars(BaseChatModel)[name] for name in before} == before
    assert {name: vars(BaseTool)[name] for name in tools_before} == tools_before
    assert {name: vars(StructuredTool).get(name) for name in structured_before} == structured_before
    assert (policy.capture, policy.local) == policy_before
    assert ACTIVE.get() is None


def test_the_recorded_stop_is_a_branch_of_its_fork(captured, monkeypatch):
    """--choose-each at a stop makes the recorded stop a branch too (every call served, the fork on the stop),
    so a group compares stopping there with handing off (issue: its groups had no stop member)."""
    (trace,), contents = record(captured, monkeypatch,
                                lambda: shapes.build_supervisor(math_only=True).invoke(apps.user_input("1+2?")))
    stop = next(s for s in decisions_of(trace, "stop") if s["agent"] == "supervisor")
    kept = replay(trace, shapes.build_supervisor(math_only=True), contents=contents, fork=stop["id"], choose="stop")
    assert kept.equal, kept.divergence and kept.divergence.describe()
    assert first_divergence(trace["events"], kept.trace["events"]) is None  # the run as recorded, to its end
    (forked,) = [e for e in kept.trace["events"] if e.get("fork")]
    assert (forked["id"], forked["decision"], forked["agent"]) == (stop["id"], "stop", "supervisor")
    assert (forked["fork"]["forced"], forked["fork"]["recorded"]) == ([], [])


def test_a_functional_network_forks_at_the_advisors_answer(captured, monkeypatch):
    """The hotel advisor answered instead of handing back: the fork adds its
    return_direct transfer call, and the entrypoint's own loop runs the travel
    advisor again (live)."""
    from langchain_core.messages import HumanMessage

    (trace,), contents = record(captured, monkeypatch,
                                lambda: shapes.build_advisor_network().invoke([HumanMessage("a trip to Aruba")]))
    stop = next(s for s in decisions_of(trace, "stop") if s["agent"] == "hotel_advisor")
    assert options_at(trace, contents, stop["id"]) == ["stop", "travel_advisor"]
    result = replay(trace, shapes.build_advisor_network(), contents=contents, fork=stop["id"], choose="travel_advisor")
    assert result.equal, result.divergence.describe()
    forced = next(e for e in result.trace["events"] if e.get("fork"))
    assert (forced["agent"], forced["decision"], forced["targets"]) == ("hotel_advisor", "delegate", ["travel_advisor"])
    assert len(events_of(result.trace, "spawn", to="travel_advisor")) == 2
