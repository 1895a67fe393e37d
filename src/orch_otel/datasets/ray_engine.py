"""``orch-otel dataset --engine ray``: the same :func:`~.rows.process_line` run
in Ray tasks that ship blocks of results, never one line at a time; the
block design of ``orch-otel convert --engine ray``, without its shuffle (a
line's rows need only that line, and for the views that build prompts the
first pass's small map of who gave each reply in the tasks of several
traces: :mod:`.tasks`).

1. **split**: each trace file is cut into byte ranges on line boundaries
   (:mod:`orch_otel.offline.ranges`, shared with convert); small tasks count
   each range's lines first, so every reject names ``file:line`` exactly.
2. **first pass** (the views that build prompts): one task per range reads
   its traces' replies (:meth:`~.tasks.TaskReplies.read`); the driver merges
   them as they finish and puts the tasks of several traces in the object
   store, which each worker reads once for all its map tasks.
3. **map**: one task per range reads its lines as the local engine's reader
   does and runs :func:`~.rows.process_line` on each (content read through a
   :class:`~orch_otel.tracefiles.ContentIndex` built once per worker); it
   returns one Arrow table for the range, a row per line holding the line's
   result as JSON.
4. **driver**: takes the ranges' tables in input order, with a few tasks
   ahead of it (so its memory stays bounded by that window, not the input),
   and yields each line's result to :func:`~.engine.build`, which writes them
   with the same writers in the same order as the local engine.

Ray is joined, started and stopped by the one policy of :mod:`orch_otel._ray`:
a Ray the caller started (``ray.init(address=...)``, to use a cluster) is used
and left running; otherwise a local one is started for the run and shut down
after it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from .._jsonvalues import unwritable
from .._ray import ray_session
from ..offline.ranges import Range, count_range, split, worker_task
from ..tracefiles import ContentIndex
from .analysis import Config
from .reader import RawLine, raw_lines
from .rows import process_line
from .tasks import Replies, TaskReplies, reads_prompts
from .views import ContentMissing
from .writers import in_row

_AHEAD = 2  # ranges in flight per CPU: the next result is ready when the driver wants it
_SLICE = 256  # result rows turned into Python objects at a time on the driver
_indexes: dict[tuple[str, ...], ContentIndex] = {}  # per worker process: index built once
_task_maps: dict[str, dict[str, Replies]] = {}  # per worker process: the run's first-pass map, fetched once


def _store(dirs: tuple[str, ...]) -> ContentIndex:
    store = _indexes.get(dirs)
    if store is None:
        store = _indexes[dirs] = ContentIndex(list(dirs))
    return store


def replies_of_range(r: Range, dirs: tuple[str, ...]) -> TaskReplies:
    """The first pass (:mod:`.tasks`) over one range's lines."""
    with worker_task():
        replies = TaskReplies()
        try:
            replies.read(raw_lines(r.path, r.start, r.end, r.first_line), _store(dirs))
        except OSError:  # the map task of this range reports it
            pass
        return replies


def _tasks_of(boxed: list[Any] | None) -> dict[str, Replies] | None:
    """The first pass's map, read from the object store once per worker (not
    once per range: a large map takes a second or more to unpickle). The ref
    comes in a list, so that Ray does not fetch it for every task."""
    if not boxed:
        return None
    import ray

    key = boxed[0].hex()
    if key not in _task_maps:
        _task_maps.clear()  # an earlier run's map
        _task_maps[key] = ray.get(boxed[0])
    return _task_maps[key]


def map_range(r: Range, config: Config, dirs: tuple[str, ...], boxed_tasks: list[Any] | None = None) -> Any:
    """One range's lines -> one Arrow table: a ``payload`` row (the line's result as JSON) per non-empty line.
    ``boxed_tasks``: ``[ref]`` of the first pass's map, for the views that build prompts."""
    import pyarrow as pa

    with worker_task():
        store = _store(dirs)
        tasks = _tasks_of(boxed_tasks)
        try:
            payloads = [_payload(line, config, store, tasks)
                        for line in raw_lines(r.path, r.start, r.end, r.first_line)]
        except OSError as exc:  # the file went or cannot be read: the driver raises it, as the local engine would
            payloads = [orjson.dumps({"fatal": str(exc), "error": "OSError"})]
        return pa.table({"payload": pa.array(payloads, pa.binary())})


def _payload(line: RawLine, config: Config, store: ContentIndex, tasks: dict[str, Replies] | None) -> bytes:
    try:
        result = process_line(line, config, store, tasks)
    except ContentMissing as exc:
        result = {"fatal": str(exc)}
    try:
        return orjson.dumps(result)
    except TypeError:  # rows orjson cannot write (captured content nested too deep): this trace is rejected
        where = unwritable(result.get("rows"))
        return orjson.dumps({"where": line.where, "size": len(line.raw) + 1, "is_trace": True,
                             "line": line.raw.decode("utf-8", "replace"),
                             "reject": f"cannot write {config.view} rows: {in_row(where) if where else 'TypeError'}"})


def _always(_: Path) -> bool:
    return True  # the dataset reader reads every file as lines (no zstd): any file can be cut


def _task_replies(ray: Any, ranges: list[Range], dirs: tuple[str, ...]) -> Any:
    """The first pass in Ray tasks, a range each, merged on the driver as they
    finish; the map tasks get the result through the object store."""
    task = ray.remote(replies_of_range)
    pending = [task.remote(r, dirs) for r in ranges]
    merged = TaskReplies()
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        merged.merge(ray.get(done[0]))
    return ray.put(merged.finish())


def ray_results(files: Sequence[Path], config: Config,
                content_dirs: Sequence[str]) -> Generator[dict[str, Any], None, None]:
    """:func:`~.rows.process_line`'s result for each line of ``files``, in order."""
    with ray_session() as ray:
        if not files:
            return
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        count = ray.remote(count_range)
        ranges = split(list(files), cpus, lambda rs: ray.get([count.remote(r, False) for r in rs]), _always)
        dirs = tuple(content_dirs)
        tasks = [_task_replies(ray, ranges, dirs)] if reads_prompts(config.view, config.trainer) else None
        task, args = ray.remote(map_range), (ray.put(config), dirs, tasks)
        todo = iter(ranges)
        pending = deque(task.remote(r, *args) for r in islice(todo, _AHEAD * cpus))
        while pending:
            column = ray.get(pending.popleft()).column("payload")
            if (r := next(todo, None)) is not None:  # one more in flight before this range's rows are taken
                pending.append(task.remote(r, *args))
            for at in range(0, len(column), _SLICE):
                for payload in column.slice(at, _SLICE).to_pylist():
                    result = orjson.loads(payload)
                    if "fatal" in result:
                        raise (OSError if result.get("error") == "OSError" else ContentMissing)(result["fatal"])
                    yield result
            del column
