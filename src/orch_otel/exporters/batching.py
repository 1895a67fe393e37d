"""The SDK's BatchSpanProcessor, with drops that are never silent.

A full queue makes the SDK drop spans. This subclass counts every drop,
reports it in a rate-limited log warning with the running count, and adds it
to the ``orch_otel.spans.lost`` counter (reason ``queue_full``) of the global
meter provider. The durable spool reports its losses the same way, under its
own reasons (``spool_full``, ``spool_write_failed``, ``spool_removed``,
``spool_unreadable``).
"""

from __future__ import annotations

import logging
import sys
import threading
import time

from opentelemetry import metrics
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from .._faults import log_fault
from .._forks import after_fork_in_child, inherited
from .._version import __version__

_log = logging.getLogger(__name__)
_WARN_EVERY_S = 10.0


class LossReport:
    """Counts lost spans by reason and reports them without flooding the log."""

    def __init__(self, component: str) -> None:
        self.component = component
        self.counts: dict[str, int] = {}
        self._counter = metrics.get_meter("orch_otel", __version__).create_counter(
            "orch_otel.spans.lost", unit="{span}", description="Finished spans that will never reach the exporter"
        )
        self._lock = threading.Lock()
        self._last_warning: dict[str, float] = {}  # per reason: one warning per reason per _WARN_EVERY_S
        self._unreported: dict[str, int] = {}

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def forked(self) -> None:
        """In a forked child: the parent's losses are the parent's to report."""
        self._lock = threading.Lock()
        self.counts, self._unreported, self._last_warning = {}, {}, {}

    def lost(self, count: int, reason: str) -> None:
        if count <= 0:
            return
        self._counter.add(count, {"reason": reason, "component": self.component})
        with self._lock:
            self.counts[reason] = self.counts.get(reason, 0) + count
            self._unreported[reason] = self._unreported.get(reason, 0) + count
            now = time.monotonic()
            last = self._last_warning.get(reason)
            if last is not None and now - last < _WARN_EVERY_S:
                return
            self._last_warning[reason] = now
            unreported = self._unreported.pop(reason)
            totals = dict(self.counts)
        _log.warning("orch-otel %s: %d span(s) lost (%s so far: %s)", self.component, unreported, reason, totals)

    def flush_warning(self) -> None:
        """Report losses not yet warned about (at shutdown)."""
        with self._lock:
            unreported, self._unreported = sum(self._unreported.values()), {}
            totals = dict(self.counts)
        if unreported:
            _log.warning("orch-otel %s: %d span(s) lost (totals: %s)", self.component, unreported, totals)


class RateLimitedFaults:
    """Logs orch-otel's own faults without content (``faults.log_fault``: type
    names only) and without flooding: one warning per kind of fault per
    ``every_s``, with how many of that kind were left out since the last one.
    A fault that repeats for every span would otherwise log once per span."""

    def __init__(self, log: logging.Logger, every_s: float = _WARN_EVERY_S) -> None:
        self._log = log
        self._every_s = every_s
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}
        self._lock = threading.Lock()

    def warn(self, kind: str, message: str, *args: object, error: BaseException | None = None) -> None:
        """Log ``message % args`` (the fault: ``error``, default the one being handled) unless
        ``kind`` was logged less than ``every_s`` ago; then only count it."""
        with self._lock:
            now = time.monotonic()
            last = self._last.get(kind)
            if last is not None and now - last < self._every_s:
                self._suppressed[kind] = self._suppressed.get(kind, 0) + 1
                return
            self._last[kind] = now
            suppressed = self._suppressed.pop(kind, 0)
        if suppressed:
            message += f" ({suppressed} more like it not logged in the last {self._every_s:.0f} s)"
        if error is None and sys.exc_info()[1] is None:
            self._log.warning(message, *args)
        else:
            log_fault(self._log, logging.WARNING, message, *args, error=error)


class AccountedBatchSpanProcessor(BatchSpanProcessor):
    """``BatchSpanProcessor`` that counts and reports spans dropped on a full queue."""

    def __init__(self, span_exporter: SpanExporter, *, max_queue_size: int | None = None,
                 component: str | None = None, losses: LossReport | None = None, **kwargs) -> None:
        super().__init__(span_exporter, max_queue_size=max_queue_size, **kwargs)
        self.losses = losses or LossReport(component or type(span_exporter).__name__)
        self._queue_lock = threading.Lock()
        queue = getattr(getattr(self, "_batch_processor", None), "_queue", None)
        self._queue = queue if queue is not None and getattr(queue, "maxlen", None) else None
        if self._queue is None:
            _log.warning("orch-otel: this SDK version hides the batch queue; queue drops cannot be counted")
        after_fork_in_child(self._forked)  # after the SDK's own reset (it clears the queue, new worker thread)

    def _forked(self) -> None:
        self._queue_lock = threading.Lock()
        self.losses.forked()

    def on_end(self, span: ReadableSpan) -> None:
        if inherited(span):  # the parent's run, ended by a forked child: the parent's copy is the one kept
            return
        queue = self._queue
        if queue is None:
            super().on_end(span)
            return
        with self._queue_lock:  # check and append together, so concurrent ends count exactly
            full = len(queue) >= queue.maxlen
            super().on_end(span)
        if full and span.context.trace_flags.sampled:
            self.losses.lost(1, "queue_full")

    def shutdown(self) -> None:
        super().shutdown()
        self.losses.flush_warning()
