"""The durable spool: this process's write-ahead log of finished spans, on disk.

Every finished span is appended (one span-dump line, :func:`orch_otel.spans.dump_line`,
in one ``write``) to a segment file ``wal-<start ns>-<pid>-<seq>.spool`` before
it is queued for export, so a span that ended survives the process being
killed. Spans the collector took are noted in their segment as they are
(``{"acked": [span ids]}`` lines), so a replay after any death, SIGTERM or
SIGKILL, skips them. A segment is deleted once all its spans were exported;
one its writer left behind on shutdown is renamed ``*.closed.spool``, keeping
only its spans not yet exported. The spool is bounded in bytes, for the whole
directory however many processes write to it, and a live writer holds a lock
that ``spool replay`` respects (:mod:`.spool_dir`); a forked child writes
segments of its own (:meth:`SpanSpool.forked`). A directory removed from
outside is made again on the next write.

``durable.py`` exports through this spool; ``spool_replay.py`` re-sends the
segments a dead process left.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson

from ..spans import SpanRecord, dump_line, record_from_dict
from ..tracefiles import private_mkdir, private_open, private_opener
from .batching import RateLimitedFaults
from .spool_dir import DirectoryBytes, WriterLock

_log = logging.getLogger(__name__)
SUFFIX = ".spool"
CLOSED = ".closed"  # marks a segment its writer left behind on shutdown
ACKED = b'{"acked":'  # starts a line naming spans of the segment the collector took


class _Segment:
    __slots__ = ("path", "fd", "unacked", "size", "records", "vanished")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd: int | None = private_open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self.unacked: set[str] = set()
        self.size = 0
        self.records = 0
        self.vanished = False  # its file was removed from outside: its unacked spans cannot be re-sent


def _unlinked(segment: _Segment) -> bool:
    """The open segment's file is no longer in any directory (it, or its directory, was removed)."""
    return segment.fd is not None and os.fstat(segment.fd).st_nlink == 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # removed meanwhile
        return 0


class SpanSpool:
    """This process's write-ahead log of finished spans, bounded in bytes."""

    def __init__(self, directory: str | os.PathLike[str], *, max_bytes: int, segment_records: int = 1000) -> None:
        self.directory = Path(directory)
        private_mkdir(self.directory)
        self.max_bytes = max_bytes
        self.segment_records = segment_records
        self._shared = DirectoryBytes(self.directory, lambda: sum(_size(p) for p in spool_files(self.directory)))
        self._start()

    def _start(self) -> None:
        self._prefix = f"wal-{time.time_ns():020d}-{os.getpid()}"
        self._live = WriterLock(self.directory / f"{self._prefix}.live")
        self._seq = 0
        self._active: _Segment | None = None
        self._segments: dict[Path, _Segment] = {}  # insertion order = write order
        self._segment_of: dict[str, _Segment] = {}
        self._lock = threading.Lock()
        self.faults = RateLimitedFaults(_log)

    @property
    def bytes(self) -> int:
        """Bytes of this process's segments on disk."""
        return self._shared.own

    def forked(self) -> None:
        """In a forked child: segments of its own, under a new name; the parent's
        are the parent's to send, acknowledge and remove."""
        for segment in self._segments.values():
            if segment.fd is not None:
                os.close(segment.fd)  # our copy only; nothing buffered, nothing flushed
        self._live.forget()
        self._shared.forget()
        self._start()

    def __contains__(self, span_id: str) -> bool:
        return span_id in self._segment_of

    def append(self, record: SpanRecord) -> bool:
        """Write a span durably (to the OS); False when the spool is full."""
        line = dump_line(record)
        with self._lock:
            segment = self._active
            if segment is not None and _unlinked(segment):  # writing on would go to a file no one can read
                self._vanish(segment)
                segment = None
            if segment is None:
                segment = self._open_segment()
            if not self._shared.append(segment.fd, line, self.max_bytes):  # type: ignore[arg-type]
                return False
            segment.size += len(line)  # in the kernel now: survives SIGKILL
            segment.records += 1
            segment.unacked.add(record.span_id)
            self._segment_of[record.span_id] = segment
            if segment.records >= self.segment_records:
                self._close(segment)
        return True

    def ack(self, span_ids: Sequence[str]) -> None:
        """These spans reached the collector: drop segments that are done, and
        note the rest in their segment, so a replay does not send them again."""
        with self._lock:
            acked: dict[_Segment, list[str]] = {}
            for span_id in span_ids:
                segment = self._segment_of.pop(span_id, None)
                if segment is None:
                    continue
                segment.unacked.discard(span_id)
                acked.setdefault(segment, []).append(span_id)
            for segment, ids in acked.items():
                if not segment.unacked and (segment.vanished or segment.records >= self.segment_records):
                    self._remove(segment)
                elif not segment.vanished:
                    self._note_acked(segment, ids)

    def _note_acked(self, segment: _Segment, span_ids: list[str]) -> None:
        line = ACKED + orjson.dumps(span_ids) + b"}\n"
        try:
            fd = segment.fd if segment.fd is not None else os.open(segment.path, os.O_WRONLY | os.O_APPEND)
            try:
                self._shared.append(fd, line, None)  # acks are never refused: the segment goes once all are in
                segment.size += len(line)
            finally:
                if fd != segment.fd:
                    os.close(fd)
        except OSError:  # a replay would send them again: at least once, as documented
            self.faults.warn("spool_ack", "orch-otel: could not note exported spans in spool segment %s",
                             segment.path.name)

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
                        self._shared.removed(segment.size - _keep_only(segment.path, segment.unacked, closed))
                    else:
                        segment.path.rename(closed)
                except OSError:  # removed from outside, say; a dead writer's segment is replayed all the same
                    self.faults.warn("spool_close", "orch-otel: could not mark spool segment %s closed",
                                     segment.path.name)
            self._segments.clear()
            self._segment_of.clear()
            self._live.release()
            self._shared.close()

    def _open_segment(self) -> _Segment:
        self._live.hold()  # before the segment exists: a replay never finds it without its writer's lock
        self._seq += 1
        path = self.directory / f"{self._prefix}-{self._seq:08d}{SUFFIX}"
        try:
            segment = _Segment(path)
        except FileNotFoundError:  # the directory was removed from outside: make it again
            private_mkdir(self.directory)
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
            self._shared.removed(segment.size)
            segment.size = 0
        if not segment.unacked:
            self._segments.pop(segment.path, None)

    def _close(self, segment: _Segment) -> None:
        if segment.fd is not None:
            os.close(segment.fd)
            segment.fd = None
        if segment is self._active:
            self._active = None

    def _remove(self, segment: _Segment) -> None:
        self._close(segment)
        self._segments.pop(segment.path, None)
        segment.path.unlink(missing_ok=True)
        self._shared.removed(segment.size)


