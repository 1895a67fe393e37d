"""Replay seams for the local tools that are no function tools (``_local.py``):
a replay answers their calls from the recording, and never runs the app's
executor, computer, editor or custom function for a recorded call.

Each action's ``execute`` decides approvals, fires ``on_tool_start`` (where
the call's span starts), then calls what the app gave its tool. During a
replay ``execute`` is given a copy of the tool whose executor (shell, local
shell), ``on_invoke_tool`` (custom tool) or editor (apply_patch) asks the
replay's server first and hands the SDK the recorded output in the form the
app's own would have returned, so the SDK builds the same output item from
it. A computer's actions and screenshot are one classmethod
(``ComputerAction._execute_action_and_capture``), answered directly.

The shell, custom and apply_patch actions turn any exception their tool
raises into a tool output the model reads; a call the recording cannot
answer must stop the run instead, so it leaves those actions as a
``BaseException`` and is raised as :class:`NotRecorded` again from ``execute``.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from agents.editor import ApplyPatchResult
from agents.run_internal import tool_actions
from agents.tool import ShellCallOutcome, ShellCommandOutput, ShellResult

from ..._serving import ACTIVE, NotRecorded, Served, ToolCall
from ...vocabulary import Attr
from .._patch import Patches
from ._local import LOCAL

_SCREENSHOT = "data:image/png;base64,"  # ComputerAction's wrapping of the screenshot it returns
_LIVE = "serve_tools=False (orch-otel replay --live-tools)"


class _Unserved(BaseException):
    """A :class:`NotRecorded` on its way out of an action that would turn an
    ``Exception`` into the tool's output."""

    def __init__(self, cause: NotRecorded) -> None:
        super().__init__(str(cause))
        self.cause = cause


def seams(patches: Patches) -> None:
    for action, field, serving in ((tool_actions.ShellAction, "shell_tool", _served_executor),
                                   (tool_actions.LocalShellAction, "local_shell_tool", _served_executor),
                                   (tool_actions.CustomToolAction, "custom_tool", _served_function),
                                   (tool_actions.ApplyPatchAction, "apply_patch_tool", _served_editor)):
        patches.wrap(action, "execute", _serving_execute(field, serving))
    patches.wrap(tool_actions.ComputerAction, "_execute_action_and_capture", _serve_computer)


def _served(tool: str) -> Served | None:
    """The recorded output of the local tool call running now, None to run it
    live (live tools asked for, after a fork); NotRecorded if it cannot be
    served, a call whose recording failed included (it is not run again)."""
    server, call = ACTIVE.get(), LOCAL.get()
    invocation = call.invocation if call is not None else None
    if server is None or invocation is None:  # no recorded span names the call: never run it blind
        raise NotRecorded(f"the replay cannot look local tool {tool!r}'s call up in the recording (its call "
                          "was not recorded), and does not run it")
    attributes = getattr(invocation.span, "attributes", None) or {}
    try:
        return server.tool(ToolCall(name=str(attributes.get(Attr.TOOL_NAME)),
                                    call_id=attributes.get(Attr.TOOL_CALL_ID),
                                    args_ref=attributes.get(Attr.INPUT_REF), rerun_failed=False))
    except NotRecorded as exc:
        raise NotRecorded(f"{exc}: the replay has diverged and does not run local tool {tool!r} (it runs "
                          f"recorded calls only with {_LIVE}, or after a fork)") from None


def _text(tool: str, served: Served) -> str:
    if not isinstance(served.output, str):
        raise NotRecorded(f"the recorded output of local tool {tool!r} is no text a replay can serve; replay "
                          f"with {_LIVE} to run the tool itself")
    return served.output


