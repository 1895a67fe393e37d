"""Agent runs: one ``invoke_agent`` span per run.

Hooks, outermost first (so the framework's own telemetry layers, when kept,
nest under orch-otel's spans): ``Agent.run`` (streaming and not) and
``RawAgent.run`` (a ``RawAgent`` has no layers; an ``Agent``'s run goes
through both and is recorded once); for a workflow participant of any other
class, ``AgentExecutor._run_agent`` / ``_run_agent_streaming``. At the top an
agent run is the trace root; inside a workflow run it is a participant's
turn; inside another agent's tool call (``as_tool``), or inside a run the app
records itself (``orch_otel.workflow()``, ``@workflow`` / ``@agent``), a
spawned sub-agent, whose stop is its own (``end``), as is a tool loop's limit
(forced).

A streamed run returns a ``ResponseStream``: its span is made current around
each pull (``with_pull_context_manager``, as the framework does for its own
spans) and ended by a cleanup hook, which also runs when the stream fails or
is closed (the error is then in ``_stream_error``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from ..._invocation import ERROR, OK, in_run
from ..._task import root_task_id
from ...recorder import Recorder
from ...vocabulary import StopReason, Topology
from .._calls import arg, attached
from ._messages import messages_view
from ._state import FANOUT, SYSTEM, Scope, current_scope, telemetry_failed


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


def _begin_agent(recorder: Recorder, agent: Any, messages: Any, session: Any = None) -> Scope:
    parent = current_scope()
    name = _agent_name(agent)
    common: dict[str, Any] = {"agent_id": str(getattr(agent, "id", None) or name), "role": type(agent).__name__,
              "description": getattr(agent, "description", None)}
    spawned = parent is not None and parent.workflow is None  # inside another agent's tool call
    if parent is None and in_run():  # inside the app's run (or another framework's): a sub-agent it spawned
        recorder.spawn(name)
        spawned = True
    if spawned:
        inv = recorder.agent(name, spawned=True, **common)
    elif parent is None:
        session_id = getattr(session, "session_id", None)  # the framework's conversation id
        inv = recorder.agent(name, system=SYSTEM, topology=_topology(agent), task_id=root_task_id(implicit=session_id),
                             input={"messages": messages_view(messages)} if recorder.content.capture else None,
                             **common)
    else:  # a participant's turn in a workflow run
        fan = FANOUT.get()
        inv = recorder.agent(name, fanout_index=fan[0] if fan else None, fanout_size=fan[1] if fan else None,
                             **common)
    inv.start(attach=False)
    if parent is not None and parent.workflow is not None:
        parent.turns[name] = inv
    scope = Scope(name, inv, parent)
    scope.spawned = spawned
    return scope


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
        if scope.limit and outcome == OK:  # the tool loop's budget ended the turn, not the model's choice
            inv.stop(LOOP_LIMIT, source=LOOP_LIMIT_SOURCE, forced=True)
        elif scope.spawned and outcome == OK:
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
            scope = _begin_agent(recorder, instance, arg(args, kwargs, 0, "messages"), kwargs.get("session"))
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
