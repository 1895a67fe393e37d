"""What :func:`~.engine.build` tells its caller as it goes: the progress
callbacks it shares with ``orch-otel convert`` (:mod:`orch_otel.tracefiles`),
fed from each line's result in input order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..tracefiles import OnBytes, OnProblem, Problem


class LineProgress:
    """Turns line results into ``on_bytes(path, bytes read so far of it)`` and
    ``on_problem(Problem(where, reason))`` calls. Each file's last report is
    its size, as convert's is, an empty file's too; ``legacy`` (``build``'s
    deprecated ``progress=``) still gets every result itself."""

    def __init__(self, files: Sequence[Path], on_bytes: OnBytes | None, on_problem: OnProblem | None,
                 legacy: Callable[[dict[str, Any]], None] | None = None) -> None:
        self._files = list(files)
        self._index = {str(path): i for i, path in enumerate(self._files)}
        self._on_bytes, self._on_problem, self._legacy = on_bytes, on_problem, legacy
        self._current = 0  # files before this one are read whole and reported so
        self._read = 0  # bytes of the current file read so far

    def line(self, result: dict[str, Any]) -> None:
        """One line's result, as it is written or set aside (a result without
        ``size`` is a trace set aside after its line was read)."""
        if self._legacy is not None:
            self._legacy(result)
        if "reject" in result and self._on_problem is not None:
            self._on_problem(Problem(result["where"], result["reject"]))
        if "size" in result and self._on_bytes is not None:
            name = result["where"].rpartition(":")[0]
            at = self._index.get(name)
            if at is None:  # not a file found at the start (never expected): reported as it is
                self._on_bytes(Path(name), result["size"])
                return
            if at != self._current:
                self._finish_until(at)
                self._read = 0
            self._read += result["size"]
            self._on_bytes(self._files[at], self._read)

    def finish(self) -> None:
        """Every line read: each file not reported whole yet is."""
        self._finish_until(len(self._files))

    def _finish_until(self, end: int) -> None:
        """Files before ``end`` are read whole: each not reported so yet is."""
        on_bytes = self._on_bytes
        while on_bytes is not None and self._current < end:
            path = self._files[self._current]
            self._current += 1
            try:
                size = path.stat().st_size
            except OSError:  # gone since it was read: its last report stands
                continue
            on_bytes(path, size)
