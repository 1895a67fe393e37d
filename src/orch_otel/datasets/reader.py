"""Reading trace lines for datasets: streaming, one line at a time, each
checked (:func:`parse_trace`); a bad line is reported (``file:line: reason``)
and kept aside, never dropped. The content the views read comes from
:class:`orch_otel.tracefiles.ContentIndex`."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .._inputs import TooLong, Unreadable
from .._validation import trace_errors
from ..tracefiles import SPAN_LOG_LINE, file_lines, find_trace_files, is_span_record
from ..vocabulary import EventKind
from .checks import event_error, trace_error

_EVENT_TYPES = frozenset(k.value for k in EventKind)


@dataclass(frozen=True)
class RawLine:
    """One non-empty line of a trace file, not yet parsed."""

    path: str
    lineno: int
    raw: bytes
    error: str | None = None  # a line that cannot be read (longer than the line limit): why
    length: int = 0  # with ``error``: the bytes of the line, skipped

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}"

    @property
    def size(self) -> int:
        """The bytes of the line in its file, its end included."""
        return self.length if self.error else len(self.raw) + 1


def raw_lines(path: str | os.PathLike[str], start: int = 0, end: int = -1, first: int = 1) -> Iterator[RawLine]:
    """Every non-empty line of one trace file, without its line end; or of its
    byte range ``start`` to ``end`` whose first line is number ``first``."""
    name = str(path)
    for lineno, raw in file_lines(path, start, end, first):
        if isinstance(raw, TooLong):
            yield RawLine(name, lineno, b"", raw.reason, raw.size)
        else:
            yield RawLine(name, lineno, raw.rstrip(b"\r\n"))


def iter_raw_lines(paths: Sequence[str | os.PathLike[str]]) -> Iterator[RawLine]:
    """Every non-empty line of the trace files named by ``paths`` (files, or
    directories searched for ``*.jsonl`` outside their ``content/`` store).
    A file that cannot be read (missing, a FIFO, a symlink loop) raises ``Unreadable``."""
    files, unread = find_trace_files(paths)
    if unread:
        raise Unreadable(unread[0].where, unread[0].reason)
    for path in files:
        yield from raw_lines(path)


class LineLookup:
    """The line ``path:lineno`` names, read again, as :func:`iter_raw_lines`
    read it: for a trace set aside after its line was let go (rows a writer
    cannot take, a duplicate). Lookups come in input order, so one forward
    pass per file serves them all."""

    def __init__(self) -> None:
        self._path: str | None = None
        self._lines: Iterator[RawLine] = iter(())
        self._last = 0

    def __call__(self, where: str) -> bytes:
        path, _, number = where.rpartition(":")
        lineno = int(number)
        if path != self._path or lineno <= self._last:
            self.close()
            self._lines, self._path = raw_lines(path), path
        for line in self._lines:
            self._last = line.lineno
            if line.lineno == lineno:
                return line.raw
        return b""

    def close(self) -> None:
        close = getattr(self._lines, "close", None)
        if close is not None:  # the file of the reader part way through
            close()
        self._path, self._lines, self._last = None, iter(()), 0


class BadTrace(ValueError):
    """A line that is not a usable trace; the message says why."""


def parse_trace(line: RawLine, *, validate: bool = False) -> dict[str, Any]:
    """Parse and check one line. The light check covers what the views rely
    on (:mod:`.checks`: field types, nesting); ``validate=True`` runs the full
    schema and contract check as well."""
    try:
        trace = orjson.loads(line.raw)
    except orjson.JSONDecodeError as exc:
        raise BadTrace(f"malformed JSON: {exc}") from None
    return check_trace(trace, validate=validate)


def check_trace(trace: Any, *, validate: bool = False) -> dict[str, Any]:
    """:func:`parse_trace`'s checks of a line already parsed."""
    if not isinstance(trace, dict):
        raise BadTrace(f"expected a JSON object (one trace per line), got {type(trace).__name__}")
    if is_span_record(trace):
        raise BadTrace(SPAN_LOG_LINE)
    for key in ("trace_id", "task_id"):
        if not isinstance(trace.get(key), str) or not trace[key]:
            raise BadTrace(f"{key}: missing or not a non-empty string")
    events = trace.get("events")
    if not isinstance(events, list) or not events:
        raise BadTrace("events: missing or empty")
    for k, event in enumerate(events):
        if not isinstance(event, dict):
            raise BadTrace(f"events[{k}]: not an object")
        if event.get("type") not in _EVENT_TYPES:
            raise BadTrace(f"events[{k}].type: {event.get('type')!r} is not an event type")
        if not isinstance(event.get("id"), str) or not isinstance(event.get("agent"), str):
            raise BadTrace(f"events[{k}]: needs string 'id' and 'agent'")
        t = event.get("t")
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t < 0:
            raise BadTrace(f"events[{k}].t: {t!r} is not a number >= 0")
        error = event_error(event)
        if error is not None:
            raise BadTrace(f"events[{k}].{error}")
    error = trace_error(trace)
    if error is not None:
        raise BadTrace(error)
    if validate:
        errors = trace_errors(trace)
        if errors:
            raise BadTrace("; ".join(errors[:5]) + (f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""))
    return trace
