"""Replay of a function decorated with orch-otel's decorators (``@workflow``,
``@agent``): call it again with its recorded arguments. Its ``@llm_call`` and
``@tool`` functions are the seams: while a replay runs they return the
recorded reply or result instead of running (``_decorators._served``). A
framework app the function runs is served through that framework's seams:
its instrumentation's own wrappers, or (LangGraph) the patches its adapter
installs, when the process has loaded the framework."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
from typing import Any

from .._decorators import TRACED
from ..integrations._patch import Patches


def accepts(app: Any) -> bool:
    return callable(app) and getattr(app, TRACED, False) is True


def instrumentor() -> None:
    return None  # the decorators record through the recorder: nothing to instrument


# Frameworks whose model and tool seams are patches, not their instrumentation's wrappers:
# (the module that says the framework is loaded, its replay adapter).
_PATCHED_SEAMS = (("langgraph.pregel", "orch_otel.integrations.langgraph._replay"),)


def install(patches: Patches) -> None:
    """The decorators ask the active replay themselves; a graph the function
    runs is served through LangGraph's seams (imported only when loaded)."""
    for loaded, adapter in _PATCHED_SEAMS:
        if loaded in sys.modules:
            importlib.import_module(adapter).install(patches)


async def run(app: Any, run_input: Any) -> Any:
    result = _call(app, run_input)
    return await result if inspect.isawaitable(result) else result


def run_sync(app: Any, run_input: Any) -> Any:
    result = _call(app, run_input)
    return asyncio.run(_awaited(result)) if inspect.isawaitable(result) else result


def _call(app: Any, run_input: Any) -> Any:
    if not isinstance(run_input, dict) or not ({"args", "kwargs"} >= run_input.keys()):
        raise ValueError("the recorded run input is not a decorated function's arguments ({'args', 'kwargs'})")
    return app(*run_input.get("args", ()), **run_input.get("kwargs", {}))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
