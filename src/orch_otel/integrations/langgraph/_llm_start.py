"""Keep orch-otel's inline handler from hiding ``on_llm_start`` from the app's handlers.

orch-otel's handler runs inline (``run_inline``): under asyncio it must run in
the caller's context and in callback order, because a model call can promote
its node to an agent and make that agent current in the node's private
context. But langchain-core's ``AsyncCallbackManager.on_llm_start`` (the
completion-style LLM path, not chat models) gives ``on_llm_start`` only to the
inline handlers whenever one is present (langchain-ai/langchain#39633): with
orch-otel on, ``astream_events``, ``astream_log`` and the app's own handlers
would lose every completion LLM's start.

So this wraps ``AsyncCallbackManager.on_llm_start``: the original runs on a
copy of the manager without orch-otel's handlers, so every other handler sees
exactly what it sees without orch-otel; then orch-otel's handlers get the same
start, one per prompt, inline in the caller's context, and the returned run
managers carry the manager's full handler lists, as the original makes them.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from ..._faults import log_fault
from .._patch import Patches

_log = logging.getLogger(__name__)

_MODULE = "langchain_core.callbacks.manager"
_CLASS = "AsyncCallbackManager"


def wrap_llm_start(patches: Patches, handler_type: type) -> None:
    """Wrap ``AsyncCallbackManager.on_llm_start`` for the handlers of ``handler_type`` (orch-otel's)."""
    try:
        target = getattr(importlib.import_module(_MODULE), _CLASS)
        original = target.__dict__["on_llm_start"]
    except (ImportError, AttributeError, KeyError):
        _log.info("orch-otel: %s.%s.on_llm_start not found; left as it is", _MODULE, _CLASS)
        return

    async def on_llm_start(wrapped: Any, manager: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        try:
            own = [h for h in manager.handlers if isinstance(h, handler_type)]
            if not own:
                return await wrapped(*args, **kwargs)
            without_us = manager.copy()
            without_us.handlers = [h for h in manager.handlers if not isinstance(h, handler_type)]
        except Exception:  # an unexpected manager: behave as langchain-core does
            log_fault(_log, logging.DEBUG, "orch-otel: splitting the LLM start's handlers failed")
            return await wrapped(*args, **kwargs)
        run_managers = await original(without_us, *args, **kwargs)
        try:
            _start_own(own, manager, run_managers, *args, **kwargs)
        except Exception:  # telemetry never raises into the host
            log_fault(_log, logging.DEBUG, "orch-otel: recording an LLM start failed")
        return run_managers

    patches.wrap(target, "on_llm_start", on_llm_start)


def _start_own(own: list[Any], manager: Any, run_managers: list[Any], serialized: Any, prompts: list[str],
               run_id: Any = None, **kwargs: Any) -> None:
    """Give orch-otel's handlers the start of each prompt's run, as langchain-core would."""
    for prompt, run_manager in zip(prompts, run_managers):
        run_manager.handlers = manager.handlers
        run_manager.inheritable_handlers = manager.inheritable_handlers
        for handler in own:
            if getattr(handler, "ignore_llm", False):
                continue
            handler.on_llm_start(serialized, [prompt], run_id=run_manager.run_id,
                                 parent_run_id=manager.parent_run_id, tags=manager.tags,
                                 metadata=manager.metadata, **kwargs)
