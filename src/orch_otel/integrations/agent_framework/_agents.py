"""The agent's side: agent runs, model calls and tool calls.

Hooks, outermost first (so the framework's own telemetry layers, when kept,
nest under orch-otel's spans):

- ``Agent.run`` (streaming and not): one ``invoke_agent`` span per run. At
  the top it is the trace root; inside a workflow run it is a participant's
  turn; inside another agent's tool call (``as_tool``) a spawned sub-agent,
  whose stop is its own (``end``).
- ``BaseChatClient.get_response``: one ``chat`` span per model call (the tool
  loop calls it once per model turn), with usage and the response model.
- ``agent_framework._tools._execute_single_function_call`` (looked up as a
  module global at call time): one ``execute_tool`` span per tool call the
  model made, with its call id; it sees the handoff tools that function
  middleware short-circuits before the tool itself (and the framework's own
  span) would run. Parallel calls run concurrently, each in its own span.

A streamed run or model call returns a ``ResponseStream``: its span is made
current around each pull (``with_pull_context_manager``, as the framework
does for its own spans) and ended by a cleanup hook, which also runs when the
stream fails or is closed (the error is then in ``_stream_error``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context

from ..._invocation import CANCELLED, ERROR, OK
from ..._serving import served_model, served_tool
from ...recorder import Recorder
from ...vocabulary import StopReason, Topology
from .._calls import arg, attached
from ._messages import messages_view, response_view, tool_definitions
from ._served import chat_response, chat_stream, tool_result
from ._state import FANOUT, LLM_KEY, SYSTEM, Scope, current_scope, telemetry_failed


def _agent_name(agent: Any) -> str:
    return str(getattr(agent, "name", None) or getattr(agent, "id", None) or type(agent).__name__)


def _agent_tools(agent: Any) -> list[Any]:
    options = getattr(agent, "default_options", None)
    tools = options.get("tools") if isinstance(options, dict) else None
    return list(tools or ())


def _topology(agent: Any) -> str:
    """An agent with agents as tools delegates work to them; alone in its tool loop it is a harness."""
    if any(getattr(tool, "_wrapped_agent", None) is not None for tool in _agent_tools(agent)):
        return Topology.CENTRALIZED.value
    return Topology.HARNESS.value


def _begin_agent(recorder: Recorder, agent: Any, messages: Any) -> Scope:
    parent = current_scope()
    name = _agent_name(agent)
    common: dict[str, Any] = {"agent_id": str(getattr(agent, "id", None) or name), "role": type(agent).__name__,
              "description": getattr(agent, "description", None)}
    if parent is None:
        inv = recorder.agent(name, system=SYSTEM, topology=_topology(agent),
                             input={"messages": messages_view(messages)} if recorder.content.capture else None,
                             **common)
    elif parent.workflow is not None:  # a participant's turn in a workflow run
        fan = FANOUT.get()
        inv = recorder.agent(name, fanout_index=fan[0] if fan else None, fanout_size=fan[1] if fan else None,
                             **common)
    else:  # inside another agent's tool call: a spawned sub-agent
        inv = recorder.agent(name, spawned=True, **common)
    inv.start(attach=False)
    if parent is not None and parent.workflow is not None:
        parent.turns[name] = inv
    return Scope(name, inv, parent)


LOOP_LIMIT = "function invocation limit"  # the framework's own name for it (its FunctionInvocationLimit)
LOOP_LIMIT_SOURCE = "FunctionInvocationConfiguration"


def finish(recorder: Recorder, scope: Scope, error: BaseException | None) -> None:
    """End an agent invocation: a nested agent's own stop, then its span."""
    if scope.ended:
        return
    scope.ended = True
    try:
        inv = scope.invocation
        outcome = OK if error is None else recorder.classify(error)
        nested = scope.parent is not None and scope.parent.workflow is None
        if scope.limit and outcome == OK:  # the tool loop's budget ended the turn, not the model's choice
            inv.stop(LOOP_LIMIT, source=LOOP_LIMIT_SOURCE, forced=True)
        elif nested and outcome == OK:
            inv.stop(StopReason.END.value)
        if outcome == ERROR:
            inv.fail(error)  # type: ignore[arg-type]
        else:
            inv.end(outcome=outcome)
    except Exception:
        telemetry_failed("agent end")


def _traced_stream(recorder: Recorder, stream: Any, scope: Scope, end: Callable[[Scope, BaseException | None], None]):
    """Keep ``scope`` current around each pull of a ``ResponseStream``; end it in its cleanup."""

    def cleanup() -> None:
        end(scope, getattr(stream, "_stream_error", None))

    stream.with_pull_context_manager(lambda: attached(scope.ctx)).with_cleanup_hook(cleanup)
    weakref.finalize(stream, end, scope, asyncio.CancelledError())  # dropped unconsumed
    return stream


