"""Helpers for tests, yours and ours: capture the spans of a block and read
them back as replayable traces.

    with orch_otel.testing.capture() as captured:
        run_my_agents()
    trace, = captured.traces()
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider

from ._configure import global_provider
from .converter import Conversion, convert
from .spans import SpanRecord, from_readable_span

__all__ = ["Captured", "capture", "ensure_sdk_provider"]


class Captured:
    """Spans that ended while a capture was active."""

    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []
        self._lock = threading.Lock()

    def _add(self, span: SpanRecord) -> None:
        with self._lock:
            self.spans.append(span)

    def by_trace(self) -> dict[str, list[SpanRecord]]:
        groups: dict[str, list[SpanRecord]] = defaultdict(list)
        with self._lock:
            for span in self.spans:
                groups[span.trace_id].append(span)
        return dict(groups)

    def conversions(self) -> list[Conversion]:
        """One conversion per captured trace, in the order the traces started."""
        groups = sorted(self.by_trace().values(), key=lambda spans: min(s.start_ns for s in spans))
        return [convert(spans, complete=any(s.is_local_root for s in spans)) for spans in groups]

    def traces(self) -> list[dict[str, Any]]:
        return [c.trace for c in self.conversions()]

    def names(self) -> list[str]:
        with self._lock:
            return [s.name for s in self.spans]


class _Hub(SpanProcessor):
    def __init__(self) -> None:
        self.active: list[Captured] = []
        self.lock = threading.Lock()

    def on_end(self, span: ReadableSpan) -> None:
        if not self.active:
            return
        record = from_readable_span(span)
        with self.lock:
            targets = list(self.active)
        for captured in targets:
            captured._add(record)


_hubs: dict[int, _Hub] = {}
_hubs_lock = threading.Lock()


def _hub_for(provider: TracerProvider) -> _Hub:
    with _hubs_lock:
        hub = _hubs.get(id(provider))
        if hub is None:
            hub = _hubs[id(provider)] = _Hub()
            provider.add_span_processor(hub)
        return hub


def ensure_sdk_provider() -> TracerProvider:
    """The global SDK TracerProvider, created and set if none is set yet."""
    provider, _ = global_provider()
    if not isinstance(provider, TracerProvider):
        raise RuntimeError(f"orch_otel.testing needs an SDK TracerProvider, not {type(provider).__name__}")
    return provider


@contextmanager
def capture(tracer_provider: TracerProvider | None = None) -> Iterator[Captured]:
    """Collect every span that ends inside the block (synchronously, no batching)."""
    hub = _hub_for(tracer_provider or ensure_sdk_provider())
    captured = Captured()
    with hub.lock:
        hub.active.append(captured)
    try:
        yield captured
    finally:
        with hub.lock:
            hub.active.remove(captured)