def _keep_only(path: Path, span_ids: set[str], target: Path) -> int:
    """Write the lines of ``path`` for ``span_ids`` (and any unreadable line, for
    replay to report) to ``target``, then remove ``path``; returns its size. The
    new file appears whole (a rename); a crash before the removal leaves both,
    and the acknowledgements in ``path`` keep a replay from sending twice."""
    partial = target.with_name(target.name + ".partial")  # not a segment name: never replayed half-written
    size = 0
    with open(path, "rb") as source, open(partial, "wb", opener=private_opener) as kept:
        for raw in source:
            if raw.startswith(ACKED):
                continue
            try:
                wanted = orjson.loads(raw).get("span_id") in span_ids
            except (orjson.JSONDecodeError, AttributeError):
                wanted = True
            if wanted:
                kept.write(raw)
                size += len(raw)
    os.replace(partial, target)
    path.unlink()
    return size


def read_segment(path: Path) -> Iterator[tuple[SpanRecord | None, str | None]]:
    """(record, None) per good line, (None, "path:line: reason") per bad one
    (a process killed mid-write leaves at most one truncated last line)."""
    for lineno, _, record, problem in segment_lines(path):
        yield record, (None if problem is None else f"{path}:{lineno}: {problem}")


def segment_lines(path: Path) -> Iterator[tuple[int, bytes, SpanRecord | None, str | None]]:
    """(line number, raw line, record or None, reason it is unreadable or None)
    per span line (acknowledgement lines are not spans: :func:`acked_in`)."""
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if raw.startswith(ACKED):
                continue
            try:
                yield lineno, raw, record_from_dict(orjson.loads(raw)), None
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                yield lineno, raw, None, f"{type(exc).__name__}: {exc}"


def acked_in(path: Path) -> set[str]:
    """The span ids of ``path`` its writer noted the collector took."""
    acked: set[str] = set()
    with open(path, "rb") as handle:
        for raw in handle:
            if raw.startswith(ACKED):
                try:
                    acked.update(orjson.loads(raw)["acked"])
                except (orjson.JSONDecodeError, KeyError, TypeError):
                    continue  # a torn last line: its spans may be sent again
    return acked


def spool_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Spool segments in write order (their names sort by start time, pid, sequence)."""
    return sorted(Path(directory).glob(f"wal-*{SUFFIX}"))


def writer_pid(path: Path) -> int:
    """The pid in a segment name (``wal-<ns>-<pid>-<seq>.spool``); 0 (no live writer) when it has none."""
    try:
        return int(path.name.split("-")[2])
    except (IndexError, ValueError):
        return 0
