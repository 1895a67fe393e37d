"""AutoGen stops and speaker candidates: every termination condition of
agentchat 0.7, alone and combined with ``|`` and ``&``, is recorded as forced
(a limit) or voluntary (an agent's choice, then also that agent's own stop),
with the condition's own text as the reason (docs/autogen.md#stops-forced-or-voluntary); each
speaker selection names the candidates the manager really had."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import autogen_apps as apps
import pytest
from autogen_agentchat.agents import AssistantAgent, BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.conditions import (
    ExternalTermination,
    FunctionalTermination,
    FunctionCallTermination,
    MaxMessageTermination,
    SourceMatchTermination,
    StopMessageTermination,
    TextMentionTermination,
    TextMessageTermination,
    TokenUsageTermination,
)
from autogen_agentchat.messages import BaseChatMessage, StopMessage
from autogen_agentchat.teams import DiGraphBuilder, GraphFlow, MagenticOneGroupChat, RoundRobinGroupChat, SelectorGroupChat
from autogen_core import CancellationToken
from conftest import check_trace, decisions_of, instrumentor_fixture

from orch_otel import Attr
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.autogen.testing import ledger, replay, text, tool_call

TIMEOUT = 20

instrumented = instrumentor_fixture(AutoGenInstrumentor)


async def run(team, task: str | None = "go"):
    return await asyncio.wait_for(team.run(task=task), TIMEOUT)


def stops(captured) -> list[tuple[str, str, bool]]:
    (trace,) = captured.traces()
    check_trace(trace)
    return [(e["agent"], e["reason"], e["forced"]) for e in decisions_of(trace, "stop")]


def options(captured, agent: str | None = None) -> list[tuple[list[str], list[str]]]:
    """(targets, options) of every delegation, in order."""
    (trace,) = captured.traces()
    return [(d["targets"], d["options"]) for d in decisions_of(trace, "delegate") if agent in (None, d["agent"])]


def pair(a_says: str | object, b_says: str | object, condition, name: str = "team", **kwargs) -> RoundRobinGroupChat:
    a = AssistantAgent("a", model_client=replay(a_says), **kwargs)
    b = AssistantAgent("b", model_client=replay(b_says))
    return RoundRobinGroupChat([a, b], termination_condition=condition, name=name)


def finish() -> str:
    """The tool an agent calls when it is done."""
    return "finished"


class Quitter(BaseChatAgent):
    """An agent whose answer is a StopMessage."""

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (StopMessage,)

    async def on_messages(self, messages, cancellation_token) -> Response:
        return Response(chat_message=StopMessage(content="I am done", source=self.name))

    async def on_reset(self, cancellation_token) -> None:
        pass


# -- each condition alone -------------------------------------------------------------------

async def test_text_mention_is_the_mentioning_agents_voluntary_stop(captured):
    await run(pair("hello", "bye TERMINATE", TextMentionTermination("TERMINATE")))
    reason = "Text 'TERMINATE' mentioned"
    assert stops(captured) == [("b", reason, False), ("team", reason, False)]


async def test_handoff_is_the_handing_off_agents_voluntary_stop(captured):
    await run(apps.swarm_team())
    reason = "Handoff to user from bob detected."
    assert stops(captured) == [("bob", reason, False), ("Swarm", reason, False)]


async def test_function_call_is_the_calling_agents_voluntary_stop(captured):
    team = pair(tool_call("finish", {}, "f1"), "never", FunctionCallTermination("finish"), tools=[finish])
    await run(team)
    reason = "Function 'finish' was executed."
    assert stops(captured) == [("a", reason, False), ("team", reason, False)]


async def test_stop_message_is_the_senders_voluntary_stop(captured):
    a = AssistantAgent("a", model_client=replay("working"))
    team = RoundRobinGroupChat([a, Quitter("quitter", description="quits")],
                               termination_condition=StopMessageTermination(), name="team")
    await run(team)
    reason = "Stop message received"
    assert stops(captured) == [("quitter", reason, False), ("team", reason, False)]


async def test_source_match_is_the_matched_agents_voluntary_stop(captured):
    await run(pair("a1", "b1", SourceMatchTermination(["b"])))
    assert stops(captured) == [("b", "'b' answered", False), ("team", "'b' answered", False)]


async def test_text_message_is_the_first_plain_answers_voluntary_stop(captured):
    # No task (it would be a TextMessage itself); a's turn ends with a tool summary
    # (not a TextMessage); b's plain answer fires it.
    team = pair(tool_call("get_weather", {"city": "Oslo"}, "w1"), "b1", TextMessageTermination(),
                tools=[apps.get_weather])
    await run(team, task=None)
    reason = "Text message received from 'b'"
    assert stops(captured) == [("b", reason, False), ("team", reason, False)]


async def test_functional_is_the_judged_agents_voluntary_stop(captured):
    condition = FunctionalTermination(lambda messages: any("LGTM" in m.to_text() for m in messages))
    await run(pair("draft", "LGTM", condition))
    reason = "Functional termination condition met"
    assert stops(captured) == [("b", reason, False), ("team", reason, False)]


async def test_max_messages_is_forced_by_the_team(captured):
    await run(apps.two_agent_round_robin(3))
    assert stops(captured) == [
        ("RoundRobinGroupChat", "Maximum number of messages 3 reached, current message count: 3", True)]


async def test_token_usage_is_forced_by_the_team(captured):
    await run(apps.token_budget_round_robin())
    reason = "Token usage limit reached, total token count: 11, prompt token count: 6, completion token count: 5."
    assert stops(captured) == [("budget_team", reason, True)]


async def test_timeout_is_forced_by_the_team(captured):
    await run(apps.timed_round_robin(), task=None)
    assert stops(captured) == [("timed_team", "Timeout of 0.05 seconds reached", True)]


async def test_external_termination_is_forced_by_the_team(captured):
    external = ExternalTermination()

    def press_stop() -> str:
        """The host's stop button, pressed while a works."""
        external.set()
        return "pressed"

    await run(pair(tool_call("press_stop", {}, "p1"), "never", external, tools=[press_stop]))
    assert stops(captured) == [("team", "External termination requested", True)]


