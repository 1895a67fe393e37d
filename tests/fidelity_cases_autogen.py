"""AutoGen agentchat app shapes of the fidelity suite, each with its truth
written by hand from the app's code in tests/autogen_apps.py (see
tests/fidelity.py for what each field means).

AutoGen facts the truths rely on:
- a team's participants exist before the run: their turns are not spawns;
  a nested team (a participant, or a SocietyOfMind agent's inner team) is
  spawned by whoever runs it, and each of its agents once, at its first turn;
- the team (its manager, named after the team) gives each turn: a delegation.
  Round robin and Swarm routing have exactly one candidate (the order, or the
  last handoff, decides); the selector's candidates exclude the previous
  speaker; a GraphFlow's are its start nodes, then the targets of the
  outgoing edges of the nodes that just ran;
- limits (max messages, max turns, tokens, timeout) are forced stops by the
  team; a condition that fires on an agent's message (text mention, handoff)
  is that agent's voluntary stop; a GraphFlow with no node left and
  MagenticOne's answer after its ledger says "satisfied" end voluntarily.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import autogen_apps as apps
from fidelity import Aggregate, Case, Delegation, Stop, Truth

import orch_otel

TIMEOUT = 30  # a hang fails the case instead of blocking the suite


def _run(build: Callable[[], Any], task: str | None = "go") -> Callable[[], None]:
    def run() -> None:
        asyncio.run(asyncio.wait_for(build().run(task=task), TIMEOUT))

    return run


def _turns(team: str, *speakers: str) -> tuple[Delegation, ...]:
    """A team with no choice to make: each turn has one candidate, the speaker."""
    return tuple(Delegation(team, s, frozenset({s})) for s in speakers)


CASES: list[Case] = [
    Case(
        framework="autogen",
        run=_run(apps.tool_round_robin_max_messages),
        truth=Truth(
            app="autogen round robin: a calls get_weather (w1), b answers; MaxMessageTermination(3) stops it",
            instances={},
            delegations=_turns("tool_team", "a", "b"),
            tool_calls=(("a", "get_weather", "w1"),),
            stop=Stop("tool_team", "Maximum number of messages 3 reached, current message count: 3", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.weather_round_robin),
        truth=Truth(
            app="autogen round robin: a calls get_weather (call_1) and reflects, b says TERMINATE (TextMention | Max)",
            instances={},
            delegations=_turns("weather_team", "a", "b"),
            tool_calls=(("a", "get_weather", "call_1"),),
            stop=Stop("b", "Text 'TERMINATE' mentioned", forced=False),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.selector_team),
        truth=Truth(
            app="autogen selector: the model picks planner among all three, then coder (no repeat), who says TERMINATE",
            instances={},
            delegations=(
                Delegation("SelectorGroupChat", "planner", frozenset({"planner", "coder", "reviewer"})),
                Delegation("SelectorGroupChat", "coder", frozenset({"coder", "reviewer"})),
            ),
            stop=Stop("coder", "Text 'TERMINATE' mentioned", forced=False),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.swarm_team),
        truth=Truth(
            app="autogen swarm: alice looks up (t1) and hands off to bob (h1); bob hands off to user (h2): HandoffTermination",
            instances={},
            delegations=(
                Delegation("Swarm", "alice", frozenset({"alice"})),  # the first participant starts
                Delegation("alice", "bob", frozenset({"bob"})),  # her handoffs: bob only
                Delegation("Swarm", "bob", frozenset({"bob"})),  # the swarm follows the handoff
                Delegation("bob", "user", frozenset({"user"})),
            ),
            tool_calls=(("alice", "lookup", "t1"), ("alice", "transfer_to_bob", "h1"), ("bob", "transfer_to_user", "h2")),
            stop=Stop("bob", "Handoff to user from bob detected.", forced=False),
            topology="swarm",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.graph_flow),
        truth=Truth(
            app="autogen GraphFlow: A fans out to B and C in parallel, which fan in to D; the graph completes",
            instances={},
            delegations=(
                Delegation("GraphFlow", "A", frozenset({"A"})),  # the start node
                Delegation("GraphFlow", "B,C", frozenset({"B", "C"})),  # A's outgoing edges, both run
                Delegation("GraphFlow", "D", frozenset({"D"})),  # B's and C's edges
            ),
            aggregates=(Aggregate("GraphFlow", ("B", "C")),),
            stop=Stop("GraphFlow", "Digraph execution is complete", forced=False),
            topology=None,  # a graph with a manager: not clearly one shape
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.society_of_mind_team),
        truth=Truth(
            app="autogen SocietyOfMind: som runs inner_team (w1, w2) and summarizes it, then critic; max_turns=2",
            instances={"inner_team": 1, "w1": 1, "w2": 1},
            spawned_by={"inner_team": "som", "w1": "inner_team", "w2": "inner_team"},
            delegations=(
                *_turns("outer_team", "som"),
                *_turns("inner_team", "w1", "w2"),
                *_turns("outer_team", "critic"),
            ),
            aggregates=(Aggregate("som", ("inner_team",)),),
            stop=Stop("outer_team", "Maximum number of turns 2 reached.", forced=True),
            topology="hierarchical",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.team_as_participant),
        truth=Truth(
            app="autogen nested team: outer gives a turn to sub_team (x, y), then z; max_turns=2 at both levels",
            instances={"sub_team": 1, "x": 1, "y": 1},
            spawned_by={"sub_team": "outer", "x": "sub_team", "y": "sub_team"},
            delegations=(*_turns("outer", "sub_team"), *_turns("sub_team", "x", "y"), *_turns("outer", "z")),
            stop=Stop("outer", "Maximum number of turns 2 reached.", forced=True),
            topology="hierarchical",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.nested_text_mention),
        truth=Truth(
            app="autogen nested team: y inside sub_team says DONE; outer's TextMention fires on sub_team's result",
            instances={"sub_team": 1, "x": 1, "y": 1},
            spawned_by={"sub_team": "outer", "x": "sub_team", "y": "sub_team"},
            delegations=(*_turns("outer", "sub_team"), *_turns("sub_team", "x", "y")),
            stop=Stop("y", "Text 'DONE' mentioned", forced=False),
            topology="hierarchical",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.magentic_one),
        truth=Truth(
            app="autogen MagenticOne: the orchestrator plans, asks coder, then its ledger says the task is done",
            instances={},
            delegations=(Delegation("MagenticOneGroupChat", "coder", frozenset({"coder"})),),
            stop=Stop("MagenticOneGroupChat", "task done", forced=False),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.token_budget_round_robin),
        truth=Truth(
            app="autogen round robin: a spends 7 tokens, b 4; TokenUsageTermination(10) stops it",
            instances={},
            delegations=_turns("budget_team", "a", "b"),
            stop=Stop("budget_team", "Token usage limit reached, total token count: 11", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.timed_round_robin, task=None),
        truth=Truth(
            app="autogen round robin: a's slow_lookup (s1) outlasts TimeoutTermination(0.05); b never speaks",
            instances={},
            delegations=_turns("timed_team", "a"),
            tool_calls=(("a", "slow_lookup", "s1"),),
            stop=Stop("timed_team", "Timeout of 0.05 seconds reached", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.approval_round_robin),
        truth=Truth(
            app="autogen round robin: TextMention('APPROVE', sources=[critic]) | MaxMessage(6); critic approves",
            instances={},
            delegations=_turns("review_team", "writer", "critic"),
            stop=Stop("critic", "Text 'APPROVE' mentioned", forced=False),
            topology="centralized",
        ),
    ),
]


def _human_review() -> None:
    asyncio.run(asyncio.wait_for(apps.human_review_round_robin().run(task="write a haiku"), TIMEOUT))


def _swarm_resumed() -> None:
    async def both() -> None:
        team = apps.swarm_asking_user()
        await team.run(task="refund my order")  # stops: alice hands off to user
        await apps.resume_swarm(team)  # the person's answer, handed back to alice

    asyncio.run(asyncio.wait_for(both(), TIMEOUT))


def _named_task() -> None:
    with orch_otel.task("ticket-18"):
        _run(apps.weather_round_robin)()


def _inside_workflow() -> None:
    with orch_otel.workflow("support", task_id="ticket-20"):
        _run(apps.weather_round_robin)()


ISSUE_32: list[Case] = [  # the shapes of issue 32 (items 6-9, 12): also checked in every dataset view
    Case(
        framework="autogen",
        run=_human_review,
        truth=Truth(
            app="autogen round robin with a person: user_proxy's input_func asks for a change, then types APPROVE",
            instances={},
            delegations=_turns("review_with_human", "writer", "user_proxy", "writer", "user_proxy"),
            humans=("user_proxy",),
            human_interventions=(("writer",), ("writer",)),  # each answer reaches the other participant
            # the person's APPROVE fired TextMention: no agent chose to stop, so the team's stop is forced
            stop=Stop("review_with_human", "Text 'APPROVE' mentioned", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_swarm_resumed,
        trace=1,
        truth=Truth(
            app="autogen swarm resumed by the user: alice handed off to user; their HandoffMessage is the next run's task",
            instances={},
            delegations=(Delegation("support_swarm", "alice", frozenset({"alice"})),),  # the handoff's target starts
            human_interventions=(("alice",),),
            resumes=True,
            earlier_tool_calls=(("alice", "transfer_to_user", "u1"),),  # the first run's handoff, in her context
            stop=Stop("alice", "Text 'TERMINATE' mentioned", forced=False),
            topology="swarm",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.selector_with_candidates),
        truth=Truth(
            app="autogen selector with selector_func and candidate_func: planner by the function, then coder, the one candidate, twice",
            instances={},
            delegations=(
                Delegation("SelectorGroupChat", "planner", frozenset({"planner", "coder", "reviewer", "tester"})),
                Delegation("SelectorGroupChat", "coder", frozenset({"coder"})),
                Delegation("SelectorGroupChat", "coder", frozenset({"coder"})),
            ),
            stop=Stop("SelectorGroupChat", "Maximum number of messages 4 reached", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.graph_loop),
        truth=Truth(
            app="autogen GraphFlow loop: A -> B -> C, C loops back to B once (activation groups), then exits to E",
            instances={},
            delegations=(
                Delegation("GraphFlow", "A", frozenset({"A"})),
                Delegation("GraphFlow", "B", frozenset({"B"})),
                Delegation("GraphFlow", "C", frozenset({"C"})),
                Delegation("GraphFlow", "B", frozenset({"B", "E"})),  # C's edges: the loop's held
                Delegation("GraphFlow", "C", frozenset({"C"})),
                Delegation("GraphFlow", "E", frozenset({"B", "E"})),  # the exit's held
            ),
            aggregates=(),  # B waits for one parent per activation
            stop=Stop("GraphFlow", "Digraph execution is complete", forced=False),
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.graph_fan_in_loop),
        truth=Truth(
            app="autogen GraphFlow fan-in inside a loop: planner -> (x, y) -> join, twice",
            instances={},
            delegations=(
                Delegation("GraphFlow", "planner", frozenset({"planner"})),  # the entry point
                Delegation("GraphFlow", "x,y", frozenset({"x", "y"})),
                Delegation("GraphFlow", "join", frozenset({"join"})),
                Delegation("GraphFlow", "planner", frozenset({"planner", "done"})),  # "again"
                Delegation("GraphFlow", "x,y", frozenset({"x", "y"})),
                Delegation("GraphFlow", "join", frozenset({"join"})),
                Delegation("GraphFlow", "done", frozenset({"planner", "done"})),  # "finish"
            ),
            aggregates=(Aggregate("GraphFlow", ("x", "y")), Aggregate("GraphFlow", ("x", "y"))),  # one per round
            stop=Stop("GraphFlow", "Digraph execution is complete", forced=False),
        ),
    ),
    Case(
        framework="autogen",
        run=_run(apps.workbench_team),
        truth=Truth(
            app="autogen workbenches: keeper calls the app's NotesWorkbench twice and a StaticWorkbench's renamed tool",
            instances={},
            delegations=_turns("workbench_team", "keeper"),
            tool_calls=(("keeper", "add_note", "n1"), ("keeper", "count_notes", "n2"), ("keeper", "weather", "n3")),
            stop=Stop("workbench_team", "Maximum number of turns 1 reached.", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="autogen",
        run=_named_task,
        truth=Truth(
            app="autogen run inside orch_otel.task('ticket-18'): the weather round robin, task named, one autogen root",
            instances={},
            delegations=_turns("weather_team", "a", "b"),
            tool_calls=(("a", "get_weather", "call_1"),),
            stop=Stop("b", "Text 'TERMINATE' mentioned", forced=False),
            topology="centralized",
            task_id="ticket-18",
            system="autogen",
        ),
    ),
    Case(
        framework="autogen",
        run=_inside_workflow,
        truth=Truth(
            app="autogen team run inside the app's orch_otel.workflow('support'): the app's run spawns the weather team",
            # the team is one agent of the app's run, its agents its own (each once, at its first turn)
            instances={"weather_team": 1, "a": 1, "b": 1},
            spawned_by={"weather_team": "support", "a": "weather_team", "b": "weather_team"},
            delegations=_turns("weather_team", "a", "b"),
            tool_calls=(("a", "get_weather", "call_1"),),
            stop=Stop("b", "Text 'TERMINATE' mentioned", forced=False),
            # the app's workflow only wraps the team (no model, no delegation): not a level; the team runs a and b
            topology="centralized",
            task_id="ticket-20",
            system="custom",
        ),
    ),
]
CASES += ISSUE_32
