"""Streaming assembly of span records into traces: the one assembler behind
the live exporter (``linger=0``, span ids of closed traces not kept) and the
offline pipeline (logs read in any order).

Rules (also in ``docs/offline.md``):

* **Grouping.** Spans are grouped by trace id across lines and files. A trace
  is *open* from its first span until it is released.
* **Release.** A trace whose root has arrived (a span with no parent, or a
  remote parent) is released *complete* once ``linger`` further spans have
  been read without one for it (``linger=0``: at once, as the live exporter
  does). At the end of the input every open trace is released.
* **Bounds.** At most ``max_open_traces`` traces are open: past that the least
  recently active trace whose root arrived is released (complete); when no
  open trace has its root, the least recently active one is released
  incomplete. A trace reaching ``max_spans_per_trace`` spans is released
  early, incomplete. Memory is therefore bounded by these numbers and
  ``linger``, never by the size of the input.
* **Roots that never ended.** A trace released without a root is converted
  with ``complete=False``: its stop reason is ``incomplete``.
* **Duplicates.** A span id seen before in the same trace is a duplicate: an
  identical copy is dropped and counted; a copy that differs is a *conflict*,
  quarantined. The first copy wins.
* **Late spans.** A span of a trace already released is *late*: it is not
  merged (the trace is written) and goes to quarantine, unless its id is
  known, when it is a duplicate. The last ``remember_closed`` released traces
  are remembered by their id (as an integer: a third of the memory of the hex
  text) and, with ``remember_span_ids``, their span ids; a span of a trace
  forgotten beyond that starts a new trace with the same id. The live
  exporter keeps no span ids: the SDK never exports a span twice.
* **Orphans and cycles** (a parent that never arrives; parent links in a loop)
  stay in their trace; the converter walks them as extra roots and marks the
  trace incomplete.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from .spans import SpanRecord

__all__ = ["Released", "StreamAssembler"]

ADDED, DUPLICATE, CONFLICT, LATE = 0, 1, 2, 3


@dataclass
class Released:
    trace_id: str
    spans: dict[str, SpanRecord]  # span id -> record, arrival order
    complete: bool


@dataclass
class AssemblerStats:
    traces: int = 0  # released
    incomplete: int = 0  # released without their root, or early
    late_spans: int = 0  # arrived after their trace was released (not duplicates)


class _Open:
    __slots__ = ("spans", "last")

    def __init__(self) -> None:
        self.spans: dict[str, SpanRecord] = {}
        self.last = 0


class StreamAssembler:
    """Feed spans with :meth:`add`; take finished traces from :attr:`released`."""

    def __init__(self, *, max_open_traces: int = 10_000, linger: int = 50_000, max_spans_per_trace: int = 100_000,
                 remember_closed: int = 10_000, remember_span_ids: bool = True) -> None:
        if max_open_traces < 1 or linger < 0 or max_spans_per_trace < 1 or remember_closed < 0:
            raise ValueError("max_open_traces and max_spans_per_trace must be >= 1, linger and remember_closed >= 0")
        self.max_open_traces = max_open_traces
        self.linger = linger
        self.max_spans_per_trace = max_spans_per_trace
        self.remember_closed = remember_closed
        self.remember_span_ids = remember_span_ids
        self.released: list[Released] = []
        self.stats = AssemblerStats()
        self.peak_open = 0
        self._rooted: OrderedDict[str, _Open] = OrderedDict()  # root arrived; least recently active first
        self._unrooted: OrderedDict[str, _Open] = OrderedDict()
        self._closed: OrderedDict[int, frozenset[str] | None] = OrderedDict()  # trace id -> span ids
        self._seq = 0

    @property
    def open_traces(self) -> int:
        return len(self._rooted) + len(self._unrooted)

    def add(self, span: SpanRecord) -> int:
        """Add one span; returns ADDED, DUPLICATE, CONFLICT or LATE."""
        seq = self._seq = self._seq + 1
        tid = span.trace_id
        unrooted = self._unrooted
        trace = unrooted.get(tid)  # most spans end before their root: look here first
        rootless = opened = False
        if trace is not None:
            rootless = True
            unrooted.move_to_end(tid)
        else:
            trace = self._rooted.get(tid)
            if trace is not None:
                self._rooted.move_to_end(tid)
            else:
                key = int(tid, 16)
                if key in self._closed:
                    span_ids = self._closed[key]
                    if span_ids is not None and span.span_id in span_ids:
                        return DUPLICATE
                    self.stats.late_spans += 1
                    return LATE
                trace = unrooted[tid] = _Open()
                rootless = opened = True
        spans = trace.spans
        known = spans.get(span.span_id)
        trace.last = seq
        if known is not None:
            return DUPLICATE if known == span else CONFLICT
        spans[span.span_id] = span
        if rootless and (span.parent_id is None or span.parent_is_remote):
            if not self.linger:  # the live exporter's rule: a root releases its trace at once
                self._release(tid, complete=True)
                return ADDED
            del unrooted[tid]
            self._rooted[tid] = trace
        if len(spans) >= self.max_spans_per_trace:
            self._release(tid, complete=False)
        if opened or self._rooted:
            self._settle(opened)
        return ADDED

    def skip(self, count: int) -> None:
        """``count`` spans were read that belong to another job's traces
        (``--jobs``): they count towards ``linger`` as in a single job."""
        self._seq += count
        self._settle(False)

    def _settle(self, opened: bool) -> None:
        """Release what lingered long enough; if a trace just opened, keep within the bound."""
        rooted, unrooted = self._rooted, self._unrooted
        horizon = self._seq - self.linger
        while rooted:
            tid, trace = next(iter(rooted.items()))
            if trace.last > horizon:
                break
            self._release(tid, complete=True)
        if not opened:  # the number of open traces did not grow
            return
        while len(rooted) + len(unrooted) > self.max_open_traces:
            if rooted:  # a rooted trace is whole but for stragglers: cheaper to release than an unrooted one
                self._release(next(iter(rooted)), complete=True)
            else:
                self._release(next(iter(unrooted)), complete=False)
        open_now = len(rooted) + len(unrooted)
        if open_now > self.peak_open:
            self.peak_open = open_now

    def _release(self, tid: str, *, complete: bool) -> None:
        trace = self._rooted.pop(tid, None) or self._unrooted.pop(tid)
        if self.remember_closed:
            self._closed[int(tid, 16)] = frozenset(trace.spans) if self.remember_span_ids else None
            if len(self._closed) > self.remember_closed:
                self._closed.popitem(last=False)
        self.stats.traces += 1
        if not complete:
            self.stats.incomplete += 1
        self.released.append(Released(tid, trace.spans, complete))

    def drain(self) -> None:
        """End of input: release every open trace."""
        for tid in list(self._rooted):
            self._release(tid, complete=True)
        for tid in list(self._unrooted):
            self._release(tid, complete=False)
