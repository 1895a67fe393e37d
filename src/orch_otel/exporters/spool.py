"""Durable export: a bounded on-disk spool in front of any span exporter.

Every finished span is appended to a write-ahead log (one JSON span record per
line, segment files ``wal-*.spool``) before it is queued for export, so a span
that ended survives the process being killed. Segments are deleted once all
their spans were exported. When the collector is unreachable or rejects a
batch, the spans stay in the spool and are re-sent, oldest first, when it comes
back; ``orch-otel spool replay`` re-sends the spool a dead process left.
Delivery is at least once: a replay may repeat spans the collector already
has (the offline reader drops duplicate span ids). A span the collector refuses
for good (HTTP 413 and other non-retryable refusals) is set aside in
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import orjson
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import env
from ..faults import log_fault
from ..spans import SpanRecord, from_readable_span, record_from_dict, record_to_dict, to_readable_span
from .batching import AccountedBatchSpanProcessor, LossReport, RateLimitedFaults
from .rejections import Refusal, SetAside, deliver, quarantine_lines

_log = logging.getLogger(__name__)
SUFFIX = ".spool"
CLOSED = ".closed"  # marks a segment its writer left behind on shutdown
_MAX_BACKOFF_S = 30.0
_ABORT_GRACE_S = 0.5  # at most, of the shutdown wait: for the exporter to notice the abort and the spool to close


class _Segment:
    __slots__ = ("path", "handle", "unacked", "size", "records", "vanished")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.handle: IO[bytes] | None = open(path, "ab")
        self.unacked: set[str] = set()
        self.size = 0
        self.records = 0
        self.vanished = False  # its file was removed from outside: its unacked spans cannot be re-sent


def _unlinked(segment: _Segment) -> bool:
    """The open segment's file is no longer in any directory (it, or its directory, was removed)."""
    return segment.handle is not None and os.fstat(segment.handle.fileno()).st_nlink == 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # removed meanwhile
        return 0


class SpanSpool:
    """This process's write-ahead log of finished spans, bounded in bytes."""

    def __init__(self, directory: str | os.PathLike[str], *, max_bytes: int, segment_records: int = 1000) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.segment_records = segment_records
        self.bytes = sum(_size(p) for p in self.directory.glob(f"*{SUFFIX}"))  # leftovers count too
        self._prefix = f"wal-{time.time_ns():020d}-{os.getpid()}"
        self._seq = 0
        self._active: _Segment | None = None
        self._segments: dict[Path, _Segment] = {}  # insertion order = write order
        self._segment_of: dict[str, _Segment] = {}
        self._lock = threading.Lock()
        self.faults = RateLimitedFaults(_log)

    def __contains__(self, span_id: str) -> bool:
        return span_id in self._segment_of

    def append(self, record: SpanRecord) -> bool:
        """Write a span durably (to the OS); False when the spool is full."""
        line = orjson.dumps(record_to_dict(record), option=orjson.OPT_NON_STR_KEYS) + b"\n"
        with self._lock:
            segment = self._active
            if segment is not None and _unlinked(segment):  # writing on would go to a file no one can read
                self._vanish(segment)
                segment = None
            if self.bytes + len(line) > self.max_bytes:
                return False
            if segment is None:
                segment = self._open_segment()
            segment.handle.write(line)  # type: ignore[union-attr]
            segment.handle.flush()  # type: ignore[union-attr]  # in the kernel now: survives SIGKILL
            segment.size += len(line)
            segment.records += 1
            segment.unacked.add(record.span_id)
            self._segment_of[record.span_id] = segment
            self.bytes += len(line)
            if segment.records >= self.segment_records:
                self._close(segment)
        return True

    def ack(self, span_ids: Sequence[str]) -> None:
        """These spans reached the collector: drop segments that are done."""
        with self._lock:
            for span_id in span_ids:
                segment = self._segment_of.pop(span_id, None)
                if segment is None:
                    continue
                segment.unacked.discard(span_id)
                if not segment.unacked and (segment.vanished or segment.records >= self.segment_records):
                    self._remove(segment)

    def records(self, span_ids: set[str]) -> Iterator[SpanRecord]:
        """The spooled records of ``span_ids``, in the order they were written."""
        with self._lock:
            segments = list(self._segments.values())
        for segment in segments:
            if segment.vanished:
                continue
            try:
                lines = list(read_segment(segment.path))  # a segment holds at most segment_records lines
            except FileNotFoundError:  # removed from outside
                with self._lock:
                    self._vanish(segment)
                continue
            for record, _ in lines:
                if record is not None and record.span_id in span_ids:
                    yield record

    def forget_removed(self, span_ids: set[str]) -> int:
        """Forget those of ``span_ids`` whose segment was removed from outside
        (they can never be re-sent); returns how many."""
        forgotten = 0
        with self._lock:
            for span_id in span_ids:
                segment = self._segment_of.get(span_id)
                if segment is None or not segment.vanished:
                    continue
                del self._segment_of[span_id]
                segment.unacked.discard(span_id)
                if not segment.unacked:
                    self._segments.pop(segment.path, None)
                forgotten += 1
        return forgotten

    def close(self) -> None:
        """Close files; remove fully exported segments; mark the rest closed
        (no live writer) for replay, keeping only their spans not yet exported."""
        with self._lock:
            for segment in list(self._segments.values()):
                self._close(segment)
                if segment.vanished:
                    continue
                if not segment.unacked:
                    self._remove(segment)
                    continue
                closed = segment.path.with_name(segment.path.name.replace(SUFFIX, CLOSED + SUFFIX))
                try:
                    if len(segment.unacked) < segment.records:  # partly exported: a replay must not repeat that part
                        _keep_only(segment.path, segment.unacked, closed)
                    else:
                        segment.path.rename(closed)
                except OSError:  # removed from outside, say; a dead writer's segment is replayed all the same
                    self.faults.warn("spool_close", "orch-otel: could not mark spool segment %s closed",
                                     segment.path.name)
            self._segments.clear()
            self._segment_of.clear()

    def _open_segment(self) -> _Segment:
        self._seq += 1
        path = self.directory / f"{self._prefix}-{self._seq:08d}{SUFFIX}"
        try:
            segment = _Segment(path)
        except FileNotFoundError:  # the directory was removed from outside: make it again
            self.directory.mkdir(parents=True, exist_ok=True)
            self.faults.warn("spool_dir_removed", "orch-otel: the spool directory %s was removed; made it again",
                             self.directory)
            segment = _Segment(path)
        self._active = segment
        self._segments[path] = segment
        return segment

    def _vanish(self, segment: _Segment) -> None:
        """``segment``'s file was removed from outside: its bytes are free and
        its unacked spans can no longer be re-sent (counted when they fail)."""
        self._close(segment)
        if not segment.vanished:
            segment.vanished = True
            self.bytes -= segment.size
            segment.size = 0
        if not segment.unacked:
            self._segments.pop(segment.path, None)

    def _close(self, segment: _Segment) -> None:
        if segment.handle is not None:
            segment.handle.close()
            segment.handle = None
        if segment is self._active:
            self._active = None

    def _remove(self, segment: _Segment) -> None:
        self._close(segment)
        self._segments.pop(segment.path, None)
        self.bytes -= segment.size
        segment.path.unlink(missing_ok=True)


