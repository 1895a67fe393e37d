"""Microsoft Agent Framework app shapes of the fidelity suite, each with its
truth written by hand from the app's code in tests/maf_apps.py (see
tests/fidelity.py for what each field means).

Agent Framework facts the truths rely on (docs/agent-framework.md):
- a workflow's participants exist before the run: their turns are not
  spawns; an agent run inside another agent's tool call (``as_tool``) is a
  spawned sub-agent of the caller, whose own stop is ``end``;
- routing along edges is the workflow's delegation: one decision per
  delivered message, targets = the agents its edges chose (several for a
  fan-out), options = the agent targets of the edge group (a switch-case's
  targets whose case did not hold included); the start agent, and each agent
  of a chain of single edges, gets a one-option decision;
- a fan-in delivery is the workflow's aggregate of the agents it combines;
- a run that runs out of messages ends voluntarily (``end``) by its root;
  one left waiting for a human (``request_info``) is interrupted (forced);
- a handoff is the handing-off agent's delegation among its handoff targets
  (the workflow records none for it); a Handoff agent that answers instead
  of handing off stops (``end``) before the run's interrupt; the agent that
  gets the human's answer in the continuation run gets a one-option
  delegation from the workflow;
- a GroupChat selection function is code: the workflow's delegation; a
  manager agent's choice (GroupChat's orchestrator agent, Magentic's ledger)
  is that agent's, among all participants; each manager run is an instance;
- a termination condition that holds after an agent's reply is that agent's
  voluntary stop, then the run's (the framework's completion text); the
  round limits are forced stops by the run; a manager that ends the chat
  (GroupChat's terminate, Magentic's "satisfied" ledger) stops first;
- a workflow run inside a run the app records (``orch_otel.workflow``) is an
  agent named by the workflow's name, spawned by that run's agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import maf_apps as apps
from fidelity import Aggregate, Case, Delegation, Spawn, Stop, Truth

import orch_otel

TIMEOUT = 30  # a hang fails the case instead of blocking the suite


def _run(build: Callable[[], Any], message: str = "go", stream: bool = False) -> Callable[[], None]:
    def run() -> None:
        asyncio.run(asyncio.wait_for(apps.consume(build(), message, stream), TIMEOUT))

    return run


def _chain(workflow: str, *agents: str) -> tuple[Delegation, ...]:
    return tuple(Delegation(workflow, a, frozenset({a})) for a in agents)


CASES: list[Case] = [
    Case(
        framework="agent_framework",
        run=_run(apps.weather_agent),
        truth=Truth(
            app="agent framework agent: weather calls get_weather twice in one turn (w1, w2), then answers",
            instances={},
            tool_calls=(("weather", "get_weather", "w1"), ("weather", "get_weather", "w2")),
            stop=Stop("weather", "end"),
            topology="harness",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.weather_agent, stream=True),
        truth=Truth(
            app="agent framework streamed agent: the same weather run through run(stream=True)",
            instances={},
            tool_calls=(("weather", "get_weather", "w1"), ("weather", "get_weather", "w2")),
            stop=Stop("weather", "end"),
            topology="harness",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.agent_with_agent_tool),
        truth=Truth(
            app="agent framework agent as a tool: lead calls ask_researcher (r1), which calls get_weather (w9)",
            instances={"researcher": 1},
            spawned_by={"researcher": "lead"},
            tool_calls=(("lead", "ask_researcher", "r1"), ("researcher", "get_weather", "w9")),
            stop=Stop("researcher", "end"),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.sequential),
        truth=Truth(
            app="agent framework Sequential: input-conversation -> drafter -> reviewer",
            instances={},
            delegations=_chain("Sequential", "drafter", "reviewer"),
            stop=Stop("Sequential", "end"),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.concurrent, stream=True),
        truth=Truth(
            app="agent framework Concurrent (streamed): dispatcher fans out to three agents, the aggregator fans in",
            instances={},
            delegations=(Delegation("Concurrent", "optimist,pessimist,realist",
                                    frozenset({"optimist", "pessimist", "realist"})),),
            aggregates=(Aggregate("Concurrent", ("optimist", "pessimist", "realist")),),
            stop=Stop("Concurrent", "end"),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.switch_case_loop, "help"),
        truth=Truth(
            app="agent framework switch-case with a loop: triage -> billing -> triage -> support",
            instances={},
            delegations=(
                Delegation("helpdesk", "triage", frozenset({"triage"})),  # the start agent
                Delegation("helpdesk", "billing", frozenset({"billing", "support"})),  # the case held
                Delegation("helpdesk", "triage", frozenset({"triage"})),  # billing's edge back
                Delegation("helpdesk", "support", frozenset({"billing", "support"})),  # the default
            ),
            stop=Stop("helpdesk", "end"),
            topology="centralized",
        ),
    ),
]


def _handoff_and_resume() -> None:
    asyncio.run(asyncio.wait_for(apps.handoff_and_resume(), TIMEOUT))


HANDOFF_FIRST = "agent framework Handoff: triage looks up (t1), hands off to billing (h1); billing asks the user"
CASES += [
    Case(
        framework="agent_framework",
        run=_handoff_and_resume,
        trace=0,
        truth=Truth(
            app=HANDOFF_FIRST,
            instances={},
            delegations=(
                Delegation("Handoff", "triage", frozenset({"triage"})),  # the start agent
                Delegation("triage", "billing", frozenset({"billing", "support"})),  # its handoff tools
            ),
            tool_calls=(("triage", "get_weather", "t1"), ("triage", "handoff_to_billing", "h1")),
            stop=Stop("billing", "end"),  # answered instead of handing off; the run is then interrupted
            topology="swarm",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_handoff_and_resume,
        trace=1,
        truth=Truth(
            app="agent framework Handoff resumed: the user's answer goes back to billing, who answers again",
            instances={},
            human_interventions=(("billing",),),  # the person answers billing's request
            resumes=True,  # and the run continues the one that asked
            delegations=(Delegation("Handoff", "billing", frozenset({"billing"})),),
            stop=Stop("Handoff", "interrupt", forced=True),
            topology="swarm",
        ),
    ),
]

CASES += [
    Case(
        framework="agent_framework",
        run=_run(apps.group_chat_selection),
        truth=Truth(
            app="agent framework GroupChat, selection function: writer, then critic says APPROVED (condition)",
            instances={},
            delegations=(
                Delegation("GroupChat", "writer", frozenset({"writer", "critic"})),
                Delegation("GroupChat", "critic", frozenset({"writer", "critic"})),
            ),
            stop=Stop("critic", "The group chat has reached its termination condition."),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(lambda: apps.group_chat_selection(max_rounds=1)),
        truth=Truth(
            app="agent framework GroupChat, selection function, max_rounds=1: the writer speaks, the limit stops it",
            instances={},
            delegations=(Delegation("GroupChat", "writer", frozenset({"writer", "critic"})),),
            stop=Stop("GroupChat", "The group chat has reached the maximum number of rounds.", forced=True),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.group_chat_manager),
        truth=Truth(
            app="agent framework GroupChat, manager agent: picks the writer, then ends the chat",
            instances={},
            delegations=(Delegation("manager", "writer", frozenset({"writer", "critic"})),),
            stop=Stop("manager", "the draft is done"),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(apps.magentic),
        truth=Truth(
            app="agent framework Magentic: the manager plans, asks the coder, its ledger says satisfied",
            instances={},
            delegations=(Delegation("magentic_manager", "coder", frozenset({"coder", "tester"})),),
            stop=Stop("magentic_manager", "the code is written"),
            topology="centralized",
        ),
    ),
    Case(
        framework="agent_framework",
        run=_run(lambda: apps.magentic(max_round_count=1)),
        truth=Truth(
            app="agent framework Magentic, max_round_count=1: the coder's round, then the round limit",
            instances={},
            delegations=(Delegation("magentic_manager", "coder", frozenset({"coder", "tester"})),),
            stop=Stop("Magentic", "Workflow terminated due to reaching maximum round count.", forced=True),
            topology="centralized",
        ),
    ),
]

CASES.append(
    Case(
        framework="agent_framework",
        run=_run(apps.handoff_until_refund, "my bill"),
        truth=Truth(
            app="agent framework Handoff with a termination condition: billing's reply mentions a refund",
            instances={},
            delegations=(
                Delegation("Handoff", "triage", frozenset({"triage"})),
                Delegation("triage", "billing", frozenset({"billing", "support"})),
            ),
            tool_calls=(("triage", "get_weather", "t1"), ("triage", "handoff_to_billing", "h1")),
            stop=Stop("billing", "termination condition met"),  # its reply made the condition hold
            topology="swarm",
        ),
    ),
)

CASES.append(
    Case(
        framework="agent_framework",
        run=_run(apps.sequential_with_other_agents, stream=True),
        truth=Truth(
            app="agent framework Sequential of a RawAgent and an agent of its own class (streamed)",
            instances={},
            delegations=_chain("Sequential", "raw_writer", "echo"),
            stop=Stop("Sequential", "end"),
            topology="centralized",
        ),
    ),
)


def _inside_workflow() -> None:
    async def app() -> None:
        with orch_otel.workflow("support", task_id="ticket-76"):
            await apps.consume(apps.sequential(), "go")

    asyncio.run(asyncio.wait_for(app(), TIMEOUT))


CASES.append(
    Case(
        framework="agent_framework",
        run=_inside_workflow,
        truth=Truth(
            app="agent framework Sequential inside the app's orch_otel.workflow('support'): the app's run spawns it",
            # the workflow is one agent of the app's run; drafter's and reviewer's turns are its participants'
            instances={"Sequential": 1},
            spawned_by={"Sequential": "support"},
            spawns=(Spawn("support", ("Sequential",)),),
            delegations=_chain("Sequential", "drafter", "reviewer"),
            stop=Stop("Sequential", "end"),  # it runs out of messages; the app's block then ends its own run
            # the app's workflow only wraps the workflow (no model, no decision of its own): not a level
            topology="centralized",
            task_id="ticket-76",
            system="custom",
        ),
    ),
)