async def test_max_turns_is_forced_by_the_team(captured):
    a = AssistantAgent("a", model_client=replay("a1"))
    b = AssistantAgent("b", model_client=replay("b1"))
    await run(RoundRobinGroupChat([a, b], max_turns=2, name="team"))
    assert stops(captured) == [("team", "Maximum number of turns 2 reached.", True)]


# -- combinations ---------------------------------------------------------------------------

async def test_or_where_the_agents_condition_fires_is_voluntary(captured):
    # writer's own mention does not count (sources=[critic]); critic's does.
    await run(apps.approval_round_robin())
    reason = "Text 'APPROVE' mentioned"
    assert stops(captured) == [("critic", reason, False), ("review_team", reason, False)]


async def test_or_where_only_the_limit_fires_is_forced(captured):
    await run(pair("a1", "b1", TextMentionTermination("TERMINATE") | MaxMessageTermination(3)))
    assert stops(captured) == [("team", "Maximum number of messages 3 reached, current message count: 3", True)]


async def test_or_where_both_fire_at_once_is_the_agents_stop(captured):
    # b's message is the 3rd: the mention and the limit fire together; b chose to stop.
    await run(pair("a1", "b TERMINATE", TextMentionTermination("TERMINATE") | MaxMessageTermination(3)))
    both = "Text 'TERMINATE' mentioned, Maximum number of messages 3 reached, current message count: 3"
    assert stops(captured) == [("b", "Text 'TERMINATE' mentioned", False), ("team", both, False)]


