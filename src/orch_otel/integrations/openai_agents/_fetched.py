"""Where the SDK's OpenAI models fetch a response from the provider.

The model that answered, as the provider names it (``gpt-4o`` asked,
``gpt-4o-2024-08-06`` answered): the SDK's ``ModelResponse`` drops it, the
raw response (``_fetch_response``: a Responses API ``Response`` or a
``ChatCompletion``) has it, and a Responses API stream names it on its
completed event (read as the event passes, every event handed on as it is).
It goes on the call's span as ``gen_ai.response.model``. A Chat Completions
stream is left out: it names the model on its chunks only, and the
completed event the SDK builds from them repeats the requested name.

And the call whose request this is, for token capture below the frameworks
(``integrations/openai_sdk``) to keep the request's token ids with it."""

from __future__ import annotations

from typing import Any

from ..._invocation import MODEL_CALL
from ._state import RUN, telemetry_failed


def fetched(response_types: tuple[type, ...]) -> Any:
    """``_fetch_response`` of the SDK's OpenAI models. The call is also named
    as the one the openai SDK's request serves (``MODEL_CALL``), so token
    capture below the frameworks (``integrations/openai_sdk``) keeps the
    request's token ids with it."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        state = RUN.get()
        call = state.llm if state is not None else None
        if call is None:
            return await wrapped(*args, **kwargs)
        token = MODEL_CALL.set(call)
        try:
            response = await wrapped(*args, **kwargs)
        finally:
            MODEL_CALL.reset(token)
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
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()

    return wrapper


def _answered_by(model: Any) -> None:
    state = RUN.get()
    if state is None or state.llm is None or not isinstance(model, str) or not model:
        return
    try:
        state.llm.set_response(response_model=model)
    except Exception:
        telemetry_failed("response model")
