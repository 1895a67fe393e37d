"""Steps of the SDK's run loop that run hooks do not show: the enabled
handoffs and the tools of each turn, each function tool's execution (in the
task that runs its body, so a nested run inside it is the caller's
sub-agent), a tool that raised, a tool guardrail that rejected a call or
withheld a result, a tool_use_behavior stop, and an error handler answering
for a limit.

Each wrapper calls the SDK's function unchanged and records after it (the
tool's span is current around its body); nothing it records changes what the
SDK returns."""

from __future__ import annotations

from typing import Any

from ..._invocation import ERROR
from ...vocabulary import Attr, ToolOutcome
from ._hosted import definition as hosted_definition
from ._state import RUN, TOOL, ToolRun, arg, definition, plain, telemetry_failed


def enabled_handoffs() -> Any:
    """``run_loop.get_handoffs``: the handoffs offered to the model this turn."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        handoffs = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None:
            try:
                state.offered = [(str(h.tool_name), str(h.agent_name)) for h in handoffs]
                state.handoff_tools = [definition(h.tool_name, h.tool_description, h.input_json_schema)
                                       for h in handoffs]
            except Exception:
                telemetry_failed("handoffs")
        return handoffs

    return wrapper


def offered_tools() -> Any:
    """``run_loop.get_all_tools``: the tools offered to the model this turn:
    function tools (an MCP server's tools among them) with their schemas,
    hosted and other tools by type and name."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        tools = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None:
            try:
                state.tools = [definition(t.name, t.description, t.params_json_schema)
                               if hasattr(t, "params_json_schema") else hosted_definition(t) for t in tools]
            except Exception:
                telemetry_failed("tools")
        return tools

    return wrapper


def function_tool() -> Any:
    """``_FunctionToolBatchExecutor._execute_single_tool_body``: one function
    tool call that runs (approved, or needing no approval), with the model's
    call id; parallel calls run in their own tasks."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = RUN.get()
        run = None
        if state is not None and not state.finished:
            try:
                tool = kwargs["func_tool"]
                call = kwargs["tool_call"]
                parent = state.segment.context if state.segment is not None else state.parent
                invocation = state.recorder.tool(
                    str(tool.name), call_id=getattr(call, "call_id", None), arguments=getattr(call, "arguments", None),
                    tool_type="function", attributes=_origin(tool),
                ).start(attach=True, parent=parent)
                run = ToolRun(invocation)
            except Exception:
                telemetry_failed("tool start")
        if run is None:
            return await wrapped(*args, **kwargs)
        token = TOOL.set(run)
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            TOOL.reset(token)
            if run.outcome is not None:  # a tool guardrail's tripwire: the run ends, the tool did not fail
                _guarded_end(run)
            else:
                run.invocation.fail(exc)
            raise
        TOOL.reset(token)
        _tool_done(run, result)
        return result

    return wrapper


def _origin(tool: Any) -> dict[str, Any] | None:
    """An MCP server's tool (the SDK wraps each in a function tool): the server's name."""
    origin = getattr(tool, "_tool_origin", None)
    server = getattr(origin, "mcp_server_name", None)
    return {Attr.TOOL_SERVER: str(server)} if server else None


def _tool_done(run: ToolRun, result: Any) -> None:
    try:
        invocation = run.invocation
        invocation.set_result(plain(getattr(result, "output", result)))
        if run.outcome is not None:
            _guarded_end(run)
        elif run.error is not None:  # the body raised; the failure function's message went to the model
            invocation.end(outcome=ERROR, error=run.error)
        else:
            invocation.end()
    except Exception:
        telemetry_failed("tool end")


def _guarded_end(run: ToolRun) -> None:
    run.invocation.set(Attr.GUARDRAIL, run.guardrail)
    run.invocation.end(outcome=run.outcome or ToolOutcome.REJECTED.value)


def tool_guardrails(outcome: ToolOutcome) -> Any:
    """``tool_execution._execute_tool_input_guardrails`` (``REJECTED``: the
    tool does not run) and ``_execute_tool_output_guardrails`` (``WITHHELD``:
    it ran, its result does not reach the model): a guardrail that rejects the
    call (the model gets the guardrail's message instead) or trips (the run
    ends) is named on the tool call, with the outcome."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            result = await wrapped(*args, **kwargs)
        except BaseException as exc:
            guardrail = getattr(exc, "guardrail", None)  # the SDK's tool tripwires carry it
            if guardrail is not None:
                _guarded(outcome, guardrail)
            raise
        rejected = getattr(result, "is_rejection", False) if outcome == ToolOutcome.WITHHELD else result is not None
        if rejected:  # the guardrail that rejected is the last one the SDK ran
            results = kwargs.get("tool_input_guardrail_results") or kwargs.get("tool_output_guardrail_results")
            _guarded(outcome, getattr(results[-1], "guardrail", None) if isinstance(results, list) and results
                     else None)
        return result

    return wrapper


def _guarded(outcome: ToolOutcome, guardrail: Any) -> None:
    run = TOOL.get()
    if run is None:  # guardrails run before approval (pre_approval_tool_input_guardrails): no tool call yet
        return
    run.outcome = outcome.value
    try:
        run.guardrail = str(guardrail.get_name()) if guardrail is not None else None
    except Exception:
        telemetry_failed("tool guardrail name")


def tool_failure() -> Any:
    """``tool.maybe_invoke_function_tool_failure_error_function``: called when a
    tool's body raised; the tool's span records the error."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        run = TOOL.get()
        if run is not None:
            error = kwargs.get("error")
            if isinstance(error, BaseException):
                run.error = error
        return await wrapped(*args, **kwargs)

    return wrapper


_BEHAVIOUR_REASONS = {"stop_on_first_tool": "stop_on_first_tool"}


def final_output_from_tools() -> Any:
    """``turn_resolution.check_for_final_output_from_tools``: when the agent's
    tool_use_behavior makes a tool's result the final output, the reason
    (``stop_on_first_tool``, ``stop_at_tools`` or ``tool_use_behavior``) and
    the tool."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None and getattr(result, "is_final_output", False):
            try:
                state.tool_stop = _tool_stop(arg(args, kwargs, 0, "agent"), arg(args, kwargs, 1, "tool_results"))
            except Exception:
                telemetry_failed("tool stop")
        return result

    return wrapper


def _tool_stop(agent: Any, results: list[Any]) -> tuple[str, str | None]:
    behaviour = agent.tool_use_behavior
    names = [str(r.tool.name) for r in results]
    if behaviour == "stop_on_first_tool":
        return "stop_on_first_tool", names[0] if names else None
    if isinstance(behaviour, dict):
        wanted = set(behaviour.get("stop_at_tool_names", ()))
        return "stop_at_tools", next((n for n in names if n in wanted), None)
    return "tool_use_behavior", getattr(behaviour, "__name__", None)


def error_handler() -> Any:
    """``resolve_run_error_handler_result``: an app's handler that answers for a
    limit (``max_turns``) ends the run normally, yet the limit stopped it."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        result = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None and result is not None:
            state.limit = str(kwargs.get("error_kind") or "error_handler")
            error = kwargs.get("error")
            state.limit_error = error if isinstance(error, BaseException) else None
        return result

    return wrapper
