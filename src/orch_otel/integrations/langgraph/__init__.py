"""OpenTelemetry instrumentation of LangGraph's orchestration.

``LangGraphInstrumentor().instrument()`` (or ``orch_otel.instrument()``, or
``opentelemetry-instrument`` with no code at all) records every LangGraph run
as one trace: the run as an ``invoke_workflow`` span; agents (subgraphs,
prebuilt agents, ``Send`` targets, nodes that call a model) as
``invoke_agent`` spans; tools as ``execute_tool`` and model calls as
``chat`` spans; spawns, delegations (routers, ``Command`` goto, handoff
tools), fan-in aggregation, handoff messages, human resumes and the stop
reason as span events. ``docs/langgraph.md`` lists the rules and the spans
per run of the example apps.

How: a LangChain callback handler injected into every callback manager with
``langchain_core.tracers.context.register_configure_hook`` (no callback
manager is patched but one: see below), plus a wrap of LangGraph's per-step context copy so
spans started inside a node nest under it (``_context.py``), and a wrap of
``Pregel._defaults`` that tells the handler which compiled graph a run is, so
routing decisions resolve path maps and know their options (``_graphs.py``),
and a wrap of ``AsyncCallbackManager.on_llm_start`` so the inline handler does
not hide completion LLMs' starts from the app's other handlers (``_llm_start.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any

from ..._invocation import HANDOFF, INTERRUPTED, OK
from ...recorder import get_recorder
from .._lazy import LazyInstrumentor, OnImport
from .._patch import Patches, recorder_for
from .package import _instruments

__all__ = ["LangGraphInstrumentor"]

_log = logging.getLogger(__name__)


class LangGraphInstrumentor(LazyInstrumentor):
    """Records LangGraph orchestration as orch-otel spans.

    ``instrument(tracer_provider=...)`` uses that provider (default: the
    recorder set by ``orch_otel.instrument()``, else the global provider).
    LangGraph is patched when ``langgraph.pregel`` (which every graph, prebuilt
    agent and ``@entrypoint`` uses) is first imported, or at once if it is;
    ``instrument()`` itself imports no framework.
    """

    _handler: Any = None
    _hook_var: ContextVar[Any] | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _parts(self, **kwargs: Any) -> Sequence[OnImport]:
        # langgraph is a namespace package (no module body to hook); langgraph.pregel is the first real one.
        return [OnImport("langgraph.pregel", partial(self._patch_langgraph, **kwargs), "LangGraph")]

    def _patch_langgraph(self, patches: Patches, **kwargs: Any) -> None:
        from langchain_core.tracers import context as lc_context
        from langgraph.errors import GraphBubbleUp, GraphInterrupt, ParentCommand

        from ._context import wrap_config_context
        from ._graphs import wrap_defaults
        from ._handler import OrchestrationHandler
        from ._llm_start import wrap_llm_start
        from ._tokens import wrap_model_requests

        provider = kwargs.get("tracer_provider")
        recorder = None if provider is None else recorder_for(provider)  # None: whichever is orch-otel's then
        handler = self._handler = OrchestrationHandler(recorder)
        patches.record(self._drop_handler)  # undone last: in-flight runs stop recording even if the hook stays
        # Each piece is recorded the moment it is in place, so a part-way failure is undone exactly.
        # A ContextVar whose *default* is the handler is seen by every thread and
        # every context: the hook adds the handler to each callback manager that
        # LangChain configures (graph, node, tool, model), deduplicated by identity.
        hook_var = self._hook_var = ContextVar("orch_otel_langgraph_handler", default=handler)
        lc_context.register_configure_hook(hook_var, inheritable=True)
        patches.record(lambda: _remove_configure_hook(lc_context, hook_var))
        wrap_config_context(patches, handler.enter_run_context)
        wrap_defaults(patches, handler.note_graph)
        wrap_llm_start(patches, OrchestrationHandler)
        if (recorder or get_recorder()).content.tokens is not None:
            wrap_model_requests(patches, handler)
        control_flow = [(ParentCommand, HANDOFF), (GraphInterrupt, INTERRUPTED), (GraphBubbleUp, OK)]
        for recorder_ in {id(r): r for r in (get_recorder(), recorder) if r is not None}.values():
            for exc_type, outcome in control_flow:
                recorder_.register_control_flow(exc_type, outcome)
                patches.record(partial(recorder_.unregister_control_flow, exc_type))

    def _drop_handler(self) -> None:
        if self._handler is not None:
            self._handler.enabled = False
        self._handler = self._hook_var = None


def _remove_configure_hook(lc_context: Any, hook_var: ContextVar[Any]) -> None:
    hooks = getattr(lc_context, "_configure_hooks", None)
    if isinstance(hooks, list):
        hooks[:] = [hook for hook in hooks if hook[0] is not hook_var]
    else:
        _log.warning("orch-otel: cannot remove the LangGraph callback hook; the handler is disabled instead")
