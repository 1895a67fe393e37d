"""OpenAI Agents SDK app shapes of the fidelity suite, each with its truth
written by hand from the app's code in tests/openai_agents_apps.py (see
tests/fidelity.py for what each field means).

SDK facts the truths rely on:
- the runner's own starts of its agents are not spawns (as AutoGen's team
  participants are not): ``instances`` counts only agents run inside a tool
  (``Agent.as_tool``), spawned by the agent that called the tool;
- a handoff is the handing-off agent's delegation among its enabled
  handoffs (a ``handoff(..., is_enabled=False)`` is no option), plus the
  ``transfer_to_<agent>`` tool call with the model's call id;
- an agent's answer is its own voluntary stop ``end``; ``stop_on_first_tool``
  and ``StopAtTools`` are its voluntary stop by tool; a guardrail tripwire and
  ``max_turns`` are the run's (the workflow's) forced stop;
- a run inside a run the app records (``orch_otel.workflow``) has no workflow
  of its own: that run spawns its starting agent, and a tripwire or limit is
  the forced stop of the agent it stopped.
"""

from __future__ import annotations

from typing import Any

import openai_agents_apps as apps
from fidelity import Case, Delegation, Spawn, Stop, Truth

import orch_otel


def _raising(run: Any, error: str) -> Any:
    """Run an app whose run raises ``error`` (the SDK's tripwire or limit), as it must."""

    def call() -> None:
        try:
            run()
        except Exception as exc:
            assert type(exc).__name__ == error, exc
        else:
            raise AssertionError(f"expected {error}")

    return call


