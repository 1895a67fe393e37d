"""Groups finished spans by trace and releases each trace when it is whole.

Memory is bounded: at most ``max_open_traces`` traces and
``max_spans_per_trace`` spans per trace are held. Past either bound the oldest
(or the oversized) trace is released early, marked incomplete.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ..spans import SpanRecord


@dataclass
class Released:
    spans: list[SpanRecord]
    complete: bool


@dataclass
class AssemblerStats:
    traces: int = 0
    incomplete: int = 0
    late_spans: int = 0  # spans that arrived after their trace was released


@dataclass
class TraceAssembler:
    max_open_traces: int = 10_000
    max_spans_per_trace: int = 100_000
    remember_closed: int = 10_000
    stats: AssemblerStats = field(default_factory=AssemblerStats)

    def __post_init__(self) -> None:
        self._open: OrderedDict[str, list[SpanRecord]] = OrderedDict()
        # released trace ids, as ints: a third of the memory of hex strings
        self._closed: OrderedDict[int, None] = OrderedDict()

    @property
    def open_traces(self) -> int:
        return len(self._open)

    def add(self, span: SpanRecord) -> list[Released]:
        """Add a span; return the traces this span completed or pushed out."""
        if int(span.trace_id, 16) in self._closed:
            self.stats.late_spans += 1
            return []
        spans = self._open.get(span.trace_id)
        if spans is None:
            spans = self._open[span.trace_id] = []
        spans.append(span)
        released: list[Released] = []
        if span.is_local_root:
            released.append(self._release(span.trace_id, complete=True))
        elif len(spans) >= self.max_spans_per_trace:
            released.append(self._release(span.trace_id, complete=False))
        while len(self._open) > self.max_open_traces:
            released.append(self._release(next(iter(self._open)), complete=False))
        return released

    def drain(self) -> list[Released]:
        """Release every open trace (at shutdown): their roots never ended."""
        return [self._release(trace_id, complete=False) for trace_id in list(self._open)]

    def _release(self, trace_id: str, *, complete: bool) -> Released:
        spans = self._open.pop(trace_id)
        self._closed[int(trace_id, 16)] = None
        if len(self._closed) > self.remember_closed:
            self._closed.popitem(last=False)
        self.stats.traces += 1
        if not complete:
            self.stats.incomplete += 1
        return Released(spans, complete)
