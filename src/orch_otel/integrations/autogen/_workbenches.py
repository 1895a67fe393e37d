"""Tools served by a workbench: ``Workbench.call_tool`` of every concrete
workbench class but AutoGen's ``StaticWorkbench`` / ``StaticStreamWorkbench``
(whose tools are ``BaseTool``s, recorded at ``run_json``). An app's own
workbench and MCP's ``McpWorkbench`` get one ``execute_tool`` span per call,
with the model's call id; a ``BaseTool`` such a workbench runs inside the
call is that call, not a second one. A ``ToolResult`` with ``is_error`` is a
failed call (the workbench reports the failure instead of raising it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace

from ..._invocation import ERROR, OK
from ..._serving import served_tool
from ...recorder import Recorder
from .._calls import arg
from .._patch import Patches
from . import _builtin
from ._firstsight import ClassPatcher
from ._served import tool_result
from ._state import recording, telemetry_failed

WORKBENCH_CALL = otel_context.create_key("orch_otel.autogen.workbench_call")
CALLED_AS = otel_context.create_key("orch_otel.autogen.called_as")


def called_as(call_id: Any) -> str | None:
    """The name the model called a ``StaticWorkbench`` tool by (a tool override
    renames it), for the ``run_json`` of that call."""
    called = otel_context.get_value(CALLED_AS)
    if call_id is not None and isinstance(called, tuple) and called[1] == call_id:
        return str(called[0])
    return None


def static_call_tool() -> Callable[..., Any]:
    """``StaticWorkbench.call_tool``: its tools are recorded at ``run_json``, under
    the name the model called (``tool_overrides`` may differ from the tool's)."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        name, call_id = arg(args, kwargs, 0, "name"), arg(args, kwargs, 3, "call_id")
        if call_id is None or not recording():
            return await wrapped(*args, **kwargs)
        token = otel_context.attach(otel_context.set_value(CALLED_AS, (name, call_id)))
        try:
            return await wrapped(*args, **kwargs)
        finally:
            otel_context.detach(token)

    return wrapper


def inside_workbench_call() -> bool:
    """Whether the current span is a workbench call's own (a tool it runs is that call)."""
    span = otel_context.get_value(WORKBENCH_CALL)
    return span is not None and span is trace.get_current_span()


def _result_view(result: Any) -> Any:
    try:
        return result.to_text()
    except Exception:  # not a ToolResult: recorded as it is
        return result


def call_tool(recorder: Recorder, result_type: type) -> Callable[..., Any]:
    """``call_tool(name, arguments, cancellation_token, call_id)``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not recording() or inside_workbench_call():  # outside a run, or a workbench inside a workbench
            return await wrapped(*args, **kwargs)
        try:
            inv = recorder.tool(str(arg(args, kwargs, 0, "name")), call_id=arg(args, kwargs, 3, "call_id"),
                                arguments=arg(args, kwargs, 1, "arguments")).start(attach=False)
            token = otel_context.attach(otel_context.set_value(WORKBENCH_CALL, inv.span, inv.context))
        except Exception:
            telemetry_failed("workbench call start")
            return await wrapped(*args, **kwargs)
        try:
            served = served_tool(inv.span)  # outside a replay: one context-variable read
            result = await wrapped(*args, **kwargs) if served is None else tool_result(served, arg(args, kwargs, 0, "name"))
        except BaseException as exc:
            inv.fail(exc)
            raise
        finally:
            otel_context.detach(token)
        try:
            inv.set_result(_result_view(result))
            failed = isinstance(result, result_type) and bool(getattr(result, "is_error", False))
        except Exception:
            telemetry_failed("workbench call result")
            failed = False
        inv.end(outcome=ERROR if failed else OK)
        return result

    return wrapper


class WorkbenchPatcher(ClassPatcher):
    """Patches workbench classes on first sight (an agent's ``_workbench``)."""

    def __init__(self, recorder: Recorder, patches: Patches, base: type, result_type: type,
                 static: tuple[type, ...]) -> None:
        def quiet_builtin_span(owner: type) -> None:
            # MCP's workbench opens AutoGen's own execute_tool span inside the call: this span replaces it.
            module = sys.modules.get(owner.__module__)
            if module is not None and hasattr(module, "trace_tool_span") \
                    and not patches.is_wrapped(module, "trace_tool_span"):
                patches.wrap(module, "trace_tool_span", _builtin.suppress)

        super().__init__(patches, base, {"call_tool": call_tool(recorder, result_type)}, skip=static,
                         on_patch=quiet_builtin_span)

    def discover_agent(self, agent: Any) -> None:
        workbenches = getattr(agent, "_workbench", None)
        if isinstance(workbenches, (list, tuple)):
            for workbench in workbenches:
                self.discover(workbench)
