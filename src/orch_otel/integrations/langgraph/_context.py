"""Make a node's span current for the code that runs inside the node.

LangGraph and LangChain run each node, tool and runnable step in a *private
copy* of the context (``set_config_context``: ``copy_context()`` then
``ctx.run(_set_config_context, config)`` and the step itself in that copy, in
sync and in async). Attaching the step's span inside that copy makes spans
that user code or other instrumentations start in the step nest under it,
with nothing to detach: the copy is dropped when the step ends. Attaching in
callbacks instead cannot work under asyncio (end callbacks are shielded in
another context, so detach fails and the span leaks into the caller); see
``docs/langgraph.md``.

This wraps the two private ``_set_config_context`` functions (one in
``langgraph._internal._runnable``, one in ``langchain_core.runnables.config``);
each wrap has its matching unwrap. If a future version renames them, the
span tree is unaffected; only this ambient nesting is lost (and logged).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from ...faults import log_fault

_log = logging.getLogger(__name__)

_TARGETS = (
    ("langgraph._internal._runnable", "_set_config_context"),
    ("langchain_core.runnables.config", "_set_config_context"),
)


class ContextPatch:
    """The wraps of the ``_set_config_context`` functions, with their undo."""

    def __init__(self, enter: Callable[[Any], None]) -> None:
        self._enter = enter
        self._originals: list[tuple[Any, str, Any]] = []

    def apply(self) -> None:
        for module_name, attr in _TARGETS:
            try:
                module = importlib.import_module(module_name)
                original = getattr(module, attr)
            except (ImportError, AttributeError):
                _log.info("orch-otel: %s.%s not found; spans started inside LangGraph nodes will not nest "
                          "under the node's span", module_name, attr)
                continue
            if getattr(original, "__orch_otel_original__", None) is not None:
                continue  # already wrapped
            setattr(module, attr, self._wrap(original))
            self._originals.append((module, attr, original))

    def undo(self) -> None:
        for module, attr, original in reversed(self._originals):
            current = getattr(module, attr, None)
            if getattr(current, "__orch_otel_original__", None) is original:
                setattr(module, attr, original)
        self._originals.clear()

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        enter = self._enter
        return call_then(original, lambda config, *args, **kwargs: enter(config), "entering a LangGraph run context")


def call_then(original: Callable[..., Any], hook: Callable[..., Any], what: str) -> Callable[..., Any]:
    """A stand-in for ``original`` that calls it, then ``hook`` with the same
    arguments; a failing hook is logged (without content) and never reaches
    the host. The stand-in names its original, so a second wrap is seen and
    an undo can check it still holds its own."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        try:
            hook(*args, **kwargs)
        except Exception:  # telemetry never raises into the host
            log_fault(_log, logging.DEBUG, "orch-otel: %s failed", what)
        return result

    wrapper.__orch_otel_original__ = original  # type: ignore[attr-defined]
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__doc__ = original.__doc__
    wrapper.__name__ = getattr(original, "__name__", "wrapper")
    return wrapper
