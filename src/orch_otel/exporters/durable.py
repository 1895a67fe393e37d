"""Durable export: a bounded on-disk spool in front of any span exporter.

Every finished span is appended to the spool's write-ahead log (:mod:`.spool`)
before it is queued for export, so a span that ended survives the process
being killed. When the collector is unreachable or rejects a batch, the spans
stay in the spool and are re-sent, oldest first, when it comes back;
``orch-otel spool replay`` (:mod:`.spool_replay`) re-sends the spool a dead
process left. Delivery is at least once: a replay may repeat spans the
collector already has (the offline reader drops duplicate span ids). A span
the collector refuses for good (HTTP 413 and other non-retryable refusals) is set aside in
``rejected.aside`` so the spans after it go on (see :mod:`.rejections`).

Waiting for the collector is bounded: ``force_flush`` returns after at most
``flush_timeout_s`` and shutdown after ``shutdown_timeout_s`` (2 s each by
default); what the collector has not taken by then stays in the spool. A spool
directory removed from outside is made again on the next write; the spans of
segments that went with it are counted lost (reason ``spool_removed``). When the
spool directory cannot be made at all, ``spool_setup.spooled_export`` falls
back to one under the system temp directory.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import _env as env
from .._faults import log_fault
from .._forks import inherited
from ..spans import SpanRecord, from_readable_span, to_readable_span
from .batching import AccountedBatchSpanProcessor, LossReport
from .rejections import Refusal, SetAside, deliver
from .spool import SpanSpool

_log = logging.getLogger(__name__)
_MAX_BACKOFF_S = 30.0
_ABORT_GRACE_S = 0.5  # at most, of the shutdown wait: for the exporter to notice the abort and the spool to close


class _SpoolingExporter(SpanExporter):
    """Sends through ``inner``; keeps failed spans in the spool and re-sends them first."""

    def __init__(self, inner: SpanExporter, spool: SpanSpool, losses: LossReport, retry_interval_s: float) -> None:
        self.inner = inner
        self.spool = spool
        self.losses = losses
        self._retry_interval = retry_interval_s
        self._start()

    def _start(self) -> None:
        self.failed: set[str] = set()
        self._backoff = self._retry_interval
        self._next_retry = 0.0
        self._lock = threading.Lock()
        self.aborted = False
        self.rejected = SetAside(self.spool.directory)
        self._warned_rejected = False
        self._unspooled: weakref.WeakSet[ReadableSpan] = weakref.WeakSet()  # spans the spool could not write
        self._unspooled_lock = threading.Lock()

    def forked(self, rebuild: Callable[[], SpanExporter] | None) -> None:
        """In a forked child: the parent's failed spans are the parent's to send
        (they are in its segments); a new exporter when one can be built, so no
        connection is shared with the parent."""
        self._start()
        if rebuild is not None:
            self.inner = rebuild()

    def not_spooled(self, span: ReadableSpan) -> None:
        """``span`` could not be written to the spool: if its export fails it is lost (``spool_write_failed``)."""
        with self._unspooled_lock:
            self._unspooled.add(span)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock:
            if self.aborted:  # exit gave up on the collector: keep everything for replay
                self._keep(spans)
                return SpanExportResult.FAILURE
            self._retry(force=False)
            if self.failed:  # older spans still wait: keep the order, don't send newer ones yet
                self._keep(spans)
                return SpanExportResult.FAILURE
            unsent = self._deliver(spans)
            if unsent:
                self._keep(unsent)
                self._schedule_retry()
                return SpanExportResult.FAILURE
            return SpanExportResult.SUCCESS

    def retry_now(self) -> bool:
        with self._lock:
            self._retry(force=True)
            return not self.failed

    def _send(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            self.spool.faults.warn("exporter_raised", "orch-otel: the span exporter raised; the spans stay in the spool")
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            self.spool.ack([format(s.context.span_id, "016x") for s in spans])
        return result

    def _deliver(self, spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
        """Send, setting aside each span the collector refuses alone; returns
        the spans left unsent because the collector is unavailable."""
        return deliver(self._send, spans, set_aside=self._set_aside, give_up=lambda: self.aborted)

    def _set_aside(self, span: ReadableSpan, refusal: Refusal) -> None:
        # Counted as lost for the collector, kept in rejected.aside; a failed write
        # still lets it go: a span kept for ever would block every later one.
        try:
            self.rejected.add_span(span, refusal)
        except Exception:
            log_fault(_log, logging.WARNING, "orch-otel: could not set aside a refused span in %s", self.rejected.path)
        self.spool.ack([format(span.context.span_id, "016x")])
        self.losses.lost(1, "rejected")
        if not self._warned_rejected:
            self._warned_rejected = True
            _log.warning("orch-otel: the collector refused a span for good (HTTP %s); it is set aside in %s "
                         "(orch-otel spool status %s) and export goes on", refusal.http_status or "status unknown",
                         self.rejected.path, self.spool.directory)

    def _keep(self, spans: Sequence[ReadableSpan]) -> None:
        for span in spans:
            span_id = format(span.context.span_id, "016x")
            if span_id in self.spool:
                self.failed.add(span_id)
                continue
            with self._unspooled_lock:
                write_failed = span in self._unspooled
            self.losses.lost(1, "spool_write_failed" if write_failed else "spool_full")

    def _retry(self, *, force: bool) -> None:
        if not self.failed or (not force and time.monotonic() < self._next_retry):
            return
        batch: list[SpanRecord] = []
        for record in self.spool.records(set(self.failed)):
            batch.append(record)
            if len(batch) == 512 and not self._resend(batch):
                return
        if batch and not self._resend(batch):
            return
        # left over: not readable from the spool, or their segment was removed from outside
        removed = self.spool.forget_removed(self.failed)
        self.losses.lost(removed, "spool_removed")
        self.losses.lost(len(self.failed) - removed, "spool_unreadable")
        self.failed.clear()
        self._backoff = self._retry_interval

    def _resend(self, batch: list[SpanRecord]) -> bool:
        unsent = {format(s.context.span_id, "016x") for s in self._deliver([to_readable_span(r) for r in batch])}
        self.failed.difference_update(r.span_id for r in batch if r.span_id not in unsent)
        batch.clear()
        if unsent:
            self._schedule_retry()
            return False
        return True

    def _schedule_retry(self) -> None:
        self._next_retry = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, _MAX_BACKOFF_S)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def abort(self) -> None:
        """Stop waiting for the collector (at exit): the exporter's own retries
        end and later sends fail at once, so the unsent spans stay spooled."""
        if self.aborted:
            return
        self.aborted = True
        try:
            self.inner.shutdown()
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: exporter shutdown failed")

    def shutdown(self) -> None:
        with self._lock:
            if not self.aborted:
                self._retry(force=True)
            if self.failed:
                _log.warning(
                    "orch-otel: %d span(s) could not be exported and remain in %s; "
                    "re-send them with: orch-otel spool replay %s",
                    len(self.failed), self.spool.directory, self.spool.directory,
                )
        self.spool.close()
        self.abort()


class DurableBatchSpanProcessor(AccountedBatchSpanProcessor):
    """A batch processor whose spans go to an on-disk spool first (see module doc).

    The app never waits long for the collector. ``force_flush`` waits at most
    ``flush_timeout_s`` (default ``$ORCH_OTEL_FLUSH_TIMEOUT_MS``, 2 s; a shorter
    ``timeout_millis`` wins) and then returns False while the export goes on in
    the background. Shutdown (at exit) waits at most ``shutdown_timeout_s`` in all
    (default ``$ORCH_OTEL_SHUTDOWN_TIMEOUT_MS``, 2 s), then stops the exporter's
    retries. Either way the spans not yet taken stay in the spool: the OTLP
    exporters retry with backoff for up to their own timeout (10 s) per batch,
    which a flush or exit must not wait out.
    """

    def __init__(self, span_exporter: SpanExporter, spool_dir: str | os.PathLike[str], *,
                 max_spool_bytes: int = 256 * 1024 * 1024, retry_interval_s: float = 1.0,
                 shutdown_timeout_s: float | None = None, flush_timeout_s: float | None = None,
                 component: str | None = None, rebuild: Callable[[], SpanExporter] | None = None,
                 **kwargs) -> None:
        self.shutdown_timeout_s = env.shutdown_timeout_s() if shutdown_timeout_s is None else shutdown_timeout_s
        self.flush_timeout_s = env.flush_timeout_s() if flush_timeout_s is None else flush_timeout_s
        self.spool = SpanSpool(spool_dir, max_bytes=max_spool_bytes)
        losses = LossReport(component or type(span_exporter).__name__)
        self.sender = _SpoolingExporter(span_exporter, self.spool, losses, retry_interval_s)
        self._rebuild = rebuild  # makes the exporter anew in a forked child
        self._flush_lock = threading.Lock()
        self._flusher: _BackgroundCall | None = None
        self._losses_flushed = 0  # losses counted when flush last returned
        super().__init__(self.sender, losses=losses, **kwargs)

    def _forked(self) -> None:
        """A forked child: its own segments, exporter and locks; no flush of the
        parent's to wait for (its thread is not in the child)."""
        super()._forked()
        self.spool.forked()
        try:
            self.sender.forked(self._rebuild)
        finally:
            self._flush_lock = threading.Lock()
            self._flusher = None
            self._losses_flushed = 0

    def on_end(self, span: ReadableSpan) -> None:
        if inherited(span):
            return
        if span.context.trace_flags.sampled:
            try:
                self.spool.append(from_readable_span(span))  # full: counted if its export then fails
            except Exception:  # an unwritable disk, say: logged without content (the app's exception may be the context)
                self.sender.not_spooled(span)
                self.spool.faults.warn("spool_write", "orch-otel: could not write a span to the spool %s; it is "
                                       "still exported, but lost if that fails", self.spool.directory)
        super().on_end(span)

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        wait_s = self.flush_timeout_s
        if timeout_millis is not None:
            wait_s = min(wait_s, max(timeout_millis, 0) / 1000)
        deadline = time.monotonic() + wait_s
        while True:
            with self._flush_lock:
                job, ours = self._flusher, False
                if job is None or job.done.is_set():
                    job = self._flusher = _BackgroundCall(self._flush_now, "orch-otel-spool-flush")
                    ours = True
            if not job.done.wait(max(0.0, deadline - time.monotonic())):
                return False  # still sending: the rest is in the spool
            if ours:
                return job.result
            # an earlier flush was still running and has finished: it may predate spans ended since

    def _flush_now(self) -> bool:
        """True when every span ended before it reached the collector or was set
        aside (``rejected.aside``): none is left to send, and none was lost since
        the last flush returned."""
        flushed = AccountedBatchSpanProcessor.force_flush(self)
        sent = self.sender.retry_now() and flushed
        before, self._losses_flushed = self._losses_flushed, self.losses.total - self.losses.counts.get("rejected", 0)
        return sent and self._losses_flushed == before

    def shutdown(self) -> None:
        # Send what is queued and close the spool on a helper thread, so a dead or
        # slow collector costs exit at most the timeout: near its end the exporter
        # is told to give up, and whatever it did not take stays in the spool.
        deadline = time.monotonic() + self.shutdown_timeout_s
        grace = min(_ABORT_GRACE_S, self.shutdown_timeout_s / 4)
        closer = _BackgroundCall(lambda: AccountedBatchSpanProcessor.shutdown(self), "orch-otel-spool-shutdown")
        if closer.done.wait(max(0.0, deadline - grace - time.monotonic())):
            return
        self.sender.abort()
        if closer.done.wait(max(0.0, deadline - time.monotonic())):
            return
        # a request still hangs on the network: its spans are spooled already
        _log.warning(
            "orch-otel: the collector did not answer within %.1f s; the unsent spans remain in %s; "
            "re-send them with: orch-otel spool replay %s",
            self.shutdown_timeout_s, self.spool.directory, self.spool.directory,
        )


class _BackgroundCall:
    """``fn()`` on a daemon thread, so that the caller can stop waiting for it;
    ``done`` is set when it returned, ``result`` is its value (False if it raised)."""

    def __init__(self, fn, name: str) -> None:
        self.done = threading.Event()
        self.result = False
        try:
            threading.Thread(target=self._run, args=(fn,), name=name, daemon=True).start()
        except RuntimeError:  # no new threads this late in interpreter shutdown
            self._run(fn)

    def _run(self, fn) -> None:
        try:
            self.result = bool(fn())
        except Exception:
            log_fault(_log, logging.WARNING, "orch-otel: flushing or closing the spool failed")
        finally:
            self.done.set()
