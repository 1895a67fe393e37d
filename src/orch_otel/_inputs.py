"""Input files the commands are handed, read without trusting them: only
regular files are opened (never a FIFO, which would block, or a device), a
symlink loop is a reason, not a crash, a line is read up to a bounded length
(:func:`bounded_lines`), zstd output is bounded by its ratio to the input
(:class:`Inflated`), and names are escaped before they are printed
(:func:`printable`).

The limits are documented in ``docs/offline.md``: ``ORCH_OTEL_MAX_LINE_BYTES``
(64 MiB) and ``ORCH_OTEL_MAX_ZSTD_RATIO`` (1000, and at least 1 MiB)."""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from . import _env as env
from .vocabulary import MAX_NAME_CHARS

_SKIP_CHUNK = 1 << 20  # bytes read at a time while skipping the rest of an over-long line
_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


TRACE_GLOB = "*.jsonl"


@dataclass
class Problem:
    """Input set aside, and why: what an ``on_problem`` callback gets. ``where``
    is ``file:line`` (or ``file@byte-offset`` in length-prefixed files);
    ``reason`` says what is wrong. ``convert_inputs`` hands a subclass that
    also carries the record or span set aside."""

    where: str
    reason: str


class Unreadable(OSError):
    """An input that is not read, and why (``str()`` is ``file: reason``)."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(reason)
        self.path, self.reason = str(path), reason

    def __str__(self) -> str:
        return f"{printable(self.path)}: {self.reason}"


def why_unreadable(path: str | os.PathLike[str], *, directory_ok: bool = False) -> str | None:
    """Why ``path`` is no input file (None when it is a regular file, or a directory with ``directory_ok``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return _reason(path, exc)
    if stat.S_ISREG(mode) or (directory_ok and stat.S_ISDIR(mode)):
        return None
    return _not_regular(mode)


def _not_regular(mode: int) -> str:
    what = next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")
    return f"{what}, not a regular file"


def _reason(path: str | os.PathLike[str], exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "symlink loop"
    if exc.errno == errno.ENOENT:
        return "broken symlink (its target does not exist)" if os.path.islink(path) else "no such file or directory"
    return f"cannot read: {exc.strerror or exc}"


def open_regular(path: str | os.PathLike[str]) -> io.BufferedReader:
    """``path`` opened for reading in binary, only when it is a regular file:
    opened without blocking (a FIFO's open would wait for a writer), then
    checked, so a file swapped for a FIFO in between is still refused.
    Raises :class:`Unreadable` saying why."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Unreadable(path, _reason(path, exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(path, _not_regular(mode))
        os.set_blocking(fd, True)
        return io.BufferedReader(io.FileIO(fd, "rb"), 1 << 16)
    except BaseException:
        os.close(fd)
        raise


def find_trace_files(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[Problem]]:
    """(the trace files named by ``paths``, the problems of those that cannot be
    read). ``paths`` are files, or directories searched for ``*.jsonl``
    outside their ``content/`` store (symlinked folders are not followed), in
    a stable order; a file named twice (or also found in a named directory)
    is listed once. What is no regular file (a FIFO, a socket, a symlink loop,
    a missing file) is a problem (``file``, ``reason``), never read."""
    found: list[Path] = []
    problems: list[Problem] = []
    for raw in paths:
        path = Path(raw)
        if why_unreadable(path, directory_ok=True) is None and path.is_dir():
            for p in sorted(p for p in path.rglob(TRACE_GLOB) if "content" not in p.relative_to(path).parts[:-1]):
                reason = why_unreadable(p)
                if reason is None:
                    found.append(p)
                elif not p.is_dir():  # a folder named *.jsonl is no file of ours
                    problems.append(Problem(str(p), reason))
        else:
            reason = why_unreadable(path)
            if reason is None:
                found.append(path)
            else:
                problems.append(Problem(str(path), reason))
    return unique_files(found), problems


def trace_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The trace files :func:`find_trace_files` finds (for callers that report no problems)."""
    return find_trace_files(paths)[0]


def unique_files(paths: Iterable[Path]) -> list[Path]:
    """``paths`` less a file named twice (by another name, or a link): the first name wins."""
    seen: set[tuple[int, int]] = set()
    unique = []
    for path in paths:
        try:
            st = os.stat(path)
            key = (st.st_dev, st.st_ino)
        except OSError:  # reported by whoever reads it
            unique.append(path)
            continue
        if key not in seen:
            seen.add(key)
            unique.append(path)
    return unique


@dataclass(frozen=True)
class TooLong:
    """In place of a line longer than the limit: it is skipped, whole, and read on after."""

    size: int  # bytes of the line, its end included
    limit: int

    @property
    def reason(self) -> str:
        return (f"line of {self.size} bytes is longer than the limit of {self.limit} bytes "
                f"({env.ORCH_OTEL_MAX_LINE_BYTES})")


def bounded_lines(handle: IO[bytes], limit: int | None = None) -> Iterator[bytes | TooLong]:
    """Each line of ``handle`` (binary, buffered), its end kept; a line longer
    than ``limit`` bytes (default: ``ORCH_OTEL_MAX_LINE_BYTES``) is never held
    whole: its first ``limit`` bytes are read, the rest skipped a chunk at a
    time (a hole of a sparse file is skipped without reading it), and a
    :class:`TooLong` comes in its place. Memory stays near ``limit``."""
    limit = limit or env.max_line_bytes()
    readline = handle.readline
    while True:
        raw = readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit or raw.endswith(b"\n"):
            yield raw
            continue
        size = len(raw)
        del raw
        while True:
            rest = readline(_SKIP_CHUNK)
            size += len(rest)
            if not rest or rest.endswith(b"\n"):
                break
            if not rest.strip(b"\0"):
                size += _skip_hole(handle)
        yield TooLong(size, limit)


def _skip_hole(handle: IO[bytes]) -> int:
    """Past the hole of a sparse file ``handle`` is in (holes read as zeros,
    so no line ends there); the bytes skipped (0 when it cannot tell)."""
    try:
        fd = handle.fileno()
        here = handle.tell()
        try:
            data = os.lseek(fd, here, os.SEEK_DATA)
        except OSError as exc:  # ENXIO: nothing but hole up to the end
            if exc.errno != errno.ENXIO:
                return 0
            data = os.fstat(fd).st_size
        if data > here:
            handle.seek(data)
        return data - here
    except (OSError, ValueError, AttributeError):  # not a plain file (a decompressed stream): read on
        return 0


class Inflated(Exception):
    """Decompressed output past its bound: most likely a decompression bomb."""


class BoundedStream(io.RawIOBase):
    """The output of a zstd stream reader, stopped at a bound: ``ratio`` times
    the compressed bytes (at least 1 MiB); past it, reading raises :class:`Inflated`.
    A raw stream, to wrap in :class:`io.BufferedReader`."""

    def __init__(self, reader: Any, compressed: int) -> None:
        super().__init__()
        self._reader = reader
        self.bound = zstd_limit(compressed)
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self._reader.read(len(view))
        self.read_bytes += len(data)
        if self.read_bytes > self.bound:
            raise Inflated(f"decompressed past {self.bound} bytes, {env.max_zstd_ratio()} times its compressed size "
                           f"({env.ORCH_OTEL_MAX_ZSTD_RATIO}): a decompression bomb; the rest of the file is skipped")
        view[: len(data)] = data
        return len(data)


def decompress_bounded(payload: bytes, limit: int) -> bytes:
    """One zstd message, decompressed up to ``limit`` bytes; :class:`Inflated` past it."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(payload, read_across_frames=True)
    parts: list[bytes] = []
    size = 0
    while True:
        data = reader.read(min(1 << 20, limit + 1 - size))
        if not data:
            return b"".join(parts)
        parts.append(data)
        size += len(data)
        if size > limit:
            raise Inflated(f"zstd message decompresses past {limit} bytes ({env.ORCH_OTEL_MAX_ZSTD_RATIO}, "
                           f"{env.ORCH_OTEL_MAX_LINE_BYTES}): a decompression bomb; skipped")


def zstd_limit(compressed: int) -> int:
    """The most bytes ``compressed`` bytes of zstd may decompress to."""
    return max(compressed * env.max_zstd_ratio(), 1 << 20)


# Control characters (C0, DEL, C1), line and paragraph separators, and the
# bidirectional controls that can make printed or displayed text read as other text.
_HIDDEN = [*range(0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F, 0x2028, 0x2029,
           *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _HIDDEN}
_ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})
_ESCAPE_TABLE = str.maketrans(_ESCAPES)


def printable(text: str) -> str:
    """``text`` with control characters and bidirectional overrides written as
    escapes (``\\n``, ``\\x1b``, ``\\u202e``): a file name or a name in a trace
    cannot break a ``file:line: reason`` line or display as other text."""
    return text if text.isprintable() else text.translate(_ESCAPE_TABLE)  # bidi controls are not printable


def capped(text: str, limit: int = MAX_NAME_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the last an ellipsis (a name, reason or id)."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def shown(text: str) -> str:
    """A name, reason or id as the HTML view shows it: escaped as :func:`printable`
    says (no bidi override can make it display as other text), then :func:`capped`."""
    return capped(printable(text))


def where_of(path: str | os.PathLike[str], lineno: int | None = None) -> str:
    """``file:line`` (or ``file``) for a message, the name escaped."""
    name = printable(str(path))
    return name if lineno is None else f"{name}:{lineno}"
