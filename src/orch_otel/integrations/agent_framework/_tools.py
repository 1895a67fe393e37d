"""Tool calls: ``agent_framework._tools._execute_single_function_call``
(looked up as a module global at call time), one ``execute_tool`` span per
call the model made, with its call id. It sees the handoff tools that
function middleware short-circuits before the tool itself (and the
framework's own span) would run: such a handoff is the agent's delegation
among its handoff targets. Parallel calls of one turn run concurrently, each
in its own span. ``_ensure_function_invocation_limit_fallback_response``
marks an agent whose tool loop hit its budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..._invocation import ERROR
from ..._serving import served_tool
from ...recorder import Recorder
from .._calls import arg
from ._served import tool_result
from ._state import Scope, current_scope, telemetry_failed


def _handoff_targets(kwargs: dict[str, Any]) -> dict[str, str]:
    """Handoff tool name -> target executor id, from the Handoff builder's
    function middleware in the call's pipeline (none outside a Handoff workflow)."""
    pipeline = kwargs.get("middleware_pipeline")
    for middleware in getattr(pipeline, "_middleware", None) or ():
        functions = getattr(middleware, "_handoff_functions", None)
        if type(middleware).__name__ == "_AutoHandoffMiddleware" and isinstance(functions, dict):
            return functions
    return {}


def _runs_as_itself(name: str, handoffs: dict[str, str], kwargs: dict[str, Any]) -> bool:
    """A tool a replay does not serve: a handoff tool (the builder's middleware
    acts on it) or an agent as a tool (its own model calls are served)."""
    tool = (kwargs.get("tool_map") or {}).get(name)
    return name in handoffs or getattr(tool, "_wrapped_agent", None) is not None


def _record_handoff(recorder: Recorder, scope: Scope, name: str, targets: dict[str, str], result: Any) -> None:
    """A handoff tool the middleware short-circuited: the agent's own delegation,
    among its handoff targets (the workflow then addresses the target directly)."""
    if name not in targets or not (isinstance(result, tuple) and len(result) == 2 and result[1]):
        return
    run = scope.run()
    agents = run.agents if run is not None else {}
    recorder.delegate(agents.get(targets[name], targets[name]),
                      options=[agents.get(t, t) for t in targets.values()], span=scope.span)


def tool_call(recorder: Recorder) -> Callable[..., Any]:
    """``_execute_single_function_call(function_call, *, ...) -> (contents, terminate)``."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            scope = current_scope()
            call = arg(args, kwargs, 0, "function_call")
            if getattr(call, "type", None) == "function_approval_response" and getattr(call, "function_call", None):
                call = call.function_call  # an approved call: the model's own call inside it
            inv = None if scope is None else recorder.tool(
                str(getattr(call, "name", None) or "tool"), call_id=getattr(call, "call_id", None),
                arguments=getattr(call, "arguments", None), tool_type="function").start(attach=True)
        except Exception:
            telemetry_failed("tool start")
            inv = None
        if inv is None:
            return await wrapped(*args, **kwargs)
        with inv:  # fails it on an exception (re-raised untouched), else ends it
            handoffs = _handoff_targets(kwargs)
            served = None if _runs_as_itself(str(getattr(call, "name", "")), handoffs, kwargs) else served_tool(inv.span)
            result = await wrapped(*args, **kwargs) if served is None else tool_result(call.call_id, served)
            try:
                if scope is not None:  # inside the tool's span: the replay's script sees a handoff tool
                    _record_handoff(recorder, scope, str(getattr(call, "name", "")), handoffs, result)
            except Exception:
                telemetry_failed("handoff")
            try:
                contents = result[0]
                first = contents[0] if contents else None
                inv.set_result(getattr(first, "result", None))
                if getattr(first, "exception", None):  # the tool raised; the framework answers the model an error
                    inv.end(outcome=ERROR)  # its text is the exception's message: content, left out
            except Exception:
                telemetry_failed("tool result")
        return result

    return wrapper


def tool_loop_limit() -> Callable[..., Any]:
    """``_ensure_function_invocation_limit_fallback_response(response)``: the tool
    loop calls it only once a limit (``max_iterations``, ``max_function_calls``,
    ``max_duration_seconds``, a stop after repeated errors) made it ask for a
    final answer with tools off."""

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = wrapped(*args, **kwargs)
        scope = current_scope()
        if scope is not None and scope.workflow is None:
            scope.limit = True
        return result

    return wrapper
