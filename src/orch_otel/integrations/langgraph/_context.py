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
``langgraph._internal._runnable``, one in ``langchain_core.runnables.config``)
through the instrumentor's ``Patches``, which undoes them. If a future
version renames them, the span tree is unaffected; only this ambient nesting
is lost (and logged).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from typing import Any

from .._patch import Patches, after

_log = logging.getLogger(__name__)

_TARGETS = (
    ("langgraph._internal._runnable", "_set_config_context"),
    ("langchain_core.runnables.config", "_set_config_context"),
)


def wrap_config_context(patches: Patches, enter: Callable[[Any], None]) -> None:
    """After each ``_set_config_context(config, ...)``, ``enter(config)`` in the step's context copy."""
    entering = after(lambda instance, args, kwargs: enter(args[0] if args else kwargs["config"]),
                     "entering a LangGraph run context")
    for module_name, attr in _TARGETS:
        try:
            module = importlib.import_module(module_name)
            getattr(module, attr)
        except (ImportError, AttributeError):
            _log.info("orch-otel: %s.%s not found; spans started inside LangGraph nodes will not nest "
                      "under the node's span", module_name, attr)
            continue
        patches.wrap(module, attr, entering)
