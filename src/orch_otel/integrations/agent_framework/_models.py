"""Model calls: ``BaseChatClient.get_response`` (the tool loop calls it once
per model turn), one ``chat {model}`` span each, with usage and the response
model; a streamed call's span is current around each pull and ended by the
stream's cleanup. While a replay is active the recorded reply is served here,
in the framework's own types, inside the span (``_served.py``)."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from opentelemetry import context as otel_context

from ..._invocation import CANCELLED
from ..._serving import served_model
from ...recorder import Recorder
from .._calls import arg, attached
from ._messages import messages_view, response_view, tool_definitions
from ._served import chat_response, chat_stream
from ._state import LLM_KEY, current_scope, telemetry_failed


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


