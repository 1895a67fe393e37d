"""The model that answered a call, as the provider names it (``gpt-4o`` asked,
``gpt-4o-2024-08-06`` answered): the SDK's ``ModelResponse`` drops it, the
raw response its OpenAI models fetch (``_fetch_response``: a Responses API
``Response`` or a ``ChatCompletion``) has it. Read there and set on the
call's span as ``gen_ai.response.model``; the response goes on unchanged.

Streamed calls are left out: a Chat Completions stream names the model on
its chunks only (the SDK's completed event repeats the requested name)."""

from __future__ import annotations

from typing import Any

from ._state import RUN, telemetry_failed


def fetched(response_types: tuple[type, ...]) -> Any:
    """``_fetch_response`` of the SDK's OpenAI models."""

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        response = await wrapped(*args, **kwargs)
        state = RUN.get()
        if state is not None and state.llm is not None and isinstance(response, response_types):
            try:
                model = getattr(response, "model", None)
                if isinstance(model, str) and model:
                    state.llm.set_response(response_model=model)
            except Exception:
                telemetry_failed("response model")
        return response

    return wrapper
