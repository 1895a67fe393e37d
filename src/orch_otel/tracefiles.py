"""Trace files and the content store: how replayable traces sit on disk.

A trace directory holds ``traces-*.jsonl`` (one trace per line) and, when
content capture is on, ``content-*.jsonl`` beside them (in ``content/``): one
``{"ref": ..., "text": ...}`` per line, where ``text`` is the redacted JSON
text whose hash is ``ref``.

Here: finding trace files (:func:`trace_files`) and their content folders
(:func:`content_dirs`); the one line reader (:func:`file_lines`, and
:func:`read_lines` for parsed lines); writing (:class:`LineFile`,
:class:`ContentWriter`, :class:`TraceWriter`); reading contents back
(:class:`ContentIndex`, :func:`load_contents`); the quarantine file that
bad input is set aside in (:class:`Quarantine`); and the progress callbacks
that ``orch-otel convert`` and ``orch-otel dataset`` both offer
(:data:`OnFiles`, :data:`OnBytes`, :data:`OnProblem`, with :class:`Problem`).
"""

from __future__ import annotations

import itertools
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from ._inputs import (  # noqa: F401 (find_trace_files, trace_files: read from here, as always)
    Problem,
    TooLong,
    Unreadable,
    bounded_lines,
    find_trace_files,
    open_regular,
    printable,
    trace_files,
)

__all__ = ["OnBytes", "OnFiles", "OnProblem", "Problem", "load_contents"]

BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark: some editors and Windows tools start text files with it


def numbered_lines(lines: Iterable[bytes | TooLong], first: int = 1) -> Iterator[tuple[int, bytes | TooLong]]:
    """(line number, line) of the lines of a file (:func:`~orch_otel._inputs.bounded_lines`),
    the first numbered ``first``; a byte order mark before line 1 is dropped
    (JSON parsers refuse it). A line over the length limit is a ``TooLong``."""
    for lineno, raw in enumerate(lines, start=first):
        if lineno == 1 and not isinstance(raw, TooLong) and raw.startswith(BOM):
            raw = raw[len(BOM):]
        yield lineno, raw


def file_lines(path: str | os.PathLike[str], start: int = 0, end: int = -1,
               first: int = 1) -> Iterator[tuple[int, bytes | TooLong]]:
    """(line number, line) of each non-empty line of a trace (or content)
    file, the line end kept: the one reader of trace lines. A line longer than
    ``ORCH_OTEL_MAX_LINE_BYTES`` comes as a ``TooLong`` (its reason), never
    held whole. ``start``, ``end`` (-1: the end of the file) and ``first``:
    only the lines of that byte range, cut on line boundaries, whose first
    line is number ``first`` (``--engine ray``). Raises ``Unreadable`` (an
    ``OSError`` saying why) for what is not a regular file."""
    with open_regular(path) as handle:
        handle.seek(start)
        lines = bounded_lines(handle)
        for lineno, raw in numbered_lines(lines if end < 0 else lines_within(lines, end - start), first):
            if isinstance(raw, TooLong) or raw.strip():
                yield lineno, raw


def lines_within(lines: Iterable[bytes | TooLong], size: int) -> Iterator[bytes | TooLong]:
    """The lines (of :func:`~orch_otel._inputs.bounded_lines`) that start within the next ``size`` bytes."""
    lines = iter(lines)
    while size > 0 and (raw := next(lines, None)) is not None:
        size -= raw.size if isinstance(raw, TooLong) else len(raw)
        yield raw


