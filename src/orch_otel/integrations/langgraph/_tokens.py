"""Tie a chat model's request to its ``chat`` span for token capture.

The handler starts a model call's span without attaching its context, so
the openai SDK's request (where token ids are read) needs another way to
find it: the handler sets ``MODEL_CALL`` when the call starts, in the
caller's context, which covers ``invoke``, ``stream`` and their async forms.
One case shares a context between calls: ``generate([a, b])`` starts every
call first, then makes them one by one (``agenerate`` gathers them). So
``BaseChatModel._generate_with_cache`` / ``_agenerate_with_cache`` are wrapped
too, to name, around each request, the call of its own LangChain run id.
Installed only with token capture on.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from ..._faults import log_fault
from ..._invocation import MODEL_CALL
from .._patch import Patches

_log = logging.getLogger(__name__)

_MODULE = "langchain_core.language_models.chat_models"


def wrap_model_requests(patches: Patches, handler: Any) -> None:
    """Wrap the chat model's per-request methods so each names its own call."""
    try:
        target = importlib.import_module(_MODULE).BaseChatModel
    except (ImportError, AttributeError):
        _log.info("orch-otel: %s.BaseChatModel not found; batched model calls are not told apart", _MODULE)
        return

    def call_of(kwargs: dict[str, Any]) -> Any:
        try:
            run_manager = kwargs.get("run_manager")
            run = handler._runs.get(run_manager.run_id) if run_manager is not None else None
            return run.inv if run is not None else None
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: finding a model request's call failed")
            return None

    def sync(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = call_of(kwargs)
        if call is None:
            return wrapped(*args, **kwargs)
        token = MODEL_CALL.set(call)
        try:
            return wrapped(*args, **kwargs)
        finally:
            MODEL_CALL.reset(token)

    async def asynchronous(wrapped: Any, instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = call_of(kwargs)
        if call is None:
            return await wrapped(*args, **kwargs)
        token = MODEL_CALL.set(call)
        try:
            return await wrapped(*args, **kwargs)
        finally:
            MODEL_CALL.reset(token)

    patches.wrap(target, "_generate_with_cache", sync)
    patches.wrap(target, "_agenerate_with_cache", asynchronous)
