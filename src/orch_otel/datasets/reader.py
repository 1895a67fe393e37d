"""Reading trace files for datasets: streaming, one line at a time, with every
bad line reported (``file:line: reason``) and kept aside, never dropped.

The content store (``content/content-*.jsonl`` beside the traces) is indexed,
not loaded: the index keeps each ref's file and byte offset, and the text is
read back only when a view asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from ..tracefiles import BOM, numbered_lines, trace_files
from ..validation import trace_errors
from ..vocabulary import EventKind
from .checks import event_error, trace_error

_EVENT_TYPES = frozenset(k.value for k in EventKind)


@dataclass(frozen=True)
class RawLine:
    """One non-empty line of a trace file, not yet parsed."""

    path: str
    lineno: int
    raw: bytes

    @property
    def where(self) -> str:
        return f"{self.path}:{self.lineno}"


def iter_raw_lines(paths: Sequence[str | os.PathLike[str]]) -> Iterator[RawLine]:
    """Every non-empty line of the trace files named by ``paths`` (files, or
    directories searched for ``*.jsonl`` outside their ``content/`` store)."""
    for path in trace_files(paths):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such trace file")
        with open(path, "rb") as handle:
            for lineno, raw in numbered_lines(handle):
                if raw.strip():
                    yield RawLine(str(path), lineno, raw.rstrip(b"\r\n"))


class LineLookup:
    """The line ``path:lineno`` names, read again, as :func:`iter_raw_lines`
    read it: for a trace set aside after its line was let go (rows a writer
    cannot take, a duplicate). Lookups come in input order, so one forward
    pass per file serves them all."""

    def __init__(self) -> None:
        self._path: str | None = None
        self._handle: IO[bytes] | None = None
        self._lines: Iterator[tuple[int, bytes]] = iter(())
        self._last = 0

    def __call__(self, where: str) -> bytes:
        path, _, number = where.rpartition(":")
        lineno = int(number)
        if path != self._path or lineno <= self._last:
            self.close()
            self._handle = open(path, "rb")
            self._lines, self._path, self._last = numbered_lines(self._handle), path, 0
        for n, raw in self._lines:
            self._last = n
            if n == lineno:
                return raw.rstrip(b"\r\n")
        return b""

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
        self._handle, self._path, self._lines, self._last = None, None, iter(()), 0


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
    if not isinstance(trace, dict):
        raise BadTrace(f"expected a JSON object (one trace per line), got {type(trace).__name__}")
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


class RejectSink:
    """Writes bad records to ``rejects.jsonl``: where, why, and the line itself."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.count = 0
        self._handle: IO[bytes] | None = None

    def add(self, where: str, error: str, raw: bytes) -> None:
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self.path, "wb")
        text = raw.decode("utf-8", errors="replace")
        self._handle.write(orjson.dumps({"where": where, "error": error, "line": text}) + b"\n")
        self.count += 1

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def content_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The content store folders that go with the inputs: ``content/`` beside
    each trace file, or under each input directory."""
    dirs: dict[str, None] = {}
    for raw in paths:
        path = Path(raw)
        base = path if path.is_dir() else path.parent
        dirs[str(base)] = None
    return list(dirs)


class ContentStore:
    """ref -> content text, read lazily from ``content-*.jsonl`` files.

    Only (file, offset) is held per ref, so memory grows with the number of
    refs, not with the size of the content.
    """

    def __init__(self, directories: Sequence[str]):
        self.directories = list(directories)
        self._index: dict[str, tuple[int, int]] | None = None
        self._files: list[Path] = []
        self._handles: dict[int, IO[bytes]] = {}

    def __getstate__(self) -> dict[str, Any]:  # pickled into Ray workers: index rebuilt there
        return {"directories": self.directories}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["directories"])  # type: ignore[misc]

    def _build(self) -> dict[str, tuple[int, int]]:
        index: dict[str, tuple[int, int]] = {}
        seen: set[Path] = set()
        for directory in self.directories:
            for path in sorted(Path(directory).rglob("content-*.jsonl")):
                if path in seen:
                    continue
                seen.add(path)
                file_no = len(self._files)
                self._files.append(path)
                offset = 0
                with open(path, "rb") as handle:
                    for raw in handle:
                        start, offset = offset, offset + len(raw)
                        if start == 0 and raw.startswith(BOM):  # the text starts after the byte order mark
                            start, raw = len(BOM), raw[len(BOM):]
                        ref_at = raw.find(b'"ref":')
                        if ref_at < 0:
                            continue
                        try:
                            ref = orjson.loads(raw).get("ref")
                        except (orjson.JSONDecodeError, AttributeError):
                            continue
                        if isinstance(ref, str):
                            index[ref] = (file_no, start)
        return index

    def __len__(self) -> int:
        if self._index is None:
            self._index = self._build()
        return len(self._index)

    def get(self, ref: str | None) -> str | None:
        """The JSON text stored for ``ref``, or None when it was not captured."""
        if not ref:
            return None
        if self._index is None:
            self._index = self._build()
        where = self._index.get(ref)
        if where is None:
            return None
        file_no, offset = where
        handle = self._handles.get(file_no)
        if handle is None:
            handle = self._handles[file_no] = open(self._files[file_no], "rb")
        handle.seek(offset)
        text = orjson.loads(handle.readline()).get("text")
        return text if isinstance(text, str) else None

    def value(self, ref: str | None) -> Any:
        """The stored content decoded from its JSON text (None when absent)."""
        text = self.get(ref)
        if text is None:
            return None
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text

    def close(self) -> None:
        for handle in self._handles.values():
            handle.close()
        self._handles.clear()
