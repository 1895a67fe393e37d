"""Token ids and logprobs of model calls, read where both frameworks make them:
the openai SDK's ``chat.completions.create`` (sync and async) and its streams.

LangChain's ``ChatOpenAI`` and AutoGen's ``OpenAIChatCompletionClient`` both
drop the ids (and AutoGen's streaming keeps one chunk's logprobs), so the
capture sits below them, and ties what it reads to the framework's model-call
span: the call whose context is attached (AutoGen, ``@llm_call``), or the one
the LangGraph handler names for the request (``MODEL_CALL``). The ids and
logprobs go to the local content store only (``ContentPolicy.keep_tokens``);
the span gets their ref.

Patched only when token capture is on (``ORCH_OTEL_CAPTURE_TOKENS``,
``orch_otel.instrument(capture_tokens=True)``), and only once the app imports
the SDK's chat completions module (``integrations/_lazy.py``). See
``docs/tokens.md``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from functools import partial
from typing import Any

from ... import _env as env
from ...recorder import get_recorder
from .._lazy import LazyInstrumentor, OnImport
from .._patch import Patches
from .package import _instruments

__all__ = ["OpenAITokensInstrumentor"]

_MODULE = "openai.resources.chat.completions.completions"


class OpenAITokensInstrumentor(LazyInstrumentor):
    """Reads token ids and logprobs from the openai SDK's chat completions.

    ``instrument(request_tokens=None)``: with ``"vllm"`` or ``"sglang"``, also ask
    that server for them in each recorded call that does not already (default:
    ``ORCH_OTEL_REQUEST_TOKENS``, else off). Does nothing unless orch-otel's
    content policy has token capture on.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _parts(self, **kwargs: Any) -> Sequence[OnImport]:
        if get_recorder().content.tokens is None:
            return []  # token capture off: the SDK is not touched
        request = kwargs.get("request_tokens")
        request = env.request_tokens() if request is None else (str(request).lower() or None)
        return [OnImport(_MODULE, partial(self._patch_sdk, request=request), "the openai SDK")]

    def _patch_sdk(self, patches: Patches, request: str | None) -> None:
        from openai import AsyncStream, Stream
        from openai._legacy_response import LegacyAPIResponse
        from openai.resources.chat.completions import completions

        from ._calls import Observer, async_create_wrapper, create_wrapper

        observer = Observer((Stream, AsyncStream), LegacyAPIResponse, request)
        patches.wrap(completions.Completions, "create", create_wrapper(observer))
        patches.wrap(completions.AsyncCompletions, "create", async_create_wrapper(observer))
