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
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .configurations import Config
from .suites import SUITES

_ENV_OFF = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
            "OTEL_TRACES_EXPORTER", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "ORCH_OTEL_TRACE_DIR",
            "ENABLE_INSTRUMENTATION", "ENABLE_SENSITIVE_DATA",  # Agent Framework's defaults
            "OPENAI_AGENTS_DISABLE_TRACING", "OPENAI_API_KEY")  # the OpenAI Agents SDK's: set per configuration; offline


def _quiet_libraries() -> None:
    # The replay client warns on every call; logging to stderr would cost every configuration alike.
    for name in ("autogen_core.events", "autogen_core", "autogen_agentchat.events", "autogen_agentchat"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _make_app(suite: str, name: str) -> Any:
    if suite == "langgraph":
        from .apps_langgraph import LangGraphApp

        return LangGraphApp(name)
    if suite == "agent_framework":
        from .apps_agent_framework import AgentFrameworkApp

        return AgentFrameworkApp(name)
    if suite == "openai_agents":
        from .apps_openai_agents import OpenAIAgentsApp

        return OpenAIAgentsApp(name)
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
    if config.startswith("orch_otel"):
        import orch_otel

        orch_otel.uninstrument()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
