"""The model that answered a call, as the provider names it (``gpt-4o`` asked,
``gpt-4o-2024-08-06`` answered): the SDK's ``ModelResponse`` drops it, the
raw response its OpenAI models fetch (``_fetch_response``: a Responses API
``Response`` or a ``ChatCompletion``) has it. Read there and set on the
call's span as ``gen_ai.response.model``; the response goes on unchanged.

A Responses API stream names it on its completed event, read as the event
passes (``stream_response``, every event handed on as it is). A Chat
Completions stream is left out: it names the model on its chunks only, and
the completed event the SDK builds from them repeats the requested name."""

from __future__ import annotations

from typing import Any

from ._state import RUN, telemetry_failed


def fetched(response_types: tuple[type, ...]) -> Any:
    """``_fetch_response`` of the SDK's OpenAI models."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        response = await wrapped(*args, **kwargs)
        if isinstance(response, response_types):
            _answered_by(getattr(response, "model", None))
        return response

    return wrapper


def streamed() -> Any:
    """``stream_response`` of the SDK's Responses API models."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        events = wrapped(*args, **kwargs)
        try:
            async for event in events:
                if getattr(event, "type", None) == "response.completed":
                    _answered_by(getattr(getattr(event, "response", None), "model", None))
                yield event
        finally:  # closed early (the consumer stopped): close the model's own stream as the SDK would
            await events.aclose()

    return wrapper


def _answered_by(model: Any) -> None:
    state = RUN.get()
    if state is None or state.llm is None or not isinstance(model, str) or not model:
        return
    try:
        state.llm.set_response(response_model=model)
    except Exception:
        telemetry_failed("response model")
