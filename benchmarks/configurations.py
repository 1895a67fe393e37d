"""Each capture configuration's setup inside its worker process: the
instrumentation it installs, how it flushes, and what one batch recorded
(spans, traces, trace bytes), counted the same way in every configuration.
:class:`Config` ``_setup_NAME`` methods follow the names in
:mod:`benchmarks.suites`.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from .agents_tracing import sdk_tracing
from .variants import apply_variant


class SpanCounter:
    """A span processor counting finished spans and distinct traces (same tiny cost in every config)."""

    def __init__(self) -> None:
        self.spans = 0
        self.traces: set[int] = set()
        self._lock = threading.Lock()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        with self._lock:
            self.spans += 1
            self.traces.add(span.context.trace_id)

    def _on_ending(self, span: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def take(self) -> tuple[int, int]:
        with self._lock:
            spans, traces = self.spans, len(self.traces)
            self.spans, self.traces = 0, set()
        return spans, traces


def attribute_bytes(spans: Any) -> int:
    """Serialized size of the spans' attributes and events (JSON), the peers' trace payload."""
    total = 0
    for span in spans:
        doc = {
            "name": span.name,
            "attributes": dict(span.attributes or {}),
            "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
        }
        total += len(json.dumps(doc, default=str, ensure_ascii=False).encode())
    return total


class Config:
    """A configuration's setup, flush and per-batch accounting."""

    def __init__(self, suite: str, name: str) -> None:
        self.suite, self.name = suite, name
        self.counter = SpanCounter()
        self.memory: Any = None  # InMemorySpanExporter for the peers / built-in tracing
        self.agents_tracing: Any = None  # the OpenAI Agents SDK's own traces (agents_tracing.py)
        self.provider: Any = None
        self.trace_dir: Path | None = None
        self.instrumentation: Any = None
        self.versions: dict[str, str] = {}
        getattr(self, f"_setup_{name}")()

    # -- setups ----------------------------------------------------------------------

    def _sdk_provider(self, *, global_: bool, before_export: Any = None) -> Any:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.memory = InMemorySpanExporter()
        provider = TracerProvider()
        if before_export is not None:  # a processor that rewrites spans before they are exported
            provider.add_span_processor(before_export)
        provider.add_span_processor(SimpleSpanProcessor(self.memory))
        provider.add_span_processor(self.counter)
        if global_:
            trace.set_tracer_provider(provider)
        self.provider = provider
        return provider

    def _setup_none(self) -> None:
        if self.suite == "openai_agents":  # its tracing is on by default: "none" turns it off
            sdk_tracing(on=False)

    def _setup_orch_otel(self) -> None:
        import orch_otel

        if self.suite == "openai_agents":  # off, as the SDK's docs advise without an OpenAI key
            sdk_tracing(on=False)

        self.trace_dir = Path(tempfile.mkdtemp(prefix="orch-bench-"))
        self.instrumentation = orch_otel.instrument(trace_dir=self.trace_dir)
        self.provider = self.instrumentation.tracer_provider
        self.provider.add_span_processor(self.counter)
        self.versions["orch-otel"] = orch_otel.__version__
        variant = os.environ.get("BENCH_ORCH_VARIANT")
        if variant:  # experiments only (benchmarks/experiments.py); never in the published tables
            apply_variant(variant, self.instrumentation)

    def _setup_orch_otel_sdk_tracing(self) -> None:
        self._setup_orch_otel()
        self.agents_tracing = sdk_tracing(on=True)

    def _setup_openinference(self) -> None:
        if self.suite == "agent_framework":
            # Not an instrumentor: a span processor rewriting the framework's own spans
            # (global provider) into OpenInference attributes before export.
            from openinference.instrumentation.agent_framework import AgentFrameworkToOpenInferenceProcessor

            self._sdk_provider(global_=True, before_export=AgentFrameworkToOpenInferenceProcessor())
            self.versions["openinference-instrumentation-agent-framework"] = _version(
                "openinference-instrumentation-agent-framework")
            return
        provider = self._sdk_provider(global_=False)
        if self.suite == "openai_agents":
            # A TracingProcessor on the SDK's own tracing; its default (exclusive) replaces the
            # SDK's processors, the OpenAI uploader among them.
            from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            sdk_tracing(on=True, memory=False)
            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
            self.versions["openinference-instrumentation-openai-agents"] = _version(
                "openinference-instrumentation-openai-agents")
        elif self.suite == "langgraph":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=provider)
            self.versions["openinference-instrumentation-langchain"] = _version("openinference-instrumentation-langchain")
        else:
            from openinference.instrumentation.autogen_agentchat import (
                AutogenAgentChatInstrumentor,
            )

            AutogenAgentChatInstrumentor().instrument(tracer_provider=provider)
            self.versions["openinference-instrumentation-autogen-agentchat"] = _version(
                "openinference-instrumentation-autogen-agentchat")

    def _setup_openllmetry(self) -> None:
        os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
        provider = self._sdk_provider(global_=False)
        if self.suite == "openai_agents":
            # A TracingProcessor added to the SDK's own (by default); here the only one, the OpenAI
            # uploader being dropped offline as in the other configurations.
            from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

            sdk_tracing(on=True, memory=False)
            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
            self.versions["opentelemetry-instrumentation-openai-agents"] = _version(
                "opentelemetry-instrumentation-openai-agents")
            return
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)
        self.versions["opentelemetry-instrumentation-langchain"] = _version("opentelemetry-instrumentation-langchain")

    def _setup_callbacks_only(self) -> None:
        """A do-nothing LangChain callback handler injected the way orch-otel injects its
        own (configure hook, ``run_inline``): the cost of LangChain's callback dispatch
        alone, below which no callback-based instrumentation can go."""
        from contextvars import ContextVar

        from langchain_core.callbacks import BaseCallbackHandler
        from langchain_core.tracers.context import register_configure_hook

        class NoOpHandler(BaseCallbackHandler):
            run_inline = True
            raise_error = False

        register_configure_hook(ContextVar("bench_noop_handler", default=NoOpHandler()), inheritable=True)  # noqa: B039

    def _setup_sdk_spans(self) -> None:
        """The in-app floor: bare SDK spans through a minimal handler (``benchmarks/sdk_spans.py``)."""
        from contextvars import ContextVar

        from langchain_core.tracers.context import register_configure_hook

        from .sdk_spans import BareSpanHandler

        handler = BareSpanHandler(self._sdk_provider(global_=False).get_tracer("bench.sdk_spans"))
        register_configure_hook(ContextVar("bench_sdk_spans", default=handler), inheritable=True)

    def _setup_builtin(self) -> None:
        if self.suite == "openai_agents":  # its own TracingProcessor API, not OpenTelemetry
            self.agents_tracing = sdk_tracing(on=True)
            return
        # AutoGen's runtime and agents, and Agent Framework (its instrumentation is on by
        # default), trace through the global provider when one is set. Metrics stay no-op.
        self._sdk_provider(global_=True)

    # -- per batch ---------------------------------------------------------------------

    def _trace_bytes_on_disk(self) -> int:
        assert self.trace_dir is not None
        return sum(p.stat().st_size for p in self.trace_dir.rglob("*") if p.is_file())

    def begin(self) -> None:
        if self.trace_dir is not None:
            self._disk0 = self._trace_bytes_on_disk()
        if self.memory is not None:
            self.memory.clear()
        if self.agents_tracing is not None:
            self.agents_tracing.take()
        self.counter.take()

    def flush(self) -> None:
        if self.name.startswith("orch_otel"):
            import orch_otel

            assert orch_otel.flush(), "orch-otel flush timed out"
        elif self.provider is not None:
            self.provider.force_flush()

    def finish(self) -> dict[str, Any]:
        spans, traces = self.counter.take()
        sdk = self.agents_tracing.take() if self.agents_tracing is not None else None
        if self.trace_dir is not None:
            nbytes = self._trace_bytes_on_disk() - self._disk0
        elif self.memory is not None:
            nbytes = attribute_bytes(self.memory.get_finished_spans())
            self.memory.clear()
        elif sdk is not None:  # the SDK's own tracing alone: its spans, traces and JSON export
            spans, traces, nbytes = sdk
        else:
            nbytes = 0
        return {"spans": spans, "traces": traces, "bytes": nbytes}


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"
