"""The Ray Data engine: the same :func:`~.engine.process_line` run in Ray
tasks, results streamed back to the driver in input order (``preserve_order``)
and written by the same writers as the local engine.

Ray is imported only here, and only when ``--engine ray`` is asked for. If no
Ray runtime is running, one is started for this process (``ray.init``); start
your own first (``ray.init(address=...)``) to use a cluster.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..jsonvalues import unwritable
from ..tracefiles import numbered_lines, trace_files
from .analysis import Config
from .reader import ContentStore, RawLine
from .views import ContentMissing
from .writers import in_row

LINES_PER_BATCH = 256
_stores: dict[tuple[str, ...], ContentStore] = {}  # per worker process: index built once


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise RuntimeError(
            "--engine ray needs Ray Data: pip install 'orch-otel[ray]' (or 'ray[data]'); "
            "the default --engine local needs nothing more"
        ) from None
    return ray


def _table(chunk: dict[str, list[Any]]):
    import pyarrow as pa

    return pa.table({"path": pa.array(chunk["path"], pa.string()), "lineno": pa.array(chunk["lineno"], pa.int64()),
                     "raw": pa.array(chunk["raw"], pa.binary())})


def _read_file(batch: Any) -> Iterator[Any]:
    """One trace file (a batch of one path) -> batches of its non-empty lines."""
    for path in batch.column("path").to_pylist():
        chunk: dict[str, list[Any]] = {"path": [], "lineno": [], "raw": []}
        with open(path, "rb") as handle:
            for lineno, raw in numbered_lines(handle):
                if not raw.strip():
                    continue
                chunk["path"].append(str(path))
                chunk["lineno"].append(lineno)
                chunk["raw"].append(raw.rstrip(b"\r\n"))
                if len(chunk["raw"]) >= LINES_PER_BATCH:
                    yield _table(chunk)
                    chunk = {"path": [], "lineno": [], "raw": []}
        if chunk["raw"]:
            yield _table(chunk)


def _process(batch: Any, config: Config, dirs: tuple[str, ...]) -> Any:
    import pyarrow as pa

    from .engine import process_line

    store = _stores.get(dirs)
    if store is None:
        store = _stores[dirs] = ContentStore(list(dirs))
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


def ray_results(inputs: Sequence[str], config: Config, content_dirs: Sequence[str],
                exclude: Path) -> Iterator[dict[str, Any]]:
    ray = _import_ray()
    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    from .engine import is_own_output

    explicit = {Path(p).resolve() for p in inputs if Path(p).is_file()}
    files = [str(p) for p in trace_files(inputs) if p.resolve() in explicit or not is_own_output(p, exclude)]
    for path in files:
        if not Path(path).is_file():
            raise FileNotFoundError(f"{path}: no such trace file")
    if not files:
        return
    ds = ray.data.from_items([{"path": p} for p in files], override_num_blocks=len(files))
    ds = ds.map_batches(_read_file, batch_size=1, batch_format="pyarrow")
    ds = ds.map_batches(_process, batch_format="pyarrow",
                        fn_kwargs={"config": config, "dirs": tuple(content_dirs)})
    for row in ds.iter_rows():
        result = orjson.loads(row["payload"])
        if "fatal" in result:
            raise ContentMissing(result["fatal"])
        yield result