def _serving_execute(field: str, serving: Callable[[Any], Any]) -> Any:
    """``execute`` given a copy of its tool that asks the recording first."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        run = kwargs.get("call")
        if ACTIVE.get() is None or run is None:
            return await wrapped(*args, **kwargs)
        tool = copy.copy(getattr(run, field))
        if not serving(tool):
            return await wrapped(*args, **kwargs)  # nothing of the app's runs (a hosted shell)
        kwargs = {**kwargs, "call": dataclasses.replace(run, **{field: tool})}
        try:
            return await wrapped(*args, **kwargs)
        except _Unserved as exc:
            raise exc.cause from None

    return wrapper


def _served_executor(tool: Any) -> bool:
    """A shell's executor: it returns what was recorded. A ``ShellTool``'s
    recorded output is the structured one the model got (``_local.model_got``),
    served as the ``ShellResult`` the SDK turns back into that same item; a
    text (``LocalShellTool``, a recording made before) is returned as is
    (``ShellAction`` wraps it as the command's stdout)."""
    executor = tool.executor
    if executor is None:
        return False

    def served_executor(request: Any) -> Any:
        served = _recorded(tool.name, _shell_output)
        return executor(request) if served is None else served

    tool.executor = served_executor
    return True


def _served_function(tool: Any) -> bool:
    """A custom tool's function: the recorded text is its result."""
    function = tool.on_invoke_tool

    def served_function(context: Any, tool_input: str) -> Any:
        text = _recorded(tool.name)
        return function(context, tool_input) if text is None else text

    tool.on_invoke_tool = served_function
    return True


def _served_editor(tool: Any) -> bool:
    tool.editor = _ServedEditor(tool.name, tool.editor)
    return True


class _ServedEditor:
    """An apply_patch call's editor: the recorded text (its operations' outputs,
    joined) is the first operation's output; the others add none."""

    def __init__(self, tool: str, editor: Any) -> None:
        self._tool, self._editor = tool, editor
        self._asked = False
        self._text: str | None = None

    def _operation(self, name: str, operation: Any) -> Any:
        if not self._asked:
            self._asked, self._text = True, _recorded(self._tool)
            if self._text is not None:
                return ApplyPatchResult(output=self._text)
        return getattr(self._editor, name)(operation) if self._text is None else None

    def create_file(self, operation: Any) -> Any:
        return self._operation("create_file", operation)

    def update_file(self, operation: Any) -> Any:
        return self._operation("update_file", operation)

    def delete_file(self, operation: Any) -> Any:
        return self._operation("delete_file", operation)


def _shell_output(tool: str, served: Served) -> Any:
    """A shell call's recorded output: its structured entries as a ``ShellResult``, or its text."""
    recorded = served.output
    entries = recorded.get("output") if isinstance(recorded, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return _text(tool, served)
    commands = []
    for entry in entries:
        outcome = entry.get("outcome") if isinstance(entry.get("outcome"), dict) else {}
        commands.append(ShellCommandOutput(
            stdout=str(entry.get("stdout") or ""), stderr=str(entry.get("stderr") or ""),
            outcome=ShellCallOutcome(type="timeout" if outcome.get("type") == "timeout" else "exit",
                                     exit_code=outcome.get("exit_code"))))
    return ShellResult(output=commands, max_output_length=recorded.get("max_output_length"))


def _recorded(tool: str, form: Callable[[str, Served], Any] = _text) -> Any:
    """The recorded output in the ``form`` the app's own would have returned,
    None to run live; a miss leaves the action as ``_Unserved``."""
    try:
        served = _served(tool)
        return None if served is None else form(tool, served)
    except NotRecorded as exc:
        call = LOCAL.get()
        if call is not None and call.invocation is not None:  # the span fails with the miss, not its carrier
            call.invocation.fail(exc)
            call.invocation = None
        raise _Unserved(exc) from None


async def _serve_computer(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """The computer's actions and final screenshot: the recorded screenshot
    (``ComputerAction`` raises what this raises, so NotRecorded stops the run)."""
    if ACTIVE.get() is None:
        return await wrapped(*args, **kwargs)
    name = str(getattr(LOCAL.get(), "kind", None) or "computer")
    served = _served(name)
    if served is None:
        return await wrapped(*args, **kwargs)
    image = _text(name, served)
    if image and not image.startswith(_SCREENSHOT):
        raise NotRecorded(f"the recorded output of computer tool {name!r} is no PNG screenshot a replay can "
                          f"serve; replay with {_LIVE} to run the tool itself")
    return image.removeprefix(_SCREENSHOT)
