"""State shared by the wrappers: the runs in progress, keyed by team id, and
the context key that marks "inside an orch-otel AutoGen run".

Every AutoGen team has a ``team_id``; its manager and every participant
container run as runtime agents whose ``id.key`` is that team id. The handler
wrappers look their run up here and attach its context explicitly, so spans
land in the run's trace even when the user passed their own, already started
runtime (whose tasks do not inherit the caller's context).
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..._faults import log_fault
from ..._invocation import Invocation

_log = logging.getLogger("orch_otel.integrations.autogen")

STATE_KEY = otel_context.create_key("orch_otel.autogen.run")
LLM_KEY = otel_context.create_key("orch_otel.autogen.llm")
SYSTEM = "autogen"


class ModelCall:
    """What the layer under a model client tells about one call in progress
    (the value of ``LLM_KEY``): the model id the server answered with, and
    whether it reported token usage (None: not known to this layer)."""

    __slots__ = ("response_model", "usage_reported")

    def __init__(self) -> None:
        self.response_model: str | None = None
        self.usage_reported: bool | None = None


def model_call() -> ModelCall | None:
    """The model call in progress in the current context, if any."""
    value = otel_context.get_value(LLM_KEY)
    return value if isinstance(value, ModelCall) else None


class RunState:
    """One team (or standalone agent) run in progress."""

    __slots__ = ("actor", "invocation", "span", "ctx", "nested", "parent", "stop", "stop_source", "stop_forced",
                 "error_type", "options", "fanout", "seen", "arrivals", "activations", "last_speakers", "turns", "firings",
                 "round_limit", "final_answer", "humans", "handed_to")

    def __init__(self, actor: str, invocation: Invocation, nested: bool, parent: RunState | None = None) -> None:
        self.actor = actor  # the name the converter gives the run span's events
        self.invocation = invocation
        self.span = invocation.span
        self.ctx = otel_context.set_value(STATE_KEY, self, invocation.context)
        self.nested = nested
        self.parent = parent  # the run this one is nested in
        self.stop: str | None = None  # the termination's StopMessage content
        self.stop_source: str | None = None  # the termination condition (or manager) that stopped it
        self.stop_forced = False  # a limit stopped it (docs/autogen.md#stops-forced-or-voluntary)
        self.error_type: str | None = None
        self.options: list[str] | None = None  # the selector's real candidate list for the next choice
        self.fanout: dict[str, tuple[int, int]] = {}  # speaker -> (index, size) of a parallel selection
        self.seen: set[str] = set()  # participants that already had a turn in this run
        self.arrivals: dict[tuple[str, str], list[str]] = {}  # GraphFlow: (node, activation group) -> parents so far
        self.activations: dict[str, list[str]] = {}  # GraphFlow: ready node -> the parents that activated it
        self.last_speakers: list[str] | None = None  # the previous speaker selection
        self.turns: dict[str, Invocation] = {}  # agent -> its latest turn in this run or a run nested in it
        self.firings: list[Any] = []  # termination conditions that fired since the last stop (_stops.Firing)
        self.round_limit = False  # MagenticOne: the orchestrator's max_turns (rounds) ran out
        self.final_answer = False  # MagenticOne: the orchestrator is giving its final answer
        self.humans: set[str] = set()  # participants that stand for a human (UserProxyAgent), here or nested
        self.handed_to: str | None = None  # the last handoff went to someone outside the team (a human)

    def add_turn(self, name: str, invocation: Invocation) -> None:
        """Remember ``name``'s latest turn here and in every run around this one
        (a termination condition up there may fire on that agent's message)."""
        state: RunState | None = self
        while state is not None:
            state.turns[name] = invocation
            state = state.parent


    def add_human(self, name: str) -> None:
        """``name`` stands for a human, here and in every run around this one."""
        state: RunState | None = self
        while state is not None:
            state.humans.add(name)
            state = state.parent


RUNS: dict[str, RunState] = {}
"""Runs in progress by team id (a team object runs at most once at a time)."""


def current_state() -> RunState | None:
    value = otel_context.get_value(STATE_KEY)
    return value if isinstance(value, RunState) else None


def state_of(agent: Any) -> RunState | None:
    """The run of a runtime agent (group chat manager or participant container)."""
    try:
        return RUNS.get(agent.id.key)
    except Exception:  # an agent not yet bound to a runtime
        return None


def recording() -> bool:
    return trace.get_current_span().is_recording()


def telemetry_failed(where: str) -> None:
    """Telemetry never raises into the host: note the failure and go on."""
    log_fault(_log, logging.DEBUG, "orch-otel: AutoGen hook %s failed; not recorded", where)
