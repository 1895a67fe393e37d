"""Where orch-otel's time goes, measured without a profiler's distortion:
wrap orch-otel's entry points and hot internals with CPU-time accumulators
(``time.thread_time``: the calling thread's CPU, so GIL waits and other
threads do not count; the batch processor's thread is measured on its own
thread). Times are inclusive (a callback's figure contains the recorder calls
it makes). Used by the worker's ``breakdown`` op.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

_TARGETS = {
    "langgraph": [
        ("orch_otel.integrations.langgraph._handler", "OrchestrationHandler", None),  # every on_* callback
    ],
    "autogen": [],
    "openai_agents": [  # the run hooks' work, looked up by name where each caller finds it
        ("orch_otel.integrations.openai_agents._hooks", None,
         ("agent_started", "llm_started", "llm_ended", "handed_off", "agent_ended", "plain")),
        ("orch_otel.integrations.openai_agents._runs", None, ("finish", "plain")),
        ("orch_otel.integrations.openai_agents._steps", None, ("definition", "plain")),
        ("orch_otel.recorder", "Recorder", ("workflow", "agent", "llm", "tool", "delegate")),
    ],
    "common": [
        ("orch_otel._invocation", "Invocation", ("start", "end")),
        ("orch_otel.recorder", "Recorder", ("message", "aggregate")),
        # module functions, wrapped where each caller looks them up
        ("orch_otel._invocation", None, ("decision_event", "content_into")),
        ("orch_otel.recorder", None, ("decision_event", "content_into")),
        ("orch_otel.content", "ContentPolicy", ("apply",)),
        ("opentelemetry.sdk.trace", "Tracer", ("start_span",)),
        ("opentelemetry.sdk.trace", "Span", ("end",)),
        ("orch_otel.exporters.trace_file", "TraceFileExporter", ("export",)),
        ("orch_otel.exporters.trace_file", None, ("convert", "from_readable_span")),
        ("orch_otel.tracefiles", "TraceWriter", ("write",)),
    ],
}


class Accumulator:
    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._lock = threading.Lock()
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        import inspect

        if isinstance(inspect.getattr_static(owner, attr), (staticmethod, classmethod)):
            return
        original = getattr(owner, attr)  # through the MRO: a mixin's method is wrapped on the class
        clock = time.thread_time
        cpu, calls, lock = self.cpu, self.calls, self._lock

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            try:
                return original(*args, **kwargs)
            finally:
                dt = clock() - t0
                with lock:
                    cpu[label] = cpu.get(label, 0.0) + dt
                    calls[label] = calls.get(label, 0) + 1

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, original))

    def install(self, suite: str) -> None:
        import importlib

        for module_name, class_name, attrs in _TARGETS.get(suite, []) + _TARGETS["common"]:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            owner = getattr(module, class_name, None) if class_name else module
            if owner is None:
                continue
            names = attrs or [n for n in dir(owner) if n.startswith("on_") and callable(getattr(owner, n))
                              and getattr(getattr(owner, n), "__module__", "").startswith("orch_otel")]
            for name in names:
                if hasattr(owner, name):
                    short = module_name.replace("orch_otel.", "").replace("opentelemetry.sdk.trace", "otel-sdk")
                    self.wrap(owner, name, f"{short}.{class_name + '.' if class_name else ''}{name}")

    def reset(self) -> None:
        with self._lock:
            self.cpu.clear()
            self.calls.clear()

    def report(self, runs: int) -> list[dict[str, Any]]:
        with self._lock:
            rows = [{"function": k, "calls_per_run": self.calls[k] / runs, "cpu_us_per_run": 1e6 * v / runs}
                    for k, v in self.cpu.items()]
        return sorted(rows, key=lambda r: r["cpu_us_per_run"], reverse=True)