async def test_and_with_a_limit_is_the_agents_stop_once_the_minimum_is_reached(captured):
    # a mentions TERMINATE in the 2nd message; the run may stop only from the 4th (a's next turn).
    a = AssistantAgent("a", model_client=replay("a TERMINATE", "a2"))
    b = AssistantAgent("b", model_client=replay("b1"))
    team = RoundRobinGroupChat([a, b], termination_condition=TextMentionTermination("TERMINATE") & MaxMessageTermination(4),
                               name="team")
    await run(team)
    both = "Text 'TERMINATE' mentioned, Maximum number of messages 4 reached, current message count: 4"
    assert stops(captured) == [("a", "Text 'TERMINATE' mentioned", False), ("team", both, False)]
    # a's stop belongs to the turn whose message fired the mention (its first), not its last.
    (trace,) = captured.traces()
    (a_stop,) = [e for e in decisions_of(trace, "stop") if e["agent"] == "a"]
    a_turns = sorted((s for s in captured.spans if s.name == "invoke_agent a"), key=lambda s: s.start_ns)
    stop_span = next(s for s in captured.spans if s.span_id == a_stop["span_id"])
    assert stop_span.parent_id == a_turns[0].span_id


async def test_and_of_limits_is_forced(captured):
    await run(pair(text("a1", prompt_tokens=1), "b1", MaxMessageTermination(3) & TokenUsageTermination(max_total_token=1)))
    (stop,) = stops(captured)
    assert stop[0] == "team" and stop[2] is True
    assert stop[1].startswith("Token usage limit reached") and "Maximum number of messages 3 reached" in stop[1]


async def test_inner_agents_mention_stops_the_outer_team_as_that_agents_choice(captured):
    await run(apps.nested_text_mention())
    assert stops(captured) == [
        ("sub_team", "Maximum number of turns 2 reached.", True),
        ("y", "Text 'DONE' mentioned", False),
        ("outer", "Text 'DONE' mentioned", False),
    ]


# -- the manager's own stops, cancellation, errors ------------------------------------------

async def test_magentic_one_rounds_limit_is_forced_and_its_answer_voluntary(captured):
    coder = AssistantAgent("coder", description="writes code", model_client=replay("c1", "c2"))
    orchestrator = replay("FACTS", "PLAN", ledger(False, "coder", "try"), ledger(False, "coder", "again"), "FINAL")
    await run(MagenticOneGroupChat([coder], model_client=orchestrator, max_turns=1))
    assert stops(captured) == [("MagenticOneGroupChat", "Max rounds reached.", True)]
    captured.spans.clear()
    await run(apps.magentic_one())
    assert stops(captured) == [("MagenticOneGroupChat", "task done", False)]


async def test_cancellation_and_errors_are_forced_on_the_span(captured):
    team = apps.slow_round_robin(delay=0.3)
    token = CancellationToken()
    task = asyncio.create_task(team.run(task="go", cancellation_token=token))
    await asyncio.sleep(0.1)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, TIMEOUT)
    failing = RoundRobinGroupChat([AssistantAgent("a", model_client=replay())], max_turns=2, name="failing")
    with pytest.raises(RuntimeError):
        await run(failing)
    roots = [s for s in captured.spans if s.parent_id is None]
    got = {}
    for root in roots:
        (stop,) = [e for e in root.events if e.attributes.get(Attr.DECISION) == "stop"]
        got[root.name] = (stop.attributes[Attr.STOP_REASON], stop.attributes.get(Attr.STOP_FORCED))
    assert got == {"invoke_workflow RoundRobinGroupChat": ("cancelled", True), "invoke_workflow failing": ("error", True)}


async def test_forced_is_on_the_run_span_for_a_limit_and_absent_for_a_choice(captured):
    await run(apps.two_agent_round_robin(3))
    await run(apps.weather_round_robin())
    by_root = {}
    for root in (s for s in captured.spans if s.parent_id is None):
        (stop,) = [e for e in root.events if e.attributes.get(Attr.DECISION) == "stop"]
        by_root[root.name] = stop.attributes.get(Attr.STOP_FORCED)
    assert by_root == {"invoke_workflow RoundRobinGroupChat": True, "invoke_workflow weather_team": None}


