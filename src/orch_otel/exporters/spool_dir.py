"""One spool directory shared by many processes (gunicorn or Celery workers, a
volume mounted in many containers): its byte bound, and which writers live.

- **The bound is the directory's.** The bytes of every segment in it are kept in
  ``spool.bytes`` (a decimal number), read and updated under an exclusive
  ``flock`` together with the append it allows, so writers that share the
  directory share the bound. The number is made again from the segment sizes
  when it would refuse a span (at most once a second: segments removed from
  outside, or a writer killed between its write and the update), so it never
  refuses for long on a stale count.
- **A live writer holds a lock.** Each writer holds ``flock`` on its own
  ``wal-<start ns>-<pid>.live`` file while it runs; the kernel lets it go when
  the process ends, however it ends. ``spool replay`` leaves the segments of a
  writer whose lock is held alone, always.

Where ``fcntl`` is missing (Windows) each writer bounds only its own bytes and
replay tells live writers by their pid.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ..tracefiles import private_open

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

BYTES_FILE = "spool.bytes"
LIVE = ".live"
_RECOUNT_EVERY_S = 1.0


class DirectoryBytes:
    """The bytes held by all segments of a spool directory (see module doc)."""

    def __init__(self, directory: Path, count: Callable[[], int]) -> None:
        self.path = directory / BYTES_FILE
        self._count = count  # the segments' sizes on disk, summed
        self._fd: int | None = None
        self._recounted = 0.0
        self.own = 0  # bytes this process wrote and has not removed (the count where locks are missing)
        self.shared = fcntl is not None

    def append(self, fd: int, line: bytes, limit: int | None) -> bool:
        """Write ``line`` to ``fd`` if the directory stays within ``limit``
        (None: whatever it holds); False, nothing written, when it would not."""
        if self.shared:
            try:
                lock = self._open()
            except OSError:  # a file system without locks, say: this process's own bytes are all it can bound
                self.shared = False
        if not self.shared:
            if limit is not None and self.own + len(line) > limit:
                return False
            _write_all(fd, line)
            self.own += len(line)
            return True
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            total = _read_number(lock) if self._recounted else self._recount()  # a new writer counts leftovers
            if limit is not None and total + len(line) > limit and time.monotonic() - self._recounted >= _RECOUNT_EVERY_S:
                total = self._recount()
            if limit is not None and total + len(line) > limit:
                return False
            _write_all(fd, line)
            self.own += len(line)
            _write_number(lock, total + len(line))
            return True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

    def removed(self, size: int) -> None:
        """``size`` bytes of this process's segments left the directory."""
        self.own = max(0, self.own - size)
        if not self.shared or size <= 0:
            return
        try:
            lock = self._open()
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError:  # counted again when the bound is reached
            return
        try:
            _write_number(lock, max(0, _read_number(lock) - size))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

    def recount(self) -> None:
        """Make the number again from the segments on disk."""
        if not self.shared:
            return
        try:
            lock = self._open()
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError:
            return
        try:
            self._recount()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

    def _recount(self) -> int:
        total = self._count()
        _write_number(self._open(), total)
        self._recounted = time.monotonic()
        return total

    def _open(self) -> int:
        """The number's file, opened once and locked here (an ``OSError`` where it cannot be)."""
        if self._fd is None:
            fd = private_open(self.path, os.O_RDWR | os.O_CREAT)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # can this file system lock at all?
                fcntl.flock(fd, fcntl.LOCK_UN)
            except BlockingIOError:
                pass  # locked by another writer right now: it can
            except OSError:
                os.close(fd)
                raise
            self._fd = fd
        return self._fd

    def forget(self) -> None:
        """In a forked child: the parent's descriptor shares the parent's lock; open our own."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.own = 0
        self._recounted = 0.0

    def close(self) -> None:
        self.forget()


def _read_number(fd: int) -> int:
    raw = os.pread(fd, 32, 0)
    try:
        return max(0, int(raw.split(b"\n")[0] or b"0"))
    except ValueError:
        return 0


def _write_number(fd: int, value: int) -> None:
    data = b"%d\n" % value
    os.pwrite(fd, data.ljust(21), 0)  # fixed width: no stale digits left behind


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class WriterLock:
    """The lock a live writer holds on ``<prefix>.live`` (see module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def hold(self) -> None:
        if self._fd is not None or fcntl is None:
            return
        fd = private_open(self.path, os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a new name: no one else holds it
        self._fd = fd

    def release(self) -> None:
        """The writer is done (its segments are closed or gone)."""
        if self._fd is not None:
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None

    def forget(self) -> None:
        """In a forked child: the lock is the parent's; close our copy of it only."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def live_file(segment: Path) -> Path:
    """``wal-<ns>-<pid>.live`` for ``wal-<ns>-<pid>-<seq>[.closed].spool``."""
    return segment.with_name(segment.name.rsplit("-", 1)[0] + LIVE)


def writer_holds(segment: Path) -> bool | None:
    """Whether the writer of ``segment`` is alive by its lock: True (held),
    False (dead), None (no lock file: an older writer, or no ``fcntl``)."""
    if fcntl is None:
        return None
    try:
        fd = os.open(live_file(segment), os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def clear_dead_locks(directory: Path) -> None:
    """Remove the ``.live`` files of dead writers whose segments are all gone."""
    if fcntl is None:
        return
    for path in directory.glob(f"wal-*{LIVE}"):
        prefix = path.name[: -len(LIVE)]
        if any(directory.glob(f"{prefix}-*.spool")):
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink(missing_ok=True)
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
