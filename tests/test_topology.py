"""Topology inferred from a run's structure (docs/trace-format.md#topology):
one hand-written decorator app per topology, LangGraph and AutoGen apps of
known shape, and the precedence rules. Expected topologies are written by
hand from what each app does."""

from __future__ import annotations

import asyncio
import dataclasses

import autogen_apps
import langgraph_apps
import pytest
from conftest import check_trace, instrumentor_fixture
from fidelity import assert_faithful
from fidelity_cases_custom import CASES

import orch_otel
from orch_otel import convert
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.vocabulary import Attr

langgraph_instrumented = instrumentor_fixture(LangGraphInstrumentor)
autogen_instrumented = instrumentor_fixture(AutoGenInstrumentor)


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.truth.topology)
def test_each_decorator_app_gets_its_topology_and_is_faithful(case, captured):
    case.run()
    trace = one_trace(captured)
    assert trace["topology"] == case.truth.topology
    assert_faithful(trace, case.truth)


def test_every_topology_of_the_seed_but_mixed_and_unknown_has_a_decorator_app():
    assert {c.truth.topology for c in CASES} == {
        "centralized", "planner_executor_critic", "debate", "swarm", "hierarchical", "harness"}


def test_an_explicit_topology_wins_over_the_structure(captured):
    for stated in (None, "debate"):
        with orch_otel.workflow("run", topology=stated), orch_otel.agent("coder"):
            with orch_otel.tool("shell"):
                pass  # the shape of a harness
    inferred, explicit = captured.traces()
    assert (inferred["topology"], explicit["topology"]) == ("harness", "debate")


def test_a_stated_topology_outside_the_schema_is_reported_and_inferred_instead(captured):
    with orch_otel.workflow("run", topology="star"), orch_otel.agent("coder"):
        with orch_otel.tool("shell"):
            pass
    (conversion,) = captured.conversions()
    assert check_trace(conversion.trace)["topology"] == "harness"
    assert any("orch.topology 'star' is not one of" in p for p in conversion.problems)


def test_a_workflow_that_only_wraps_one_agent_adds_no_level(captured):
    """workflow -> lead -> two workers is a lead with its workers (centralized),
    not a manager under a manager (hierarchical)."""
    with orch_otel.workflow("run"), orch_otel.agent("lead"):
        for _ in range(2):
            with orch_otel.agent("worker"):
                pass
    assert one_trace(captured)["topology"] == "centralized"


def test_handoffs_and_a_debate_in_one_run_are_mixed(captured):
    with orch_otel.workflow("room"):
        for speaker, other in (("ann", "bob"), ("bob", "ann"), ("ann", "bob")):
            with orch_otel.agent(speaker, spawned=True):
                orch_otel.message("my point", recipients=[other])  # ann and bob argue: a debate
        with orch_otel.agent("ann", spawned=True):
            orch_otel.delegate("cat")  # and hand off sideways, never to be called again: a swarm
        with orch_otel.agent("cat", spawned=True):
            orch_otel.delegate("dan")
        with orch_otel.agent("dan", spawned=True):
            pass
    assert one_trace(captured)["topology"] == "mixed"


def test_a_lone_agent_without_tools_is_unknown(captured):
    with orch_otel.agent("solo"):
        with orch_otel.llm_call("m") as call:
            call.set_response("hi", input_tokens=1, output_tokens=1)
    assert one_trace(captured)["topology"] == "unknown"


def test_a_hub_that_regains_control_after_each_handoff_is_centralized_not_a_swarm(captured):
    with orch_otel.workflow("desk"):
        for worker in ("a", "b"):
            with orch_otel.agent("hub", spawned=True):
                orch_otel.delegate(worker)  # a sibling, not its own sub-agent
            with orch_otel.agent(worker, spawned=True):
                pass
        with orch_otel.agent("hub", spawned=True):
            orch_otel.stop("end")
    assert one_trace(captured)["topology"] == "centralized"


# -- LangGraph apps (the integration states no topology) ----------------------------------------


@pytest.mark.parametrize(("build", "run_input", "expected"), [
    ("build_supervisor", "messages", "centralized"),  # supervisor hands off, gets control back each time
    ("build_swarm", "messages", "swarm"),  # Alice hands off to Bob and is done
    ("build_nested", "messages", "hierarchical"),  # subgraph in a subgraph in a graph
    ("build_fanout", "fanout", "centralized"),  # the graph fans out to workers and merges them
    ("build_agent_pipeline", "messages", "harness"),  # one create_agent with a tool in a graph
    # the graph's router sends triage's answer to billing, one of the graph's own agents: no peer handoff
    ("build_router", "messages", "centralized"),
])
def test_langgraph_apps(captured, build, run_input, expected):
    app = getattr(langgraph_apps, build)()
    config = {"configurable": {"thread_id": "t"}}
    app.invoke(langgraph_apps.user_input("go") if run_input == "messages" else {}, config)
    assert one_trace(captured)["topology"] == expected


def test_langgraph_metadata_topology_wins_over_the_structure(captured):
    for metadata in ({}, {"orch.topology": "mixed"}):
        langgraph_apps.build_swarm().invoke(
            langgraph_apps.user_input("go"), {"configurable": {"thread_id": "t"}, "metadata": metadata})
    inferred, explicit = captured.traces()
    assert (inferred["topology"], explicit["topology"]) == ("swarm", "mixed")


# -- AutoGen teams: the structure alone, with the integration's stated topology removed -------------


def _inferred(captured) -> tuple[str, str]:
    """(stated by the integration, inferred from the same spans without it)."""
    stated = one_trace(captured)["topology"]
    bare = [dataclasses.replace(s, attributes={k: v for k, v in s.attributes.items() if k != Attr.TOPOLOGY})
            for s in captured.spans]
    return stated, convert(bare).trace["topology"]


@pytest.mark.parametrize(("team", "expected"), [
    ("two_agent_round_robin", "centralized"),  # the team picks each speaker
    ("graph_flow", "centralized"),  # the flow runs A, then B and C, then D
    ("magentic_one", "centralized"),  # the orchestrator delegates to its coder, which reports back
    ("swarm_team", "swarm"),  # alice hands off to bob, bob to the user
    ("society_of_mind_team", "hierarchical"),  # som runs an inner team
    ("team_as_participant", "hierarchical"),  # a team is a member of the outer team
])
def test_autogen_teams_structure_agrees_with_the_team_type(captured, team, expected):
    asyncio.run(asyncio.wait_for(getattr(autogen_apps, team)().run(task="go"), 20))
    stated, inferred = _inferred(captured)
    assert inferred == expected
    assert stated == expected
