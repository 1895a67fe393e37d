"""Hand-written (decorator) app shapes of the fidelity suite, one per topology
of the seed schema, each with its truth written by hand from the app's code
(see tests/fidelity.py). None of the apps states its topology: the converter
infers it from the structure (docs/trace-format.md#topology)."""

from __future__ import annotations

import contextvars
from concurrent.futures import ThreadPoolExecutor

from fidelity import Aggregate, Case, Delegation, Stop, Truth

import orch_otel
from orch_otel.recorder import get_recorder


def _tool(name: str, call_id: str, result: str = "ok") -> str:
    """A tool run with a fixed call id (``@orch_otel.tool`` draws a random one)."""
    with get_recorder().tool(name, call_id=call_id, arguments={"q": name}) as call:
        call.set_result(result)
    return result


def _think(model: str, text: str) -> None:
    with orch_otel.llm_call(model, input_messages=[{"role": "user", "content": text}]) as call:
        call.set_response(text, input_tokens=4, output_tokens=2)


# -- centralized: a lead fans out to three analysts at once, aggregates, delegates the write-up --


def _analyst(i: int) -> str:
    with orch_otel.agent("analyst", role="analyst"):
        _think("analyst-llm", f"topic {i}")
        return _tool("search", f"call_search_{i}")


def centralized() -> None:
    with orch_otel.agent("lead", role="orchestrator"):
        orch_otel.spawn(["analyst"] * 3)
        with ThreadPoolExecutor(max_workers=3) as pool:  # three invocations of one agent, in parallel
            futures = [pool.submit(contextvars.copy_context().run, _analyst, i) for i in range(3)]
            [f.result() for f in futures]
        orch_otel.aggregate(sources=["analyst"] * 3)
        orch_otel.delegate("writer", options=["analyst", "writer"])
        with orch_otel.agent("writer", role="writer"):
            _think("writer-llm", "write it up")
        orch_otel.stop("end")


# -- planner_executor_critic: plan, execute, review; the critic sends it back once, then approves --


PEC_OPTIONS = frozenset({"planner", "executor", "critic"})


def planner_executor_critic() -> None:
    options = sorted(PEC_OPTIONS)
    with orch_otel.agent("coordinator", role="orchestrator"):
        orch_otel.delegate("planner", options=options)
        with orch_otel.agent("planner", role="planner"):
            _think("planner-llm", "plan")
            orch_otel.message("the plan", recipients=["executor"])
        for attempt in (1, 2):
            orch_otel.delegate("executor", options=options)
            with orch_otel.agent("executor", role="executor"):
                _tool("run_code", f"call_run_{attempt}")
            orch_otel.delegate("critic", options=options)
            with orch_otel.agent("critic", role="critic"):
                _think("critic-llm", f"review {attempt}")
                if attempt == 1:
                    orch_otel.message("fix the edge case", recipients=["executor"])
                else:
                    orch_otel.stop("approved")  # the critic ends the run


# -- debate: pro and con argue two rounds, the moderator weighs all four arguments --


def debate() -> None:
    with orch_otel.agent("moderator", role="moderator"):
        for round_ in (1, 2):
            orch_otel.spawn("pro", "con")
            with orch_otel.agent("pro", role="debater"):
                _think("pro-llm", f"pro round {round_}")
                orch_otel.message(f"pro {round_}", recipients=["con"])
            with orch_otel.agent("con", role="debater"):
                _think("con-llm", f"con round {round_}")
                orch_otel.message(f"con {round_}", recipients=["pro"])
        orch_otel.aggregate(sources=["pro", "con", "pro", "con"])
        orch_otel.stop("verdict")


# -- swarm: triage hands off to billing, billing hands off to tech, tech ends it --


def swarm() -> None:
    with orch_otel.workflow("support_swarm"):
        with orch_otel.agent("triage", spawned=True):
            _think("triage-llm", "who handles this?")
            orch_otel.delegate("billing", options=["billing", "tech"])
            orch_otel.message("over to you", recipients=["billing"], message_type="handoff")
        with orch_otel.agent("billing", spawned=True):
            _tool("refund", "call_refund")
            orch_otel.delegate("tech", options=["triage", "tech"])
            orch_otel.message("needs a reset too", recipients=["tech"], message_type="handoff")
        with orch_otel.agent("tech", spawned=True):
            _tool("reset_password", "call_reset")
            orch_otel.stop("resolved")


# -- hierarchical: a director runs two team leads, each runs two engineers --


