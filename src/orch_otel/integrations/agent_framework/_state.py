"""State shared by the wrappers: the run or agent invocation in progress
(carried in the OpenTelemetry context under one key), the edge delivery being
routed (a context variable), and small helpers.

Agent Framework re-activates its own span around every stream pull, and while
orch-otel suppresses those spans they are non-recording spans carrying the
parent's context; so the current span is not a reliable way to find
orch-otel's invocation. The wrappers look their scope up under ``SCOPE_KEY``
and always pass the span they record on explicitly.
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any

from opentelemetry import context as otel_context

from ..._faults import log_fault
from ..._invocation import Invocation
from ...vocabulary import AGENT_FRAMEWORK_SYSTEM

_log = logging.getLogger("orch_otel.integrations.agent_framework")

SCOPE_KEY = otel_context.create_key("orch_otel.agent_framework.scope")
LLM_KEY = otel_context.create_key("orch_otel.agent_framework.llm")
SYSTEM = AGENT_FRAMEWORK_SYSTEM
GENERATED_WORKFLOW_NAME = "workflow"  # the root's name for a WorkflowBuilder given no name


class Scope:
    """A workflow run or an agent invocation in progress."""

    __slots__ = ("name", "invocation", "ctx", "parent", "workflow", "agents", "turns", "task_id", "stop", "limit", "ended",
                 "spawned")

    def __init__(self, name: str, invocation: Invocation, parent: Scope | None, workflow: Any = None) -> None:
        self.name = name
        self.invocation = invocation
        self.parent = parent
        self.workflow = workflow  # a Workflow for a run, None for an agent
        self.ctx = otel_context.set_value(SCOPE_KEY, self, invocation.context)
        self.agents: dict[str, str] = {}  # a run's agent executors: executor id -> agent name
        self.turns: dict[str, Invocation] = {}  # a run's latest turn of each agent (a stop may be its, later)
        self.task_id: str | None = None  # a root run's task id (a resumed run keeps the asking run's)
        self.stop: tuple[str, bool, str | None] | None = None  # an orchestrator's end: (reason, forced, source)
        self.limit = False  # an agent's tool loop ran out of its budget (FunctionInvocationConfiguration)
        self.ended = False
        self.spawned = False  # an agent run another agent's tool call, or the app's own run, spawned

    @property
    def span(self) -> Any:
        return self.invocation.span

    def run(self) -> Scope | None:
        """The innermost workflow run this scope is in (itself if it is one)."""
        scope: Scope | None = self
        while scope is not None and scope.workflow is None:
            scope = scope.parent
        return scope


def current_scope(ctx: otel_context.Context | None = None) -> Scope | None:
    value = otel_context.get_value(SCOPE_KEY, ctx)
    return value if isinstance(value, Scope) else None


class Delivery:
    """One message being routed by one edge runner: the targets its edges let through."""

    __slots__ = ("group", "message", "routed", "decided", "targets")

    def __init__(self, group: Any, message: Any) -> None:
        self.group = group
        self.message = message
        self.routed: list[str] = []  # target executor ids whose edge condition held, in order
        self.decided = False
        self.targets: list[str] = []  # the agents the decision named, in order


DELIVERY: contextvars.ContextVar[Delivery | None] = contextvars.ContextVar("orch_otel_maf_delivery", default=None)
FANOUT: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar("orch_otel_maf_fanout", default=None)


def telemetry_failed(where: str) -> None:
    """Telemetry never raises into the host: note the failure and go on."""
    log_fault(_log, logging.DEBUG, "orch-otel: Agent Framework hook %s failed; not recorded", where)
