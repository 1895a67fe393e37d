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
from collections.abc import Collection
from contextvars import ContextVar
from typing import Any

from opentelemetry.instrumentation.instrumentor import BaseInstrumentor  # type: ignore[attr-defined]

from ...recorder import HANDOFF, INTERRUPTED, OK, Recorder, get_recorder
from .._lazy import WhenImported
from .package import _instruments

__all__ = ["LangGraphInstrumentor"]

_log = logging.getLogger(__name__)


class LangGraphInstrumentor(BaseInstrumentor):
    """Records LangGraph orchestration as orch-otel spans.

    ``instrument(tracer_provider=...)`` uses that provider (default: the
    recorder set by ``orch_otel.instrument()``, else the global provider).
    LangGraph is patched when ``langgraph.pregel`` (which every graph, prebuilt
    agent and ``@entrypoint`` uses) is first imported, or at once if it is;
    ``instrument()`` itself imports no framework.
    """

    _handler: Any = None
    _hook_var: ContextVar[Any] | None = None
    _patch: Any = None
    _graph_patch: Any = None
    _llm_start_patch: Any = None
    _control_flow: tuple[type[BaseException], ...] = ()
    _pending: WhenImported | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        # langgraph is a namespace package (no module body to hook); langgraph.pregel is the first real one.
        self._pending = WhenImported("langgraph.pregel", lambda: self._patch_langgraph(**kwargs), "LangGraph")
        self._pending.start()

    def _patch_langgraph(self, **kwargs: Any) -> None:
        from langchain_core.tracers.context import register_configure_hook
        from langgraph.errors import GraphBubbleUp, GraphInterrupt, ParentCommand

        from ._context import ContextPatch
        from ._graphs import GraphPatch
        from ._handler import OrchestrationHandler
        from ._llm_start import LlmStartPatch

        provider = kwargs.get("tracer_provider")
        recorder = None
        if provider is not None:
            recorder = Recorder(tracer_provider=provider, content=get_recorder().content)
        handler = OrchestrationHandler(recorder)
        # A ContextVar whose *default* is the handler is seen by every thread and
        # every context: the hook adds the handler to each callback manager that
        # LangChain configures (graph, node, tool, model), deduplicated by identity.
        # Each piece is kept as soon as it is in place: uninstrument() undoes a part-way failure too.
        self._handler = handler
        self._hook_var = ContextVar("orch_otel_langgraph_handler", default=handler)
        register_configure_hook(self._hook_var, inheritable=True)
        self._patch = ContextPatch(handler.enter_run_context)
        self._patch.apply()
        self._graph_patch = GraphPatch(handler.note_graph)
        self._graph_patch.apply()
        self._llm_start_patch = LlmStartPatch(OrchestrationHandler)
        self._llm_start_patch.apply()
        control_flow = [(ParentCommand, HANDOFF), (GraphInterrupt, INTERRUPTED), (GraphBubbleUp, OK)]
        self._control_flow = tuple(exc for exc, _ in control_flow)
        for recorder_ in {id(r): r for r in (get_recorder(), recorder) if r is not None}.values():
            for exc_type, outcome in control_flow:
                recorder_.register_control_flow(exc_type, outcome)

    def _uninstrument(self, **kwargs: Any) -> None:
        pending, self._pending = self._pending, None
        if pending is not None and not pending.cancel():
            return  # LangGraph was never patched (and must not be imported now)
        from langchain_core.tracers import context as lc_context

        handler, hook_var, patch = self._handler, self._hook_var, self._patch
        if handler is not None:
            handler.enabled = False  # in-flight runs stop recording even if the hook stays
        if hook_var is not None:
            hooks = getattr(lc_context, "_configure_hooks", None)
            if isinstance(hooks, list):
                hooks[:] = [hook for hook in hooks if hook[0] is not hook_var]
            else:
                _log.warning("orch-otel: cannot remove the LangGraph callback hook; the handler is disabled instead")
        if patch is not None:
            patch.undo()
        if self._graph_patch is not None:
            self._graph_patch.undo()
        if self._llm_start_patch is not None:
            self._llm_start_patch.undo()
        recorder = get_recorder()
        for exc_type in self._control_flow:
            recorder.unregister_control_flow(exc_type)
        self._handler = self._hook_var = self._patch = self._graph_patch = self._llm_start_patch = None
        self._control_flow = ()
