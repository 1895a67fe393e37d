"""The OpenAI Agents SDK's own tracing in the benchmark: switched off, or on
with an in-memory ``TracingProcessor`` in place of the SDK's default one
(which batches traces for upload to OpenAI: the benchmark is offline). The
processor only keeps what it is given, so the configuration costs what the
SDK's tracing itself costs; its counts and bytes are taken after the timed
section, like the in-memory OTel exporter's.
"""

from __future__ import annotations

import json
import threading
from typing import Any


class MemoryTracingProcessor:
    """Keeps the SDK's finished traces and spans (a ``TracingProcessor``, duck-typed)."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        with self._lock:
            self._items.append(trace)

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        with self._lock:
            self._items.append(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass

    def take(self) -> tuple[int, int, int]:
        """(spans, traces, bytes of their JSON export) since the last take."""
        with self._lock:
            items, self._items = self._items, []
        spans = traces = nbytes = 0
        for item in items:
            exported = item.export() or {}
            nbytes += len(json.dumps(exported, default=str, ensure_ascii=False).encode())
            if exported.get("object") == "trace.span":
                spans += 1
            else:
                traces += 1
        return spans, traces, nbytes


def sdk_tracing(on: bool, *, memory: bool = True) -> MemoryTracingProcessor | None:
    """Turn the SDK's tracing off, or on with only an in-memory processor
    (returned), or with no processor at all (``memory=False``: a peer's
    processor will be the only one)."""
    from agents import set_trace_processors, set_tracing_disabled

    set_tracing_disabled(not on)
    processor = MemoryTracingProcessor() if on and memory else None
    set_trace_processors([processor] if processor is not None else [])  # type: ignore[list-item]
    return processor