# -- candidates -------------------------------------------------------------------------------

async def test_round_robin_has_one_candidate_per_turn(captured):
    await run(apps.two_agent_round_robin(3))
    assert options(captured) == [(["a"], ["a"]), (["b"], ["b"])]


async def test_swarm_routing_follows_the_handoff_and_the_handoff_offers_its_targets(captured):
    await run(apps.swarm_team())
    assert options(captured, "Swarm") == [(["alice"], ["alice"]), (["bob"], ["bob"])]
    assert options(captured, "alice") == [(["bob"], ["bob"])]


async def test_selector_candidates_when_the_model_is_not_asked(captured):
    def planner_only(thread) -> list[str]:
        return ["planner"] if len(thread) == 1 else ["planner", "coder"]

    planner = AssistantAgent("planner", description="plans", model_client=replay("plan"))
    coder = AssistantAgent("coder", description="codes", model_client=replay("code"))
    reviewer = AssistantAgent("reviewer", description="reviews", model_client=replay("LGTM"))
    # candidate_func leaves planner alone first (no model call), then planner and coder (the model picks coder).
    team = SelectorGroupChat([planner, coder, reviewer], model_client=replay(text("coder")), candidate_func=planner_only,
                             termination_condition=MaxMessageTermination(3))
    await run(team)
    assert options(captured) == [(["planner"], ["planner"]), (["coder"], ["planner", "coder"])]

    captured.spans.clear()
    # No repeated speaker among two: after the model picks a, b is the only candidate.
    a = AssistantAgent("a", description="first", model_client=replay("a1"))
    b = AssistantAgent("b", description="second", model_client=replay("b1"))
    team = SelectorGroupChat([a, b], model_client=replay(text("a")), termination_condition=MaxMessageTermination(3))
    await run(team)
    assert options(captured) == [(["a"], ["a", "b"]), (["b"], ["b"])]

    captured.spans.clear()
    # selector_func chooses among every participant.
    a = AssistantAgent("a", description="first", model_client=replay("a1"))
    b = AssistantAgent("b", description="second", model_client=replay("b1"))
    team = SelectorGroupChat([a, b], model_client=replay(), selector_func=lambda thread: "b",
                             termination_condition=MaxMessageTermination(2))
    await run(team)
    assert options(captured) == [(["b"], ["a", "b"])]


async def test_graph_flow_candidates_are_the_outgoing_edges(captured):
    nodes = {n: AssistantAgent(n, model_client=replay(f"{n} says yes")) for n in ("A", "B", "C")}
    builder = DiGraphBuilder()
    for node in nodes.values():
        builder.add_node(node)
    builder.add_edge(nodes["A"], nodes["B"], condition="yes").add_edge(nodes["A"], nodes["C"], condition="no")
    await run(GraphFlow(participants=builder.get_participants(), graph=builder.build()))
    # A's message says yes: of its two branches the graph takes B; then nothing is left.
    assert options(captured) == [(["A"], ["A"]), (["B"], ["B", "C"])]
    assert stops(captured) == [("GraphFlow", "Digraph execution is complete", False)]


async def test_stop_voluntary_metric_is_zero_for_limits_and_one_for_choices(captured):
    from orch_otel.datasets.metrics import compute_metrics

    await run(apps.two_agent_round_robin(3))  # max messages
    await run(apps.token_budget_round_robin())  # tokens
    await run(apps.timed_round_robin(), task=None)  # timeout
    await run(apps.weather_round_robin())  # b says TERMINATE
    await run(apps.swarm_team())  # bob hands off to user
    got = {t["events"][0]["agent"]: compute_metrics(t)["stop_voluntary"] for t in captured.traces()}
    assert got == {"RoundRobinGroupChat": 0.0, "budget_team": 0.0, "timed_team": 0.0, "weather_team": 1.0, "Swarm": 1.0}
