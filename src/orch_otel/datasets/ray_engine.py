"""The Ray Data engine: the same :func:`~.rows.process_line` run in Ray
tasks, results streamed back to the driver in input order (``preserve_order``)
and written by the same writers as the local engine (:mod:`.engine`).

Ray is joined, started and stopped by the one policy of :mod:`orch_otel._ray`:
a Ray the caller started (``ray.init(address=...)``, to use a cluster) is used
and left running; otherwise a local one is started for the run and shut down
after it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from .._jsonvalues import unwritable
from .._ray import ray_session
from ..tracefiles import ContentIndex
from .analysis import Config
from .reader import RawLine, raw_lines
from .rows import process_line
from .views import ContentMissing
from .writers import in_row

LINES_PER_BATCH = 256
_indexes: dict[tuple[str, ...], ContentIndex] = {}  # per worker process: index built once


def _table(chunk: dict[str, list[Any]]):
    import pyarrow as pa

    return pa.table({"path": pa.array(chunk["path"], pa.string()), "lineno": pa.array(chunk["lineno"], pa.int64()),
                     "raw": pa.array(chunk["raw"], pa.binary())})


def _read_file(batch: Any) -> Iterator[Any]:
    """One trace file (a batch of one path) -> batches of its non-empty lines."""
    for path in batch.column("path").to_pylist():
        chunk: dict[str, list[Any]] = {"path": [], "lineno": [], "raw": []}
        for line in raw_lines(path):
            chunk["path"].append(line.path)
            chunk["lineno"].append(line.lineno)
            chunk["raw"].append(line.raw)
            if len(chunk["raw"]) >= LINES_PER_BATCH:
                yield _table(chunk)
                chunk = {"path": [], "lineno": [], "raw": []}
        if chunk["raw"]:
            yield _table(chunk)


def _process(batch: Any, config: Config, dirs: tuple[str, ...]) -> Any:
    import pyarrow as pa

    store = _indexes.get(dirs)
    if store is None:
        store = _indexes[dirs] = ContentIndex(list(dirs))
    payloads = []
    columns = [batch.column(name).to_pylist() for name in ("path", "lineno", "raw")]
    for path, lineno, raw in zip(*columns):
        line = RawLine(path, lineno, raw)
        try:
            result = process_line(line, config, store)
        except ContentMissing as exc:
            result = {"fatal": str(exc)}
        try:
            payload = orjson.dumps(result)
        except TypeError:  # rows orjson cannot write (captured content nested too deep): this trace is rejected
            where = unwritable(result.get("rows"))
            payload = orjson.dumps({"where": line.where, "size": len(raw) + 1, "is_trace": True,
                                    "line": raw.decode("utf-8", "replace"),
                                    "reject": f"cannot write {config.view} rows: {in_row(where) if where else 'TypeError'}"})
        payloads.append(payload)
    return pa.table({"payload": pa.array(payloads, pa.binary())})


def ray_results(files: Sequence[Path], config: Config,
                content_dirs: Sequence[str]) -> Generator[dict[str, Any], None, None]:
    """:func:`~.rows.process_line`'s result for each line of ``files``, in order."""
    with ray_session() as ray:
        ray.data.DataContext.get_current().execution_options.preserve_order = True
        if not files:
            return
        ds = ray.data.from_items([{"path": str(p)} for p in files], override_num_blocks=len(files))
        ds = ds.map_batches(_read_file, batch_size=1, batch_format="pyarrow")
        ds = ds.map_batches(_process, batch_format="pyarrow",
                            fn_kwargs={"config": config, "dirs": tuple(content_dirs)})
        for row in ds.iter_rows():
            result = orjson.loads(row["payload"])
            if "fatal" in result:
                raise ContentMissing(result["fatal"])
            yield result