def _keep_only(path: Path, span_ids: set[str], target: Path) -> None:
    """Write the lines of ``path`` for ``span_ids`` (and any unreadable line, for
    replay to report) to ``target``, then remove ``path``. The new file appears
    whole (a rename); a crash before the removal leaves both: replayed twice."""
    partial = target.with_name(target.name + ".partial")  # not a segment name: never replayed half-written
    with open(path, "rb") as source, open(partial, "wb") as kept:
        for raw in source:
            try:
                wanted = orjson.loads(raw).get("span_id") in span_ids
            except (orjson.JSONDecodeError, AttributeError):
                wanted = True
            if wanted:
                kept.write(raw)
    os.replace(partial, target)
    path.unlink()


def read_segment(path: Path) -> Iterator[tuple[SpanRecord | None, str | None]]:
    """(record, None) per good line, (None, "path:line: reason") per bad one
    (a process killed mid-write leaves at most one truncated last line)."""
    for lineno, _, record, problem in segment_lines(path):
        yield record, (None if problem is None else f"{path}:{lineno}: {problem}")


def segment_lines(path: Path) -> Iterator[tuple[int, bytes, SpanRecord | None, str | None]]:
    """(line number, raw line, record or None, reason it is unreadable or None) per line."""
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                yield lineno, raw, record_from_dict(orjson.loads(raw)), None
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                yield lineno, raw, None, f"{type(exc).__name__}: {exc}"