def private_open(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` for a file that may hold content: created 0600 (only the
    user can read it), whatever the umask."""
    return os.open(path, flags | getattr(os, "O_CLOEXEC", 0), 0o600)


def private_opener(path: str, flags: int) -> int:
    """``open(path, mode, opener=private_opener)``: :func:`private_open` for Python file objects."""
    return private_open(path, flags)


def private_mkdir(path: str | os.PathLike[str]) -> None:
    """Create the folder ``path`` and its missing parents, each 0700 (only the
    user can list it); a folder that exists is left as it is."""
    path = Path(path)
    if path.is_dir():
        return
    if path.parent != path:
        private_mkdir(path.parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not path.is_dir():
            raise


class LineFile:
    """An append-only file of whole lines. A write that fails part way (a full
    disk, a file size limit) is cut back off, so the file never holds half a
    line; if even that fails, the next write cuts it first. Only this writer's
    own bytes are ever cut, and only while they still end the file: lines other
    processes appended to the same file after them are never truncated."""

    def __init__(self, path: Path, *, append: bool) -> None:
        self.path = path
        self._append = append
        self._fd: int | None = None
        self._tail = b""  # a fragment this writer left at the end of the file, to cut before the next write

    def write(self, data: bytes) -> None:
        """Write ``data`` (whole lines) completely, or raise and leave the file as it was."""
        if self._fd is None:
            private_mkdir(self.path.parent)
            flags = os.O_RDWR | os.O_CREAT | (os.O_APPEND if self._append else os.O_TRUNC)
            self._fd = private_open(self.path, flags)
            size = os.fstat(self._fd).st_size
            if size and not _ends_with_newline(self._fd, size):  # a crash mid-line: that tail goes
                whole = _last_line_end(self._fd, size)
                self._tail = os.pread(self._fd, size - whole, whole)
        if self._tail:
            self._cut_tail()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view):]
        except BaseException:
            self._tail = data[:len(data) - len(view)]
            try:
                self._cut_tail()
            except OSError:
                pass  # cut before the next write
            raise

    def _cut_tail(self) -> None:
        """Truncate this writer's fragment if it still ends the file; when
        another process has appended after it, leave the file alone."""
        fd, tail = self._fd, self._tail
        size = os.fstat(fd).st_size  # type: ignore[arg-type]
        if len(tail) <= size and os.pread(fd, len(tail), size - len(tail)) == tail:  # type: ignore[arg-type]
            os.ftruncate(fd, size - len(tail))  # type: ignore[arg-type]
        self._tail = b""

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def forget(self) -> None:
        """In a forked child: let go of the parent's descriptor without touching the file."""
        self.close()
        self._tail = b""


def _ends_with_newline(fd: int, size: int) -> bool:
    return os.pread(fd, 1, size - 1) == b"\n"


def _last_line_end(fd: int, size: int) -> int:
    """Offset just past the last newline before ``size`` (0 if none)."""
    end = size
    while end > 0:
        start = max(0, end - 65536)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


class ContentWriter:
    """One content-store file, written: created on its first write. Each ref is written
    once; the last ``limit`` refs written are remembered, so memory stays bounded."""

    def __init__(self, path: Path, *, append: bool, limit: int = 100_000) -> None:
        self.path = path
        self._file = LineFile(path, append=append)
        self._written: OrderedDict[str, None] = OrderedDict()
        self._limit = limit

    def add(self, contents: dict[str, str]) -> bool:
        """Write the contents whose ref is new; True when anything was written.
        Refs count as written only once their lines are on disk."""
        new = {ref: text for ref, text in contents.items() if ref not in self._written}
        if not new:
            return False
        self._file.write(b"".join(orjson.dumps({"ref": ref, "text": text}, option=orjson.OPT_APPEND_NEWLINE)
                                     for ref, text in new.items()))
        for ref in new:
            self._written[ref] = None
        while len(self._written) > self._limit:
            self._written.popitem(last=False)
        return True

    def flush(self) -> None:
        """Nothing to do: every add() reaches the file whole (kept for callers)."""

    def close(self) -> None:
        self._file.close()

    def forget(self) -> None:
        self._file.forget()


class TraceWriter:
    """Appends traces and contents to this process's files in ``directory``.

    Each trace is one line, written whole, so a killed process leaves only
    complete lines behind. The file names carry the pid and a random part, so
    processes sharing a directory (a volume mounted in many containers, whose
    pids repeat) never share a file; a forked child gets files of its own
    (:meth:`forked`).
    """

    def __init__(self, directory: str | os.PathLike[str], *, max_remembered_refs: int = 100_000):
        self.directory = Path(directory)
        self._max_refs = max_remembered_refs
        self._lock = threading.Lock()
        self._open()

    def _open(self) -> None:
        stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"
        self.trace_path = self.directory / f"traces-{stem}.jsonl"
        self.content_path = self.directory / "content" / f"content-{stem}.jsonl"
        self._traces = LineFile(self.trace_path, append=True)
        self._contents = ContentWriter(self.content_path, append=True, limit=self._max_refs)

    def write(self, trace: dict[str, Any], contents: dict[str, str] | None = None) -> None:
        """Write the trace's contents, then the trace: a trace line is on disk
        only when every ref it names resolves."""
        with self._lock:
            if contents:
                self._contents.add(contents)
            self._traces.write(orjson.dumps(trace, option=orjson.OPT_APPEND_NEWLINE))  # the line end without a copy

    def forked(self) -> None:
        """In a forked child: write to new files of this process's own; the
        parent's stay the parent's (a lock it held is dropped with them)."""
        self._lock = threading.Lock()
        self._traces.forget()
        self._contents.forget()
        self._open()

    def close(self) -> None:
        with self._lock:
            self._traces.close()
            self._contents.close()


def content_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The folders whose content store goes with the inputs: each input
    directory, and the folder of each input file (searched for ``content-*.jsonl``)."""
    dirs: dict[str, None] = {}
    for raw in paths:
        path = Path(raw)
        base = path if path.is_dir() else path.parent
        dirs[str(base)] = None
    return list(dirs)


@dataclass
class Line:
    path: Path
    lineno: int  # 0: the file itself (it could not be read)
    trace: dict[str, Any] | None
    error: str | None = None

    @property
    def where(self) -> str:
        """``file:line`` (``file`` for the file itself), the name escaped for printing."""
        name = printable(str(self.path))
        return f"{name}:{self.lineno}" if self.lineno else name


SPAN_LOG_LINE = ("a span log line (OTLP JSON or a span dump), not a trace: span logs are what "
                 "`orch-otel convert LOG -o traces.jsonl` reads; give its output here")


def is_span_record(value: dict[str, Any]) -> bool:
    """A record of a span log (an OTLP JSON ``TracesData``, a span dump line): input of
    ``orch-otel convert``, easily given by mistake to the commands that read traces."""
    return "resourceSpans" in value or ("span_id" in value and "start_ns" in value)


def read_lines(path: Path) -> Iterator[Line]:
    """Each non-empty line of a trace file, parsed, or with the error (a line
    over the length limit, malformed JSON); a file that cannot be read is one
    ``Line`` numbered 0 with the reason."""
    try:
        lines = file_lines(path)
        first = next(lines, None)
    except Unreadable as exc:
        yield Line(path, 0, None, exc.reason)
        return
    except OSError as exc:
        yield Line(path, 0, None, f"cannot read: {exc.strerror or exc}")
        return
    if first is None:
        return
    for lineno, raw in itertools.chain([first], lines):
        if isinstance(raw, TooLong):
            yield Line(path, lineno, None, raw.reason)
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            yield Line(path, lineno, None, f"malformed JSON (column {exc.colno}): {exc.msg}")
            continue
        if not isinstance(value, dict):
            yield Line(path, lineno, None, f"expected a JSON object, got {type(value).__name__}")
            continue
        if is_span_record(value):
            yield Line(path, lineno, None, SPAN_LOG_LINE)
            continue
        yield Line(path, lineno, value)


def load_contents(directory: str | os.PathLike[str]) -> dict[str, str]:
    """All captured contents under ``directory`` (ref -> JSON text)."""
    contents: dict[str, str] = {}
    for path in sorted(Path(directory).rglob("content-*.jsonl")):
        for line in read_lines(path):
            if line.trace is not None and "ref" in line.trace:
                contents[str(line.trace["ref"])] = str(line.trace.get("text"))
    return contents


class ContentIndex:
    """ref -> content text, read back lazily from the ``content-*.jsonl`` files under ``directories``.

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
                try:
                    handle = open_regular(path)
                except OSError:  # not a regular file: no content there
                    continue
                with handle:
                    for raw in bounded_lines(handle):
                        if isinstance(raw, TooLong):  # longer than any content written: not read
                            offset += raw.size
                            continue
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


class Quarantine:
    """A JSON-lines file that bad input is set aside in, one record a line,
    created with its first record (``orch-otel convert``'s ``OUT.quarantine``,
    ``orch-otel dataset``'s ``VIEW.rejects.jsonl``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.count = 0
        self._handle: IO[bytes] | None = None

    def add(self, record: bytes) -> None:
        """Write one record (a JSON object, without the newline)."""
        if self._handle is None:
            private_mkdir(self.path.parent)
            self._handle = open(self.path, "wb", opener=private_opener)
        self._handle.write(record + b"\n")
        self.count += 1

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


# The progress callbacks of orch_otel.offline.convert_inputs and orch_otel.datasets.build:
OnFiles = Callable[[list[Path]], None]  # the input files, once found
OnBytes = Callable[[Path, int], None]  # one input file and the bytes of it read so far
OnProblem = Callable[[Problem], None]  # each problem, as it is set aside
