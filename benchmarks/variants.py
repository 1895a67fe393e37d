"""Optimisation variants: candidate fixes and diagnostics, each a monkeypatch
that :func:`apply_variant` applies inside a benchmark worker when
``BENCH_ORCH_VARIANT`` names it (``+`` combines them);
:mod:`benchmarks.experiments` measures them.

- ``yield``: the trace-file exporter gives up the GIL (``time.sleep(0)``)
  after each trace it converts and writes, so the batch processor's thread
  runs in short slices instead of holding the GIL for the interpreter's 5 ms
  switch interval while the app's thread waits.
- ``sync``: the trace-file exporter behind a ``SimpleSpanProcessor`` (export
  on the app's thread at each span end; conversion when a root ends): no
  background thread at all.
- ``switch``: ``sys.setswitchinterval(0.0005)`` (diagnostic: is the extra wall
  time GIL hand-over latency?).
- ``norefs``: the content policy keeps nothing when capture is off (no
  canonical JSON + hash per content): the cost of content refs.
- ``nogc``: ``gc.disable()`` (diagnostic: cyclic GC charged to allocating calls).
"""

from __future__ import annotations

import sys
import time
from typing import Any

VARIANTS = ("yield", "sync", "switch", "norefs", "nogc")


def apply_variant(variant: str, instrumentation: Any) -> None:
    for name in variant.split("+"):
        if name == "yield":
            from orch_otel.exporters.trace_file import TraceFileExporter

            original = TraceFileExporter._write

            def _write(self: Any, released: Any, original: Any = original) -> None:
                original(self, released)
                time.sleep(0)  # let the app's thread have the GIL between traces

            TraceFileExporter._write = _write  # type: ignore[method-assign]
        elif name == "sync":
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor

            provider = instrumentation.tracer_provider
            multi = provider._active_span_processor
            batch = instrumentation.processors[0]
            multi._span_processors = tuple(p for p in multi._span_processors if p is not batch)
            simple = SimpleSpanProcessor(instrumentation.trace_exporter)
            multi._span_processors = (simple, *multi._span_processors)
            instrumentation.processors[0] = simple
        elif name == "switch":
            sys.setswitchinterval(0.0005)
        elif name == "nogc":  # diagnostic: how much of the per-span cost is cyclic GC triggered by allocations
            import gc

            gc.disable()
        elif name == "norefs":
            from orch_otel.content import ContentPolicy

            original_apply = ContentPolicy.apply

            def apply(self: Any, content: Any, original_apply: Any = original_apply) -> Any:
                return None if not self.capture else original_apply(self, content)

            ContentPolicy.apply = apply  # type: ignore[method-assign]
        else:
            raise ValueError(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})")
