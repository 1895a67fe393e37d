"""One benchmark configuration in its own process (instrumentors cannot be
cleanly removed, so each configuration gets a fresh interpreter).

    python -m benchmarks._worker SUITE CONFIG

The parent (:mod:`benchmarks.capture`) sends one JSON command per line on
stdin and reads one JSON reply per line from the original stdout (library
prints go to stderr). Commands:

- ``{"op": "batch", "app": NAME, "runs": N}``: N runs of the app, then a flush
  of the configuration's exporters, timed together (orch-otel exports on a
  background thread; its work counts). Replies seconds, spans, distinct
  traces and trace bytes for the batch.
- ``{"op": "floor", "spans": N}``: N bare SDK spans (``start_as_current_span``,
  5 attributes, simple processor + in-memory exporter) on a private provider.
- ``{"op": "recorder", "spans": N}``: N ``Recorder.agent()`` spans through the
  configuration's provider (orch-otel only), flush included.
- ``{"op": "profile", "app": NAME, "runs": N, "out": PATH}``: cProfile N runs.
- ``{"op": "export_profile", ...}``: cProfile orch-otel's exporter on the spans of N runs.
- ``{"op": "breakdown", "app": NAME, "runs": N}``: CPU time per orch-otel function.
- ``{"op": "quit"}``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .suites import SUITES
from .variants import apply_variant

_ENV_OFF = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
            "OTEL_TRACES_EXPORTER", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "ORCH_OTEL_TRACE_DIR")


def _quiet_libraries() -> None:
    # The replay client warns on every call; logging to stderr would cost every configuration alike.
    for name in ("autogen_core.events", "autogen_core", "autogen_agentchat.events", "autogen_agentchat"):
        logging.getLogger(name).setLevel(logging.ERROR)


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
        self.provider: Any = None
        self.trace_dir: Path | None = None
        self.instrumentation: Any = None
        self.versions: dict[str, str] = {}
        getattr(self, f"_setup_{name}")()

    # -- setups ----------------------------------------------------------------------

    def _sdk_provider(self, *, global_: bool) -> Any:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        self.memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.memory))
        provider.add_span_processor(self.counter)
        if global_:
            trace.set_tracer_provider(provider)
        self.provider = provider
        return provider

    def _setup_none(self) -> None:
        pass

    def _setup_orch_otel(self) -> None:
        import orch_otel

        self.trace_dir = Path(tempfile.mkdtemp(prefix="orch-bench-"))
        self.instrumentation = orch_otel.instrument(trace_dir=self.trace_dir)
        self.provider = self.instrumentation.tracer_provider
        self.provider.add_span_processor(self.counter)
        self.versions["orch-otel"] = orch_otel.__version__
        variant = os.environ.get("BENCH_ORCH_VARIANT")
        if variant:  # experiments only (benchmarks/experiments.py); never in the published tables
            apply_variant(variant, self.instrumentation)

    def _setup_openinference(self) -> None:
        provider = self._sdk_provider(global_=False)
        if self.suite == "langgraph":
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
        # AutoGen's runtime and agents trace through the global provider when one is set.
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
        self.counter.take()

    def flush(self) -> None:
        if self.name == "orch_otel":
            import orch_otel

            assert orch_otel.flush(), "orch-otel flush timed out"
        elif self.provider is not None:
            self.provider.force_flush()

    def finish(self) -> dict[str, Any]:
        spans, traces = self.counter.take()
        if self.trace_dir is not None:
            nbytes = self._trace_bytes_on_disk() - self._disk0
        elif self.memory is not None:
            nbytes = attribute_bytes(self.memory.get_finished_spans())
            self.memory.clear()
        else:
            nbytes = 0
        return {"spans": spans, "traces": traces, "bytes": nbytes}


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _make_app(suite: str, name: str) -> Any:
    if suite == "langgraph":
        from .apps_langgraph import LangGraphApp

        return LangGraphApp(name)
    from .apps_autogen import AutoGenApp

    return AutoGenApp(name)


class Worker:
    def __init__(self, suite: str, config: str) -> None:
        self.suite = suite
        self.config = Config(suite, config)
        self.apps: dict[str, Any] = {}
        self.loop = asyncio.new_event_loop()

    def app(self, name: str) -> Any:
        if name not in self.apps:
            self.apps[name] = _make_app(self.suite, name)
        return self.apps[name]

    def _prepared(self, app_name: str, runs: int) -> Callable[[], Awaitable[None]]:
        """A coroutine function that runs the app ``runs`` times (prepared for them)."""
        app = self.app(app_name)
        if hasattr(app, "prepare"):
            app.prepare(runs)

        async def go() -> None:
            for _ in range(runs):
                await app.arun()

        return go

    def batch(self, app_name: str, runs: int) -> dict[str, Any]:
        go = self._prepared(app_name, runs)

        gc.collect()
        self.config.begin()
        cpu0 = time.process_time()
        start = time.perf_counter()
        self.loop.run_until_complete(go())
        app_seconds = time.perf_counter() - start
        self.config.flush()
        seconds = time.perf_counter() - start
        cpu_seconds = time.process_time() - cpu0  # all threads of this process
        return {"seconds": seconds, "app_seconds": app_seconds, "cpu_seconds": cpu_seconds, "runs": runs,
                **self.config.finish()}

    def floor(self, spans: int) -> dict[str, Any]:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        tracer = provider.get_tracer("bench.floor")
        gc.collect()
        start = time.perf_counter()
        for i in range(spans):
            with tracer.start_as_current_span("floor", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "worker",
                "gen_ai.agent.id": "worker-1", "orch.agent.role": "worker", "orch.fanout.index": i,
            }):
                pass
        seconds = time.perf_counter() - start
        count = len(memory.get_finished_spans())
        provider.shutdown()
        return {"seconds": seconds, "spans": count}

    def recorder(self, spans: int) -> dict[str, Any]:
        """``Recorder`` spans through orch-otel's own pipeline: a run root with
        ``spans - 1`` agent children per trace of 10 (so traces complete and are written)."""
        from orch_otel import get_recorder

        rec = get_recorder()
        per_trace = 10
        gc.collect()
        self.config.begin()
        start = time.perf_counter()
        for _ in range(spans // per_trace):
            with rec.workflow("bench", task_id="t"):
                for i in range(per_trace - 1):
                    with rec.agent("worker", role="worker", fanout_index=i, fanout_size=per_trace - 1):
                        pass
        app_seconds = time.perf_counter() - start
        self.config.flush()
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "app_seconds": app_seconds, **self.config.finish()}

    def profile(self, app_name: str, runs: int, out: str) -> dict[str, Any]:
        import cProfile

        go = self._prepared(app_name, runs)

        profiler = cProfile.Profile()
        profiler.enable()
        self.loop.run_until_complete(go())
        self.config.flush()
        profiler.disable()
        profiler.dump_stats(out)
        return {"out": out}

    def export_profile(self, app_name: str, runs: int, out: str) -> dict[str, Any]:
        """orch-otel's exporter work, which ``instrument()`` runs on the batch
        processor's thread (so ``profile`` does not see it): capture the spans
        of ``runs`` runs, then convert and write them in the foreground under cProfile."""
        import cProfile

        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )

        from orch_otel.exporters.trace_file import TraceFileExporter

        memory = InMemorySpanExporter()
        self.config.provider.add_span_processor(SimpleSpanProcessor(memory))
        go = self._prepared(app_name, runs)

        self.loop.run_until_complete(go())
        self.config.flush()
        spans = list(memory.get_finished_spans())
        exporter = TraceFileExporter(tempfile.mkdtemp(prefix="orch-bench-export-"))
        profiler = cProfile.Profile()
        start = time.perf_counter()
        profiler.enable()
        for i in range(0, len(spans), 512):  # the batch processor's default batch size
            exporter.export(spans[i:i + 512])
        exporter.shutdown()
        profiler.disable()
        seconds = time.perf_counter() - start
        profiler.dump_stats(out)
        return {"out": out, "spans": len(spans), "seconds": seconds}

    def breakdown(self, app_name: str, runs: int) -> dict[str, Any]:
        """CPU time per run in orch-otel's entry points and internals (:mod:`benchmarks.breakdown`)."""
        from .breakdown import Accumulator

        acc = getattr(self, "_acc", None)
        if acc is None:
            acc = self._acc = Accumulator()
            acc.install(self.suite)
        go = self._prepared(app_name, runs)

        acc.reset()
        cpu0 = time.thread_time()
        self.loop.run_until_complete(go())
        self.config.flush()
        main_cpu = time.thread_time() - cpu0
        return {"rows": acc.report(runs), "main_thread_cpu_us_per_run": 1e6 * main_cpu / runs, "runs": runs}

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd["op"]
        if op == "batch":
            return self.batch(cmd["app"], int(cmd["runs"]))
        if op == "floor":
            return self.floor(int(cmd["spans"]))
        if op == "recorder":
            return self.recorder(int(cmd["spans"]))
        if op == "profile":
            return self.profile(cmd["app"], int(cmd["runs"]), cmd["out"])
        if op == "breakdown":
            return self.breakdown(cmd["app"], int(cmd["runs"]))
        if op == "export_profile":
            return self.export_profile(cmd["app"], int(cmd["runs"]), cmd["out"])
        raise ValueError(f"unknown op {op!r}")


def main(argv: list[str]) -> int:
    suite, config = argv
    if config not in SUITES.get(suite, ()):
        raise SystemExit(f"unknown suite/config {suite}/{config}")
    for name in _ENV_OFF:
        os.environ.pop(name, None)
    # Replies go to the original stdout; anything a library prints goes to stderr.
    reply = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    _quiet_libraries()
    worker = Worker(suite, config)
    reply.write(json.dumps({"ready": True, "pid": os.getpid(), "versions": worker.config.versions}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        try:
            result = {"ok": True, **worker.handle(cmd)}
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails the benchmark
            import traceback

            traceback.print_exc()
            result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        reply.write(json.dumps(result) + "\n")
    if config == "orch_otel":
        import orch_otel

        orch_otel.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
