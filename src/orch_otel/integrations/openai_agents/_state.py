"""One SDK run as orch-otel sees it, and the context that finds it again.

``RUN`` holds the run in progress: set by the ``Runner`` wrappers and copied
into every task the run creates (turns, tools, the streamed run's loop), so
the run loop's wrappers and a nested ``Runner.run`` inside a tool find it.
``TOOL`` holds the function tool whose body is running (a nested run is a
sub-agent of its caller, spawned in that tool).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context

from ..._faults import log_fault
from ..._invocation import Invocation, LLMInvocation, ToolInvocation
from ...recorder import Recorder
from ...vocabulary import System, function_tool

_log = logging.getLogger(__name__)

SYSTEM = System.OPENAI_AGENTS.value
DEFAULT_WORKFLOW = "Agent workflow"  # RunConfig.workflow_name's default


@dataclass
class ToolRun:
    """A function tool's execution; ``error`` is set when its body raised and
    the tool's failure function turned that into the result; ``outcome`` and
    ``guardrail`` when a tool guardrail rejected the call or withheld its result."""

    invocation: ToolInvocation
    error: BaseException | None = None
    outcome: str | None = None
    guardrail: str | None = None


@dataclass
class RunState:
    """What orch-otel keeps of one ``Runner.run`` (top-level or nested)."""

    recorder: Recorder
    root: Invocation | None  # the workflow; None for a run nested in a tool or guardrail, or in the app's run
    parent: otel_context.Context  # where the run's agent segments start
    nested: bool
    run_config: Any = None
    segment: Invocation | None = None  # the agent running now
    segment_name: str | None = None
    resumed: bool = False  # the segment was started for a resumed run's interrupted agent
    resume_of: str | None = None  # the trace id of the interrupted run this run resumes
    segments: int = 0
    llm: LLMInvocation | None = None
    offered: list[tuple[str, str]] = field(default_factory=list)  # this turn's enabled handoffs: (tool, agent)
    handoff_tools: list[dict[str, Any]] = field(default_factory=list)  # their definitions
    tools: list[dict[str, Any]] = field(default_factory=list)  # this turn's function tools' definitions
    calls: dict[str, tuple[str, Any]] = field(default_factory=dict)  # last reply's calls: tool name -> (id, args)
    tool_stop: tuple[str, str | None] | None = None  # (reason, tool) when tool_use_behavior ended the run
    limit: str | None = None  # an error handler's kind (max_turns) when it produced the final output
    limit_error: BaseException | None = None
    finished: bool = False
    spawner: Any = None  # a run inside the app's run: the app's span that spawns its first agent
    task_id: str | None = None  # that run's task id, where its span names it
    first_agent: Any = None  # that run's starting (or resumed) agent


RUN: ContextVar[RunState | None] = ContextVar("orch_otel_openai_agents_run", default=None)
TOOL: ContextVar[ToolRun | None] = ContextVar("orch_otel_openai_agents_tool", default=None)


def pending_id(raw: Any) -> str:
    """The id of a call awaiting approval: a tool call's ``call_id``, a hosted
    MCP server's approval request's own ``id`` (it has no call id)."""
    get = raw.get if isinstance(raw, dict) else lambda key: getattr(raw, key, None)
    call_id = get("call_id") or (get("id") if get("type") == "mcp_approval_request" else None)
    return str(call_id or "")


def arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    """A wrapped call's argument, passed by position or by keyword."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def plain(value: Any) -> Any:
    """SDK items (pydantic models, TypedDicts, lists of them) as JSON-able values."""
    if hasattr(value, "model_dump"):
        try:
            return value.model_dump(mode="json", exclude_none=True)
        except Exception:
            return repr(type(value).__name__)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def definition(name: Any, description: Any, parameters: Any) -> dict[str, Any]:
    """A tool (or handoff) offered to the model, in the shared tool-definition form."""
    return function_tool(str(name), str(description or ""), parameters if isinstance(parameters, dict) else None)


def _name_of(model: Any) -> str | None:
    if isinstance(model, str):
        return model or None
    if model is None:
        return None
    named = getattr(model, "model", None)
    return named if isinstance(named, str) and named else type(model).__name__


def model_name(agent: Any, run_config: Any) -> str:
    """The model an agent's call asks for: the run config's override, else the
    agent's model (a name, or a ``Model`` instance's ``model`` or class name),
    else the SDK's default (the SDK resolves them in that order)."""
    name = _name_of(getattr(run_config, "model", None)) or _name_of(getattr(agent, "model", None))
    if name:
        return name
    try:
        from agents.models import get_default_model

        return get_default_model()
    except Exception:
        return "unknown"


def telemetry_failed(where: str) -> None:
    """Telemetry never raises into the host: note the failure and go on."""
    log_fault(_log, logging.DEBUG, "orch-otel: OpenAI Agents hook %s failed; not recorded", where)
