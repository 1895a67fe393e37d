"""What an OpenAI-compatible server said about a call that autogen-ext's
``OpenAIChatCompletionClient`` (or ``AzureOpenAIChatCompletionClient``) drops
from its ``CreateResult``: the model id it answered with (``gpt-4o-2024-08-06``
for ``gpt-4o``) and whether it reported token usage (a stream reports none
unless ``include_usage`` asks, and the client then says 0 and 0).

Read where the client gets them, while the chat span's call is current
(``_state.ModelCall``): the openai SDK's ``AsyncCompletions.create`` /
``parse`` result (a whole reply), and the chunks of the client's
``_create_stream_chunks`` / ``_create_stream_chunks_beta_client`` (a stream).
Patched the first time such a client class is seen; the openai SDK's method
passes every call made outside an orch-otel chat span straight through.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from .._patch import Patches
from ._state import model_call, telemetry_failed

_CLIENT_MODULE = "autogen_ext.models.openai._openai_client"
_STREAMS = ("_create_stream_chunks", "_create_stream_chunks_beta_client")


def _note_model(call: Any, item: Any) -> None:
    model = getattr(item, "model", None)
    if isinstance(model, str) and model:
        call.response_model = model


def sdk_create(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """``AsyncCompletions.create`` / ``parse``: a whole reply carries its model and usage."""
    current = model_call()
    if current is None or kwargs.get("stream"):  # not inside an orch-otel chat span, or a stream: untouched
        return wrapped(*args, **kwargs)

    async def call() -> Any:
        result = await wrapped(*args, **kwargs)
        try:
            _note_model(current, result)
            current.usage_reported = getattr(result, "usage", None) is not None
        except Exception:
            telemetry_failed("openai reply")
        return result

    return call()


def stream_chunks(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    """The client's chunk stream: each chunk names the model; usage comes in one
    chunk, or not at all."""

    async def traced(agen: Any) -> AsyncIterator[Any]:
        call = model_call()
        if call is not None:
            call.usage_reported = False  # until a chunk reports it
        try:
            async for chunk in agen:
                if call is not None:
                    try:
                        _note_model(call, chunk)
                        if getattr(chunk, "usage", None) is not None:
                            call.usage_reported = True
                    except Exception:
                        telemetry_failed("openai chunk")
                yield chunk
        finally:
            await agen.aclose()

    return traced(wrapped(*args, **kwargs))


def patcher(patches: Patches) -> Callable[[type], None]:
    """What to patch once an autogen-ext OpenAI client class is patched."""

    def on_patch(owner: type) -> None:
        if owner.__module__ != _CLIENT_MODULE:
            return
        try:
            for method in _STREAMS:
                if method in vars(owner) and not patches.is_wrapped(owner, method):
                    patches.wrap(owner, method, stream_chunks)
            completions = importlib.import_module("openai.resources.chat.completions").AsyncCompletions
            for method in ("create", "parse"):
                if method in vars(completions) and not patches.is_wrapped(completions, method):
                    patches.wrap(completions, method, sdk_create)
        except Exception:
            telemetry_failed("openai client patch")

    return on_patch
