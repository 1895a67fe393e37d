"""Trace files and the content store: how replayable traces sit on disk.

A trace directory holds ``traces-*.jsonl`` (one trace per line) and, when
content capture is on, ``content-*.jsonl`` beside them: one
``{"ref": ..., "text": ...}`` per line, where ``text`` is the redacted JSON
text whose hash is ``ref``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

TRACE_GLOB = "*.jsonl"


class ContentStore:
    """One content-store file, created on its first write. Each ref is written
    once; the last ``limit`` refs written are remembered, so memory stays bounded."""

    def __init__(self, path: Path, *, append: bool, limit: int = 100_000) -> None:
        self.path = path
        self._mode = "ab" if append else "wb"
        self._file: IO[bytes] | None = None
        self._written: OrderedDict[str, None] = OrderedDict()
        self._limit = limit

    def add(self, contents: dict[str, str]) -> bool:
        """Write the contents whose ref is new; True when anything was written."""
        lines = []
        for ref, text in contents.items():
            if ref in self._written:
                continue
            self._written[ref] = None
            if len(self._written) > self._limit:
                self._written.popitem(last=False)
            lines.append(orjson.dumps({"ref": ref, "text": text}) + b"\n")
        if not lines:
            return False
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, self._mode)
        self._file.write(b"".join(lines))
        return True

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


class TraceWriter:
    """Appends traces and contents to this process's files in ``directory``.

    Each trace is one line, written and flushed whole, so a killed process
    leaves only complete lines behind.
    """

    def __init__(self, directory: str | os.PathLike[str], *, max_remembered_refs: int = 100_000):
        self.directory = Path(directory)
        stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self.trace_path = self.directory / f"traces-{stem}.jsonl"
        self.content_path = self.directory / "content" / f"content-{stem}.jsonl"
        self._traces: IO[bytes] | None = None
        self._contents = ContentStore(self.content_path, append=True, limit=max_remembered_refs)
        self._lock = threading.Lock()

    def write(self, trace: dict[str, Any], contents: dict[str, str] | None = None) -> None:
        with self._lock:
            if contents and self._contents.add(contents):
                self._contents.flush()
            if self._traces is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                self._traces = open(self.trace_path, "ab")
            self._traces.write(orjson.dumps(trace) + b"\n")
            self._traces.flush()

    def close(self) -> None:
        with self._lock:
            if self._traces is not None:
                self._traces.close()
                self._traces = None
            self._contents.close()


def trace_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The trace files named by ``paths`` (files, or directories searched for
    ``*.jsonl`` outside their ``content/`` store), in a stable order."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob(TRACE_GLOB) if "content" not in p.relative_to(path).parts[:-1]))
        else:
            found.append(path)
    return found


@dataclass
class Line:
    path: Path
    lineno: int
    trace: dict[str, Any] | None
    error: str | None = None


def read_lines(path: Path) -> Iterator[Line]:
    """Each non-empty line of a trace file, parsed, or with the parse error."""
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                yield Line(path, lineno, None, f"malformed JSON (column {exc.colno}): {exc.msg}")
                continue
            if not isinstance(value, dict):
                yield Line(path, lineno, None, f"expected a JSON object, got {type(value).__name__}")
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
