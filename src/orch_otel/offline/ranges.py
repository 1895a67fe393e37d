"""What both ``--engine ray`` engines share (``orch-otel convert``'s,
:mod:`.ray_engine`, and ``orch-otel dataset``'s,
:mod:`orch_otel.datasets.ray_engine`): input files cut into byte ranges on
line boundaries, each knowing the number of its first line so that every
problem names ``file:line`` as the local engine does; and the hygiene of one
task in a Ray worker."""

from __future__ import annotations

import ctypes
import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson

from ..tracefiles import BOM
from .local import rare_collections
from .readers import is_blank, is_json_lines, not_spans, skip_bom

_RANGE_BYTES = (4 << 20, 64 << 20)  # the least and most input one map task reads


@dataclass(frozen=True)
class Range:
    """Bytes ``start`` to ``end`` of input file number ``index``; ``end`` -1:
    the whole file, read by the local engine's reader (zstd, protobuf)."""

    index: int
    path: str
    start: int = 0
    end: int = -1
    first_line: int = 1


def split(files: list[Path], cpus: int, count_lines: Callable[[list[Range]], list[tuple[int, bool]]],
          cuttable: Callable[[Path], bool] = is_json_lines) -> list[Range]:
    """The ranges to read, in input order. ``count_lines`` runs :func:`count_range`
    on a list of ranges (in Ray tasks): only files cut in more than one need it.
    Files ``cuttable`` refuses are read whole (convert's zstd and protobuf)."""
    sizes = [file_size(p) for p in files]
    size = min(max(sum(sizes) // (4 * cpus), _RANGE_BYTES[0]), _RANGE_BYTES[1])
    per_file: list[list[Range]] = []
    for i, (path, total) in enumerate(zip(files, sizes)):
        if not cuttable(path):
            per_file.append([Range(i, str(path))])
            continue
        bounds = [0, *_cuts(path, total, size), total]
        per_file.append([Range(i, str(path), a, b) for a, b in zip(bounds, bounds[1:])])
    cut = [r for ranges in per_file if len(ranges) > 1 for r in ranges]
    counted = dict(zip(((r.index, r.start) for r in cut), count_lines(cut)))
    out: list[Range] = []
    for ranges in per_file:
        if len(ranges) == 1:
            out.extend(ranges)
        elif not counted[(ranges[0].index, 0)][1]:  # another command's output, or no line of the first range parses
            out.append(Range(ranges[0].index, ranges[0].path))  # read whole by the local reader, which says why
        else:
            line = 1
            for r in ranges:
                out.append(replace(r, first_line=line))
                line += counted[(r.index, r.start)][0]
    return out


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _cuts(path: Path, total: int, size: int) -> list[int]:
    """Offsets near each multiple of ``size`` where a line starts."""
    cuts: list[int] = []
    with open(path, "rb") as f:
        for target in range(size, total, size):
            if cuts and cuts[-1] >= target:
                continue
            f.seek(target - 1)
            while (part := f.readline(1 << 20)) and not part.endswith(b"\n"):
                pass  # to the end of the line that holds byte target - 1, a chunk at a time: a line may be huge
            at = f.tell()
            if at >= total:
                break
            cuts.append(at)
    return cuts


def count_range(r: Range, check_first: bool = True) -> tuple[int, bool]:
    """(newlines in ``r``; for a first range, whether the file's first parsed line
    is spans rather than another command's output; True for other ranges, and
    without ``check_first``: the dataset engine reads converted traces)."""
    newlines, spans = 0, r.start != 0 or not check_first
    with open(r.path, "rb") as f:
        f.seek(r.start)
        left = r.end - r.start
        if r.start == 0 and skip_bom(f):
            left -= len(BOM)
        while not spans and left > 0:
            line = f.readline()
            if not line:
                break
            left -= len(line)
            newlines += line.endswith(b"\n")
            value = _loads(line)
            if value is not _BAD:
                spans = not (type(value) is dict and not_spans(value))
                break
        while left > 0:
            block = f.read(min(left, 1 << 24))
            if not block:
                break
            left -= len(block)
            newlines += block.count(b"\n")
    return newlines, spans


_BAD = object()


def _loads(line: bytes) -> Any:
    if is_blank(line):
        return _BAD
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _BAD


@contextmanager
def worker_task() -> Iterator[None]:
    """A task in a Ray worker, a process Ray starts for this job's tasks: its GC is
    tuned for the task, and after it the memory the task freed goes back to the
    system, so a worker that runs many tasks does not creep up."""
    try:
        with rare_collections():
            yield
    finally:
        gc.collect()
        if sys.platform == "linux":  # glibc keeps the pages Python frees unless asked
            try:
                ctypes.CDLL(None).malloc_trim(0)
            except (OSError, AttributeError):  # not glibc (musl)
                pass
