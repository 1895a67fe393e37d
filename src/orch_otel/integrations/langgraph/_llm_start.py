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

from ...faults import log_fault

_log = logging.getLogger(__name__)

_MODULE = "langchain_core.callbacks.manager"
_CLASS = "AsyncCallbackManager"


class LlmStartPatch:
    """The wrap of ``AsyncCallbackManager.on_llm_start``, with its undo."""

    def __init__(self, handler_type: type) -> None:
        self._handler_type = handler_type
        self._target: Any = None
        self._original: Any = None

    def apply(self) -> None:
        try:
            target = getattr(importlib.import_module(_MODULE), _CLASS)
            original = target.__dict__["on_llm_start"]
        except (ImportError, AttributeError, KeyError):
            _log.info("orch-otel: %s.%s.on_llm_start not found; left as it is", _MODULE, _CLASS)
            return
        if getattr(original, "__orch_otel_original__", None) is not None:
            return  # already wrapped
        target.on_llm_start = self._wrap(original)
        self._target, self._original = target, original

    def undo(self) -> None:
        target, original = self._target, self._original
        if target is not None and getattr(target.__dict__.get("on_llm_start"), "__orch_otel_original__", None) is original:
            target.on_llm_start = original
        self._target = self._original = None

    def _wrap(self, original: Any) -> Any:
        ours = self._handler_type

        async def on_llm_start(manager: Any, serialized: Any, prompts: list[str], run_id: Any = None,
                               **kwargs: Any) -> Any:
            try:
                own = [h for h in manager.handlers if isinstance(h, ours)]
                if not own:
                    return await original(manager, serialized, prompts, run_id, **kwargs)
                without_us = manager.copy()
                without_us.handlers = [h for h in manager.handlers if not isinstance(h, ours)]
            except Exception:  # an unexpected manager: behave as langchain-core does
                log_fault(_log, logging.DEBUG, "orch-otel: splitting the LLM start's handlers failed")
                return await original(manager, serialized, prompts, run_id, **kwargs)
            run_managers = await original(without_us, serialized, prompts, run_id, **kwargs)
            try:
                _start_own(own, manager, serialized, prompts, run_managers, kwargs)
            except Exception:  # telemetry never raises into the host
                log_fault(_log, logging.DEBUG, "orch-otel: recording an LLM start failed")
            return run_managers

        on_llm_start.__orch_otel_original__ = original  # type: ignore[attr-defined]
        on_llm_start.__wrapped__ = original  # type: ignore[attr-defined]
        on_llm_start.__doc__ = original.__doc__
        return on_llm_start


def _start_own(own: list[Any], manager: Any, serialized: Any, prompts: list[str], run_managers: list[Any],
               kwargs: dict[str, Any]) -> None:
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