CASES: list[Case] = [
    Case(
        framework="openai_agents",
        run=apps.support(),
        truth=Truth(
            app="openai-agents handoffs: triage -> billing (lookup t1) -> back to triage, refunds disabled",
            instances={},
            delegations=(
                Delegation("triage", "billing", frozenset({"billing"})),  # refunds is not enabled
                Delegation("billing", "triage", frozenset({"triage"})),
            ),
            tool_calls=(("triage", "transfer_to_billing", "h1"), ("billing", "lookup_invoice", "t1"),
                        ("billing", "transfer_to_triage", "h2")),
            stop=Stop("triage", "end"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.support_streamed,
        truth=Truth(
            app="openai-agents streamed handoffs: the same run through run_streamed",
            instances={},
            delegations=(
                Delegation("triage", "billing", frozenset({"billing"})),
                Delegation("billing", "triage", frozenset({"triage"})),
            ),
            tool_calls=(("triage", "transfer_to_billing", "h1"), ("billing", "lookup_invoice", "t1"),
                        ("billing", "transfer_to_triage", "h2")),
            stop=Stop("triage", "end"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.parallel_tools,
        truth=Truth(
            app="openai-agents parallel tools: fetch_async p1, fetch_sync p2 and a raising broken p3 in one reply",
            instances={},
            tool_calls=(("researcher", "fetch_async", "p1"), ("researcher", "fetch_sync", "p2"),
                        ("researcher", "broken", "p3")),
            stop=Stop("researcher", "end"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.agents_as_tools,
        truth=Truth(
            app="openai-agents agents as tools: manager runs researcher (a1) and writer (a2) in parallel",
            instances={"researcher": 1, "writer": 1},
            spawned_by={"researcher": "manager", "writer": "manager"},
            tool_calls=(("manager", "research", "a1"), ("manager", "write", "a2")),
            stop=Stop("manager", "end"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=_raising(apps.input_tripwire, "InputGuardrailTripwireTriggered"),
        truth=Truth(
            app="openai-agents input guardrail no_secrets trips before the agent runs",
            instances={},
            stop=Stop("guarded", "input_guardrail_tripwire", forced=True),
        ),
    ),
    Case(
        framework="openai_agents",
        run=_raising(apps.output_tripwire, "OutputGuardrailTripwireTriggered"),
        truth=Truth(
            app="openai-agents output guardrail polite trips on the agent's answer",
            instances={},
            stop=Stop("assistant", "end"),  # it chose to answer; the workflow's forced stop follows
        ),
    ),
    Case(
        framework="openai_agents",
        run=_raising(apps.max_turns, "MaxTurnsExceeded"),
        truth=Truth(
            app="openai-agents max_turns=2: poller polls (m1, m2) until the limit raises",
            instances={},
            tool_calls=(("poller", "poll", "m1"), ("poller", "poll", "m2")),
            stop=Stop("polling", "max_turns", forced=True),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.max_turns_handled,
        truth=Truth(
            app="openai-agents max_turns=2 answered by an error handler",
            instances={},
            tool_calls=(("poller", "poll", "m1"), ("poller", "poll", "m2")),
            stop=Stop("polling", "max_turns", forced=True),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.stop_on_first_tool,
        truth=Truth(
            app="openai-agents stop_on_first_tool: get_weather (w1) is the final output",
            instances={},
            tool_calls=(("forecaster", "get_weather", "w1"),),
            stop=Stop("forecaster", "stop_on_first_tool"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.stop_at_tools,
        truth=Truth(
            app="openai-agents StopAtTools(finish): get_weather (w1), then finish (f1) ends the run",
            instances={},
            tool_calls=(("forecaster", "get_weather", "w1"), ("forecaster", "finish", "f1")),
            stop=Stop("forecaster", "stop_at_tools"),
        ),
    ),
]

# Tools beyond function tools. A call a tool guardrail rejected is still the model's call (the
# body never ran); hosted calls ran at the provider, inside the model call; an MCP server's tool
# runs in the app's process, through the server. All are the agent's tool calls, with their ids.
CASES += [
    Case(
        framework="openai_agents",
        run=apps.guarded_tools,
        truth=Truth(
            app="openai-agents tool guardrails: delete_file g1 rejected before it runs, read_file g2's result withheld",
            instances={},
            tool_calls=(("clerk", "delete_file", "g1"), ("clerk", "read_file", "g2")),
            stop=Stop("clerk", "end"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=_raising(apps.tool_input_tripwire, "ToolInputGuardrailTripwireTriggered"),
        truth=Truth(
            app="openai-agents tool input guardrail no_deletes trips on wipe x1: the run ends",
            instances={},
            tool_calls=(("clerk", "wipe", "x1"),),
            stop=Stop("files", "tool_input_guardrail_tripwire", forced=True),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.hosted_tools,
        truth=Truth(
            app="openai-agents hosted tools: web_search ws_1, file_search fs_1, MCP search_docs mcp_1, lookup_invoice t1",
            instances={},
            tool_calls=(("researcher", "lookup_invoice", "t1"),),
            hosted_tool_calls=(("researcher", "web_search", "ws_1"), ("researcher", "file_search", "fs_1"),
                               ("researcher", "search_docs", "mcp_1")),
            stop=Stop("researcher", "end"),
        ),
    ),
    Case(
        framework="openai_agents",
        run=apps.mcp_server_tools,
        truth=Truth(
            app="openai-agents MCP server over stdio: scribe calls the notes server's add_note n1",
            instances={},
            tool_calls=(("scribe", "add_note", "n1"),),
            stop=Stop("scribe", "end"),
        ),
    ),
]
CASES.append(Case(
    framework="openai_agents",
    run=apps.local_tools,
    truth=Truth(
        app="openai-agents local tools that are no functions: a shell command s1 and a custom tool shout c1",
        instances={},
        tool_calls=(("operator", "shell", "s1"), ("operator", "shout", "c1")),
        stop=Stop("operator", "end"),
    ),
))


def _inside_workflow() -> None:
    with orch_otel.workflow("front-desk", task_id="ticket-60"):
        apps.routed()


def _tripwire_inside_workflow() -> None:
    with orch_otel.workflow("front-desk", task_id="ticket-61"):
        apps.input_tripwire()


# Runs inside the app's own run, next to the AutoGen and LangGraph ones.
CASES += [
    Case(
        framework="openai_agents",
        run=_inside_workflow,
        truth=Truth(
            app="openai-agents handoff run inside the app's orch_otel.workflow('front-desk'): the app's run spawns router",
            # router is the one agent the app's run started; sales is router's handoff, not a spawn
            instances={"router": 1},
            spawned_by={"router": "front-desk"},
            spawns=(Spawn("front-desk", ("router",)),),
            delegations=(Delegation("router", "sales", frozenset({"sales", "support"})),),
            tool_calls=(("router", "transfer_to_sales", "r1"),),
            stop=Stop("sales", "end"),  # sales answers; the app's block then ends its own run
            task_id="ticket-60",
            system="custom",
        ),
    ),
    Case(
        framework="openai_agents",
        run=_raising(_tripwire_inside_workflow, "InputGuardrailTripwireTriggered"),
        truth=Truth(
            app="openai-agents input guardrail no_secrets trips inside the app's orch_otel.workflow('front-desk')",
            instances={"assistant": 1},
            spawned_by={"assistant": "front-desk"},
            stop=Stop("assistant", "input_guardrail_tripwire", forced=True),  # the agent it guards, before its turn
            task_id="ticket-61",
            system="custom",
        ),
    ),
]
