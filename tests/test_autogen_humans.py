"""Human input in AutoGen teams: a ``UserProxyAgent``'s answers and a user's
answer to a Swarm's handoff are the human's interventions, never an agent's
turns or decisions; a stop the human typed is not credited to any agent."""

from __future__ import annotations

import asyncio

import autogen_apps as apps
from autogen_agentchat.messages import BaseChatMessage, HandoffMessage
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture

import orch_otel
from orch_otel.integrations.autogen import AutoGenInstrumentor

TIMEOUT = 20

instrumented = instrumentor_fixture(AutoGenInstrumentor)


async def test_user_proxy_answers_are_human_interventions_not_turns(captured):
    result = await asyncio.wait_for(apps.human_review_round_robin().run(task="write a haiku"), TIMEOUT)
    said = [m.source for m in result.messages if isinstance(m, BaseChatMessage)]  # not the input-requested events
    assert said == ["user", "writer", "user_proxy", "writer", "user_proxy"]
    (trace,) = captured.traces()
    check_trace(trace)
    humans = events_of(trace, "human_intervention")
    assert [(e["agent"], e["recipients"]) for e in humans] == [("human", ["writer"]), ("human", ["writer"])]
    # user_proxy is no agent of the trace: no turn, no message, no decision of its own
    assert {e["agent"] for e in events_of(trace, "return")} == {"writer"}
    assert [e["from"] for e in events_of(trace, "message", channel="agent")] == ["writer", "writer"]
    assert all(e["agent"] != "user_proxy" for e in trace["events"])
    # the team still chose to ask the human: its delegation stays
    assert [e["targets"] for e in decisions_of(trace, "delegate")] == [["writer"], ["user_proxy"]] * 2
    # the human's APPROVE ended the run: no agent's voluntary stop, the team's stop is forced
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"], stop["forced"]) == ("review_with_human", "Text 'APPROVE' mentioned", True)
    # the human's words reach writer's next turn
    first = humans[0]
    assert any(e["src"] == first["id"] and e["type"] == "causal" for e in trace["edges"])


async def test_a_swarm_resumed_with_the_users_answer_links_to_the_run_that_asked(captured):
    team = apps.swarm_asking_user()
    first = await asyncio.wait_for(team.run(task="refund my order"), TIMEOUT)
    assert first.stop_reason == "Handoff to user from alice detected."
    second = await asyncio.wait_for(apps.resume_swarm(team), TIMEOUT)
    assert second.stop_reason == "Text 'TERMINATE' mentioned"
    asked, resumed = (check_trace(t) for t in captured.traces())
    assert events_of(asked, "human_intervention") == []
    (answer,) = events_of(resumed, "human_intervention")
    assert (answer["agent"], answer["recipients"], answer["resume_of"]) == ("human", ["alice"], asked["trace_id"])
    assert resumed["task_id"] == asked["task_id"]  # the same team: the same conversation
    (root,) = [s for s in captured.spans if s.parent_id is None and s.trace_id == resumed["trace_id"]]
    assert [(link.trace_id, dict(link.attributes)) for link in root.links] == [
        (asked["trace_id"], {"orch.link": "resume_of"})]
    stops = {(e["agent"], e["forced"]) for e in decisions_of(resumed, "stop")}
    assert ("alice", False) in stops  # alice's own TERMINATE


async def test_a_swarm_resumed_outside_the_task_block_joins_the_task_of_the_run_that_asked(captured):
    team = apps.swarm_asking_user()
    with orch_otel.task("ticket-19"):
        await asyncio.wait_for(team.run(task="refund my order"), TIMEOUT)
    await asyncio.wait_for(apps.resume_swarm(team), TIMEOUT)  # no block: the asking run's task, not the team id
    asked, resumed = (check_trace(t) for t in captured.traces())
    assert asked["task_id"] == resumed["task_id"] == "ticket-19"
    (answer,) = events_of(resumed, "human_intervention")
    assert answer["resume_of"] == asked["trace_id"]


async def test_a_handoff_message_from_a_participant_is_no_human_answer(captured):
    team = apps.swarm_team()
    await asyncio.wait_for(team.run(task=HandoffMessage(source="alice", target="bob", content="over to you")), TIMEOUT)
    (trace,) = captured.traces()
    assert events_of(trace, "human_intervention") == []


async def test_an_agents_part_of_an_and_stop_stays_its_own_choice_beside_the_persons(captured):
    """``TextMention(DONE from writer) & TextMention(APPROVE from user_proxy)``: writer
    chose to be done, the person approved; the stop is voluntary, writer's own."""
    from autogen_agentchat.agents import AssistantAgent, UserProxyAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat

    writer = AssistantAgent("writer", model_client=apps.replay("final draft DONE"))
    person = UserProxyAgent("user_proxy", input_func=apps.human("APPROVE"))
    done = TextMentionTermination("DONE", sources=["writer"]) & TextMentionTermination("APPROVE", sources=["user_proxy"])
    team = RoundRobinGroupChat([writer, person], termination_condition=done, name="both")
    await asyncio.wait_for(team.run(task="write"), TIMEOUT)
    (trace,) = captured.traces()
    stops = [(e["agent"], e["reason"], e["forced"]) for e in decisions_of(check_trace(trace), "stop")]
    assert stops[0] == ("writer", "Text 'DONE' mentioned", False)
    assert stops[-1][0] == "both" and stops[-1][2] is False
    assert all(agent != "user_proxy" for agent, _, _ in stops)
