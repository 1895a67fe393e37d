"""The agent's side: tool executions, handoffs and SocietyOfMind summaries.

Hooks: ``BaseTool.run_json`` / ``BaseStreamTool.run_json_stream`` (awaited on
the event loop even for sync tools, which then run in a thread without
context: the span is made here, not in the tool body),
``AssistantAgent._check_and_handle_handoff`` (the ``HandoffMessage``) and
``SocietyOfMindAgent.on_messages_stream`` (the summary of the inner team).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry import trace

from ..._serving import served_tool
from ...recorder import Recorder
from .._calls import arg
from ._state import recording, telemetry_failed
from ._workbenches import called_as, inside_workbench_call


def _tool_invocation(recorder: Recorder, tool: Any, args: Any, kwargs: Any, handoff_type: type[Any]):
    call_id = arg(args, kwargs, 2, "call_id")
    return recorder.tool(
        called_as(call_id) or tool.name, call_id=call_id, arguments=arg(args, kwargs, 0, "args"),
        transfer_to=handoff_target(tool, handoff_type),  # a Swarm handoff: control passes to the target
    ).start(attach=True)


def handoff_target(tool: Any, handoff_type: type[Any]) -> str | None:
    """The target agent of a tool AutoGen made from a ``Handoff``
    (``Handoff.handoff_tool``): its function holds the framework's own
    ``Handoff``. None for every other tool, whatever its name."""
    for cell in getattr(getattr(tool, "_func", None), "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, handoff_type):
            return str(value.target)
    return None


def run_json(recorder: Recorder, handoff_type: type[Any]) -> Callable[..., Any]:
    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not recording() or inside_workbench_call():  # outside a run, or the workbench call's own tool
            return await wrapped(*args, **kwargs)
        try:
            inv = _tool_invocation(recorder, instance, args, kwargs, handoff_type)
        except Exception:
            telemetry_failed("tool start")
            return await wrapped(*args, **kwargs)
        with inv:  # fails it on an exception (re-raised untouched), else ends it
            served = served_tool(inv.span)  # outside a replay: one context-variable read
            result = await wrapped(*args, **kwargs) if served is None else served.output
            inv.set_result(result)
        return result

    return wrapper


def run_json_stream(recorder: Recorder) -> Callable[..., Any]:
    async def traced(agen: Any, inv: Any) -> AsyncIterator[Any]:
        last = None
        try:
            while True:
                with trace.use_span(inv.span, end_on_exit=False, record_exception=False, set_status_on_exception=False):
                    try:
                        item = await agen.__anext__()
                    except StopAsyncIteration:
                        break
                last = item
                yield item
        except BaseException as exc:
            inv.fail(exc)
            await agen.aclose()
            raise
        inv.set_result(last)
        inv.end()

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        if not recording() or inside_workbench_call():
            return wrapped(*args, **kwargs)
        inv = recorder.tool(instance.name, call_id=arg(args, kwargs, 2, "call_id"),
                            arguments=arg(args, kwargs, 0, "args")).start(attach=False)
        return traced(wrapped(*args, **kwargs), inv)

    return wrapper


def handoff(recorder: Recorder, handoff_type: type[Any]) -> Callable[..., Any]:
    """A ``HandoffMessage`` from an agent's turn is that agent's delegation to
    the target (the team's manager then records the message and its own choice)."""

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        response = wrapped(*args, **kwargs)
        try:
            chat = getattr(response, "chat_message", None)
            if isinstance(chat, handoff_type) and recording():
                handoffs = arg(args, kwargs, 3, "handoffs") or {}
                options = [getattr(h, "target", name) for name, h in handoffs.items()]
                recorder.delegate(chat.target, options=options, content=chat.content)
        except Exception:
            telemetry_failed("handoff")
        return response

    return wrapper


def society_of_mind(recorder: Recorder, response_type: type[Any]) -> Callable[..., Any]:
    """The final ``Response`` of a ``SocietyOfMindAgent`` aggregates its inner team's result."""

    async def traced(agen: Any, agent: Any) -> AsyncIterator[Any]:
        try:
            async for item in agen:
                if isinstance(item, response_type) and recording():
                    try:
                        team = getattr(agent, "_team", None)
                        sources = [team.name] if team is not None else None
                        recorder.aggregate(getattr(item.chat_message, "content", None), sources=sources)
                    except Exception:
                        telemetry_failed("society of mind summary")
                yield item
        finally:
            await agen.aclose()

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return traced(wrapped(*args, **kwargs), instance)

    return wrapper