def hierarchical() -> None:
    with orch_otel.agent("director", role="director"):
        orch_otel.spawn("team_lead", "team_lead")
        for team in (1, 2):
            with orch_otel.agent("team_lead", role="manager"):
                orch_otel.spawn("engineer", "engineer")
                for member in (1, 2):
                    with orch_otel.agent("engineer", role="engineer"):
                        _tool("build", f"call_build_{team}_{member}")
                orch_otel.aggregate(sources=["engineer", "engineer"])
        orch_otel.aggregate(sources=["team_lead", "team_lead"])
        orch_otel.stop("end")


# -- harness: one coding agent in a model/tool loop inside a run --


def harness() -> None:
    with orch_otel.workflow("coding_harness"), orch_otel.agent("coder"):
        for step in (1, 2, 3):
            _think("coder-llm", f"step {step}")
            _tool("shell", f"call_shell_{step}")
        orch_otel.stop("task complete")


CASES: list[Case] = [
    Case(
        framework="custom",
        run=centralized,
        truth=Truth(
            app="custom centralized: lead spawns analyst x3 in parallel, aggregates them, delegates to writer, ends",
            instances={"analyst": 3, "writer": 1},
            delegations=(Delegation("lead", "writer", frozenset({"analyst", "writer"})),),
            tool_calls=tuple(("analyst", "search", f"call_search_{i}") for i in range(3)),
            aggregates=(Aggregate("lead", ("analyst", "analyst", "analyst")),),
            stop=Stop("lead", "end"),
            topology="centralized",
            spawned_by={"analyst": "lead", "writer": "lead"},
        ),
    ),
    Case(
        framework="custom",
        run=planner_executor_critic,
        truth=Truth(
            app="custom planner_executor_critic: planner, executor, critic (sends back), executor, critic approves",
            instances={"planner": 1, "executor": 2, "critic": 2},
            delegations=tuple(Delegation("coordinator", to, PEC_OPTIONS)
                              for to in ("planner", "executor", "critic", "executor", "critic")),
            tool_calls=(("executor", "run_code", "call_run_1"), ("executor", "run_code", "call_run_2")),
            stop=Stop("critic", "approved"),
            topology="planner_executor_critic",
            spawned_by={"planner": "coordinator", "executor": "coordinator", "critic": "coordinator"},
        ),
    ),
    Case(
        framework="custom",
        run=debate,
        truth=Truth(
            app="custom debate: pro and con argue two rounds (messages both ways), the moderator aggregates all four",
            instances={"pro": 2, "con": 2},
            aggregates=(Aggregate("moderator", ("pro", "con", "pro", "con")),),
            stop=Stop("moderator", "verdict"),
            topology="debate",
            spawned_by={"pro": "moderator", "con": "moderator"},
        ),
    ),
    Case(
        framework="custom",
        run=swarm,
        truth=Truth(
            app="custom swarm: triage hands off to billing, billing to tech, tech ends the run",
            instances={"triage": 1, "billing": 1, "tech": 1},
            delegations=(Delegation("triage", "billing", frozenset({"billing", "tech"})),
                         Delegation("billing", "tech", frozenset({"triage", "tech"}))),
            tool_calls=(("billing", "refund", "call_refund"), ("tech", "reset_password", "call_reset")),
            stop=Stop("tech", "resolved"),
            topology="swarm",
            spawned_by={"triage": "support_swarm", "billing": "support_swarm", "tech": "support_swarm"},
        ),
    ),
    Case(
        framework="custom",
        run=hierarchical,
        truth=Truth(
            app="custom hierarchical: director -> team_lead x2 -> engineer x2 each; each level aggregates the one below",
            instances={"team_lead": 2, "engineer": 4},
            tool_calls=tuple(("engineer", "build", f"call_build_{t}_{m}") for t in (1, 2) for m in (1, 2)),
            aggregates=(Aggregate("team_lead", ("engineer", "engineer")),
                        Aggregate("team_lead", ("engineer", "engineer")),
                        Aggregate("director", ("team_lead", "team_lead"))),
            stop=Stop("director", "end"),
            topology="hierarchical",
            spawned_by={"team_lead": "director", "engineer": "team_lead"},
        ),
    ),
    Case(
        framework="custom",
        run=harness,
        truth=Truth(
            app="custom harness: one coder agent, three model calls each followed by a shell tool call, stops itself",
            instances={},
            tool_calls=tuple(("coder", "shell", f"call_shell_{s}") for s in (1, 2, 3)),
            stop=Stop("coder", "task complete"),
            topology="harness",
        ),
    ),
]