class _SpoolingExporter(SpanExporter):
    """Sends through ``inner``; keeps failed spans in the spool and re-sends them first."""

    def __init__(self, inner: SpanExporter, spool: SpanSpool, losses: LossReport, retry_interval_s: float) -> None:
        self.inner = inner
        self.spool = spool
        self.losses = losses
        self.failed: set[str] = set()
        self._retry_interval = retry_interval_s
        self._backoff = retry_interval_s
        self._next_retry = 0.0
        self._lock = threading.Lock()
        self.aborted = False
        self.rejected = SetAside(spool.directory)
        self._warned_rejected = False
        self._unspooled: weakref.WeakSet[ReadableSpan] = weakref.WeakSet()  # spans the spool could not write
        self._unspooled_lock = threading.Lock()

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
                 component: str | None = None, **kwargs) -> None:
        self.shutdown_timeout_s = env.shutdown_timeout_s() if shutdown_timeout_s is None else shutdown_timeout_s
        self.flush_timeout_s = env.flush_timeout_s() if flush_timeout_s is None else flush_timeout_s
        self.spool = SpanSpool(spool_dir, max_bytes=max_spool_bytes)
        losses = LossReport(component or type(span_exporter).__name__)
        self.sender = _SpoolingExporter(span_exporter, self.spool, losses, retry_interval_s)
        self._flush_lock = threading.Lock()
        self._flusher: _BackgroundCall | None = None
        super().__init__(self.sender, losses=losses, **kwargs)

    def on_end(self, span: ReadableSpan) -> None:
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
        flushed = AccountedBatchSpanProcessor.force_flush(self)
        return self.sender.retry_now() and flushed

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


@dataclass
class ReplayResult:
    sent: int = 0
    files_done: int = 0
    files_left: int = 0
    skipped_live: int = 0
    bad_lines: list[str] = field(default_factory=list)
    quarantined: int = 0  # unreadable lines moved to unreadable.aside
    set_aside: dict[str, int] = field(default_factory=dict)  # refused spans put in rejected.aside, by reason


def _pid_alive(pid: int) -> bool:
    if pid <= 0:  # os.kill(0, ...) would signal our own process group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def spool_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Spool segments in write order (their names sort by start time, pid, sequence)."""
    return sorted(Path(directory).glob(f"wal-*{SUFFIX}"))


def replay(directory: str | os.PathLike[str], exporter: SpanExporter, *, include_live: bool = False,
           batch_size: int = 512) -> ReplayResult:
    """Re-send the spool of dead processes, oldest first. A span the collector
    refuses for good is set aside (``rejected.aside``) and unreadable lines are
    moved to ``unreadable.aside`` (segment and line named); a segment is deleted
    once all of it was sent or set aside. Stops, leaving the rest, when the
    collector is unavailable."""
    result = ReplayResult()
    aside = SetAside(directory)
    files = spool_files(directory)
    for index, path in enumerate(files):
        if not include_live and CLOSED not in path.name and _pid_alive(_writer_pid(path)):
            result.skipped_live += 1
            continue
        batch: list[ReadableSpan] = []
        unreadable: list[tuple[int, bytes, str]] = []
        ok = True
        for lineno, raw, record, problem in segment_lines(path):
            span = None
            if problem is None:
                try:
                    span = to_readable_span(record)  # type: ignore[arg-type]
                except (KeyError, TypeError, ValueError) as exc:  # e.g. ids that are not hex
                    problem = f"{type(exc).__name__}: {exc}"
            if span is None:
                unreadable.append((lineno, raw, problem))  # type: ignore[arg-type]
                result.bad_lines.append(f"{path}:{lineno}: {problem}")
                continue
            batch.append(span)
            if len(batch) == batch_size:
                ok = _replay_batch(exporter, batch, result, aside)
                if not ok:
                    break
        if ok and batch:
            ok = _replay_batch(exporter, batch, result, aside)
        if ok and unreadable:
            try:
                quarantine_lines(directory, path.name, unreadable)
                result.quarantined += len(unreadable)
            except OSError:
                log_fault(_log, logging.WARNING, "orch-otel: could not move unreadable lines aside; %s is kept", path)
                ok = False
        if not ok:
            result.files_left = len(files) - index
            return result
        path.unlink()
        result.files_done += 1
    return result


def _writer_pid(path: Path) -> int:
    """The pid in a segment name (``wal-<ns>-<pid>-<seq>.spool``); 0 (no live writer) when it has none."""
    try:
        return int(path.name.split("-")[2])
    except (IndexError, ValueError):
        return 0


def _replay_batch(exporter: SpanExporter, batch: list[ReadableSpan], result: ReplayResult, aside: SetAside) -> bool:
    """Send one batch (refused spans set aside); False when some of it is neither sent nor set aside."""
    refused = not_kept = 0

    def set_aside(span: ReadableSpan, refusal: Refusal) -> None:
        nonlocal refused, not_kept
        refused += 1
        try:
            aside.add_span(span, refusal)
        except OSError:
            log_fault(_log, logging.WARNING, "orch-otel: could not set aside a refused span in %s", aside.path)
            not_kept += 1
            return
        result.set_aside[refusal.reason] = result.set_aside.get(refusal.reason, 0) + 1

    unsent = deliver(exporter.export, batch, set_aside=set_aside)
    result.sent += len(batch) - len(unsent) - refused
    batch.clear()
    return not unsent and not not_kept