def agent_run(recorder: Recorder, recorded_above: type | None = None) -> Callable[..., Any]:
    """``Agent.run(messages, *, stream=False, ...)`` (and ``RawAgent.run``, where
    ``recorded_above`` = ``Agent``: an ``Agent``'s run goes through both, and is
    recorded once, above the framework's layers)."""

    def end(scope: Scope, error: BaseException | None) -> None:
        finish(recorder, scope, error)

    async def awaited(result: Any, scope: Scope) -> Any:
        try:
            with attached(scope.ctx):
                response = await result
        except BaseException as exc:
            end(scope, exc)
            raise
        end(scope, None)
        return response

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if recorded_above is not None and isinstance(instance, recorded_above):
            return wrapped(*args, **kwargs)
        try:
            scope = _begin_agent(recorder, instance, arg(args, kwargs, 0, "messages"))
        except Exception:
            telemetry_failed("agent run start")
            return wrapped(*args, **kwargs)
        try:
            with attached(scope.ctx):  # the framework builds its stream (and its span) here
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            end(scope, exc)
            raise
        if kwargs.get("stream"):
            try:
                return _traced_stream(recorder, result, scope, end)
            except Exception:
                telemetry_failed("agent stream")
                end(scope, None)
                return result
        return awaited(result, scope)

    return wrapper


def executor_turn(recorder: Recorder, recorded: type) -> Callable[..., Any]:
    """``AgentExecutor._run_agent`` / ``_run_agent_streaming(ctx, *, messages=None)``:
    the turn of a workflow participant whose agent is not a ``recorded`` one
    (any ``SupportsAgentRun``: a custom ``BaseAgent``, a ``WorkflowAgent``)."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        agent = getattr(instance, "_agent", None)
        if agent is None or isinstance(agent, recorded) or current_scope() is None:
            return await wrapped(*args, **kwargs)
        try:
            scope = _begin_agent(recorder, agent, None)
        except Exception:
            telemetry_failed("agent turn start")
            return await wrapped(*args, **kwargs)
        try:
            with attached(scope.ctx):
                response = await wrapped(*args, **kwargs)
        except BaseException as exc:
            finish(recorder, scope, exc)
            raise
        finish(recorder, scope, None)
        return response

    return wrapper


# -- model calls ---------------------------------------------------------------------------------


def _model(client: Any, kwargs: dict[str, Any]) -> str:
    options = kwargs.get("options") or {}
    client_kwargs = kwargs.get("client_kwargs") or {}
    model = (client_kwargs.get("model") if isinstance(client_kwargs, dict) else None) or \
        (options.get("model") if isinstance(options, dict) else None) or getattr(client, "model", None)
    return str(model or type(client).__name__)


def _provider(client: Any) -> str | None:
    name = getattr(client, "otel_provider_name", None) or getattr(type(client), "OTEL_PROVIDER_NAME", None)
    return None if not name or name == "unknown" else str(name)


def _respond(recorder: Recorder, inv: Any, response: Any) -> None:
    try:
        usage = getattr(response, "usage_details", None) or {}
        inv.set_response(
            response_view(response) if recorder.content.capture else None,
            input_tokens=usage.get("input_token_count"),
            output_tokens=usage.get("output_token_count"),
            response_model=getattr(response, "model", None),
        )
    except Exception:
        telemetry_failed("model response")


def chat_call(recorder: Recorder, response_type: Any) -> Callable[..., Any]:
    """``BaseChatClient.get_response(messages, *, stream=False, options=...)``."""

    def start(client: Any, args: Any, kwargs: Any) -> tuple[Any, otel_context.Context] | None:
        scope = current_scope()
        if scope is None or otel_context.get_value(LLM_KEY) is not None:
            return None  # outside a run, or a client wrapped in another one
        messages = tools = None
        if recorder.content.capture:
            messages = messages_view(arg(args, kwargs, 0, "messages"))
            options = kwargs.get("options") or {}
            tools = tool_definitions(options.get("tools") if isinstance(options, dict) else None)
        inv = recorder.llm(_model(client, kwargs), provider=_provider(client), input_messages=messages, tools=tools)
        inv.start(attach=False)
        return inv, otel_context.set_value(LLM_KEY, True, inv.context)

    async def awaited(result: Any, inv: Any, ctx: otel_context.Context) -> Any:
        try:
            with attached(ctx):
                response = await result
        except BaseException as exc:
            inv.fail(exc)
            raise
        _respond(recorder, inv, response)
        inv.end()
        return response

    def traced_stream(stream: Any, inv: Any, ctx: otel_context.Context) -> Any:
        def cleanup() -> None:
            error = getattr(stream, "_stream_error", None)
            if error is not None:
                inv.fail(error)
                return
            try:
                _respond(recorder, inv, response_type.from_updates(list(stream.updates)))
            except Exception:
                telemetry_failed("model stream response")
            inv.end()

        stream.with_pull_context_manager(lambda: attached(ctx)).with_cleanup_hook(cleanup)
        weakref.finalize(stream, inv.end, outcome=CANCELLED)
        return stream

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        try:
            started = start(instance, args, kwargs)
        except Exception:
            telemetry_failed("model call start")
            started = None
        if started is None:
            return wrapped(*args, **kwargs)
        inv, ctx = started
        try:
            served = served_model(inv.span)  # outside a replay: one context-variable read
            if served is not None:  # the recorded reply, in the framework's own types
                result = chat_stream(served) if kwargs.get("stream") else _ready(chat_response(served))
            else:
                with attached(ctx):
                    result = wrapped(*args, **kwargs)
        except BaseException as exc:  # a replay that cannot answer fails the call as the model would
            inv.fail(exc)
            raise
        if kwargs.get("stream"):
            try:
                return traced_stream(result, inv, ctx)
            except Exception:
                telemetry_failed("model stream")
                inv.end()
                return result
        return awaited(result, inv, ctx)

    return wrapper


async def _ready(value: Any) -> Any:
    return value


# -- tool calls ------------------------------------------------------------------------------------


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
