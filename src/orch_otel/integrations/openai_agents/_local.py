"""Local tools that are no function tools: ``ShellTool`` (local environment),
``LocalShellTool``, ``ComputerTool``, ``ApplyPatchTool`` and ``CustomTool``.
The model calls them with its own item types (``shell_call``,
``computer_call``, ``custom_tool_call``, ...) and the run loop runs each
through an action class's ``execute`` (``run_internal/tool_actions.py``).

``execute`` also decides approvals: a call awaiting a human's approval, or
rejected by one, does not run. So the wrapper around ``execute`` only notes
the call (its id and input), and the tool call's span starts when the run
hooks' ``on_tool_start`` says the tool runs; it ends when ``execute``
returns (its output item) or raises.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..._invocation import ToolInvocation
from ._state import RUN, RunState, plain, telemetry_failed

_INPUT_FIELDS = ("input", "action", "actions", "operation")  # custom, shell and computer, computer, apply_patch


@dataclass
class LocalCall:
    """A local tool call ``execute`` was given; ``invocation`` once it runs."""

    state: RunState
    call_id: str | None
    kind: str | None  # the call item's type without "_call": shell, local_shell, computer, ...
    arguments: Any
    invocation: ToolInvocation | None = None


LOCAL: ContextVar[LocalCall | None] = ContextVar("orch_otel_openai_agents_local_tool", default=None)


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def _noted(kwargs: dict[str, Any]) -> LocalCall | None:
    state = RUN.get()
    run = kwargs.get("call") or kwargs.get("action")  # ComputerAction.execute takes ``action``
    item = getattr(run, "tool_call", None)
    if state is None or state.finished or item is None:
        return None
    kind = _field(item, "type")
    arguments = next((_field(item, f) for f in _INPUT_FIELDS if _field(item, f) is not None), None)
    return LocalCall(state, str(_field(item, "call_id") or "") or None,
                     kind.removesuffix("_call") if isinstance(kind, str) else None, plain(arguments))


def local_tool() -> Any:
    """``ShellAction.execute`` and its siblings: the call, recorded once the tool runs."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            call = _noted(kwargs)
        except Exception:
            telemetry_failed("local tool")
            call = None
        if call is None:
            return await wrapped(*args, **kwargs)
        token = LOCAL.set(call)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            LOCAL.reset(token)
            if call.invocation is not None:
                call.invocation.fail(exc)
            raise
        LOCAL.reset(token)
        if call.invocation is not None:
            call.invocation.set_result(model_got(result))
            call.invocation.end()
        return result

    return wrapper


def model_got(result: Any) -> Any:
    """A local tool's result as the model got it: a ``ShellTool`` call's is
    its output item's structured payload (:func:`shell_output`), since the
    model reads that structure, not the text the SDK renders for its hooks and
    run items (which a replay could not turn back into it); other tools' the
    text (or screenshot) the model got."""
    structured = shell_output(getattr(result, "raw_item", None))
    return structured if structured is not None else plain(getattr(result, "output", None))


def shell_output(item: Any) -> dict[str, Any] | None:
    """A ``shell_call_output`` item's payload for the model: ``{"output":
    [{stdout, stderr, outcome}, ...], "max_output_length"?}`` (one entry per
    command); None for any other item."""
    if not isinstance(item, dict) or item.get("type") != "shell_call_output" or not isinstance(
            item.get("output"), list):
        return None
    got: dict[str, Any] = {"output": [{k: v for k, v in entry.items() if k != "created_by"}  # the provider's mark
                                      if isinstance(entry, dict) else entry for entry in plain(item["output"])]}
    if item.get("max_output_length") is not None:
        got["max_output_length"] = item["max_output_length"]
    return got


def started(tool: Any) -> None:
    """``on_tool_start`` of a local tool that is no function tool (function
    tools are recorded around their body): its call runs now."""
    call = LOCAL.get()
    if call is None or call.invocation is not None or hasattr(tool, "params_json_schema"):
        return
    state = call.state
    parent = state.segment.context if state.segment is not None else state.parent
    call.invocation = state.recorder.tool(
        str(getattr(tool, "trace_name", None) or getattr(tool, "name", None) or call.kind or "tool"),
        call_id=call.call_id, arguments=call.arguments,
        tool_type=call.kind,
    ).start(attach=False, parent=parent)
