"""Writers: ``jsonl``, ``parquet`` (pyarrow), ``hf`` (a ``datasets``
``save_to_disk`` folder), and the trainers' own ``verl`` (Parquet) and
``art`` (JSONL trajectories), whose rows :mod:`.trainers` makes. Each
writes to a temporary name and moves the result into place only on
:meth:`close` after success, so a failed run never leaves
a half dataset that looks whole. Rows are written in batches: memory is
bounded by the batch size, not the dataset size. Each :meth:`write` is one
trace's rows with a tag; rows a format cannot hold set their trace aside
(whole), and ``write`` or :meth:`finish` returns ``[(tag, why)]`` for them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import IO, Any

import orjson

from .._jsonvalues import unwritable
from ..tracefiles import private_mkdir, private_open, private_opener
from .analysis import VIEWS
from .art import group_line
from .schema import arrow_schema
from .trainers import FITS
from .verl import SFT_VIEWS, tools_type, verl_rows, verl_schema

FORMATS = ("jsonl", "parquet", "hf", "verl", "art")
BATCH_ROWS = 2_000


SetAside = list[tuple[Any, str]]  # (the tag a trace's rows were written with, why they could not be)


def partial_path(path: Path) -> Path:
    """Where an output is written until the run succeeds: hidden, beside it."""
    return path.with_name(f".{path.name}.partial")


def output_path(outdir: str | os.PathLike[str], view: str, fmt: str) -> Path:
    suffix = {"jsonl": ".jsonl", "parquet": ".parquet", "hf": "", "verl": ".verl.parquet", "art": ".art.jsonl"}[fmt]
    return Path(outdir) / f"{view}{suffix}"


def _need(module: str, fmt: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise RuntimeError(
            f"the {fmt} format needs the {module!r} package: pip install 'orch-otel[datasets]'"
        ) from None


class JsonlWriter:
    def __init__(self, path: Path, columns: list[tuple[str, str]]):
        self.path = path
        self.tmp = partial_path(path)
        private_mkdir(path.parent)
        self._handle: IO[bytes] = open(self.tmp, "wb", opener=private_opener)
        self.rows = 0

    def write(self, rows: list[dict[str, Any]], tag: Any = None) -> SetAside:
        """One trace's rows, all or none: ``[(tag, why)]`` when they cannot be written."""
        try:
            data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
        except TypeError as exc:  # an integer beyond 64 bits, nesting orjson refuses
            where = unwritable(rows)
            return [(tag, in_row(where) if where else f"{type(exc).__name__}: {exc}")]
        self._handle.write(data)
        self.rows += len(rows)
        return []

    def finish(self) -> SetAside:
        return []

    def close(self, ok: bool = True) -> None:
        self._handle.close()
        if ok:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def in_row(where: str) -> str:
    """``[k].column...: why`` (:func:`unwritable` over a list of rows) as
    ``column...: why``: the row number within a trace is no help to the reader."""
    rest = where[where.index("]") + 1:]
    if rest.startswith("."):
        return rest[1:]
    return rest if rest.startswith("[") else rest.lstrip(": ")


def _to_arrow_rows(rows: list[dict[str, Any]], json_cols: list[str]) -> list[dict[str, Any]]:
    if not json_cols:
        return rows
    out = []
    for row in rows:
        row = dict(row)
        for name in json_cols:
            value = row.get(name)
            row[name] = None if value is None else orjson.dumps(value).decode()
        out.append(row)
    return out


def check_format(view: str, fmt: str) -> None:
    """A clear error for a format that is unknown or does not fit the view."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if view not in FITS.get(fmt, VIEWS):
        fitting = [f for f in FORMATS if view in FITS.get(f, VIEWS)]
        takes = f"{', '.join(FITS[fmt])} view{'s' * (len(FITS[fmt]) > 1)}"
        raise ValueError(f"the {fmt} format does not fit the {view} view: {fmt} takes the {takes} "
                         f"(rows that start from a prompt); write {view} as {', '.join(fitting)}")


class ParquetWriter:
    def __init__(self, path: Path, columns: list[tuple[str, str]], fmt: str = "parquet", schema: Any = None):
        self.pa = _need("pyarrow", fmt)
        self.pq = _need("pyarrow.parquet", fmt)
        self.path = path
        self.tmp = partial_path(path)
        private_mkdir(path.parent)
        self.tmp.unlink(missing_ok=True)  # made anew, private: pyarrow then writes into it, keeping its mode
        os.close(private_open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        self.schema = schema if schema is not None else arrow_schema(columns)
        self.json_cols = [name for name, kind in columns if kind == "json"]
        self._writer: Any = None  # opened at the first write: a subclass may settle the schema until then
        self._buffer: list[tuple[Any, list[dict[str, Any]]]] = []  # (tag, rows) per trace
        self._pending = 0
        self.rows = 0

    def write(self, rows: list[dict[str, Any]], tag: Any = None) -> SetAside:
        """Buffer one trace's rows; every BATCH_ROWS rows they are converted
        and written together. Returns the traces (of this batch) set aside:
        ``[(tag, why)]``, nothing of theirs written."""
        self._buffer.append((tag, rows))
        self._pending += len(rows)
        self.rows += len(rows)
        return self._flush() if self._pending >= BATCH_ROWS else []

    def finish(self) -> SetAside:
        """Write what is buffered; the traces set aside, as :meth:`write` says."""
        return self._flush()

    def _table(self, rows: list[dict[str, Any]]) -> Any:
        return self.pa.Table.from_pylist(_to_arrow_rows(rows, self.json_cols), schema=self.schema)

    def _flush(self) -> SetAside:
        if not self._buffer:
            return []
        buffer, self._buffer, self._pending = self._buffer, [], 0
        if self._writer is None:
            self._writer = self.pq.ParquetWriter(str(self.tmp), self.schema)
        try:
            self._writer.write_table(self._table([row for _, rows in buffer for row in rows]))
            return []
        except (TypeError, ValueError, OverflowError, self.pa.ArrowException):
            pass
        # Some trace's rows do not fit (rare): convert trace by trace, set aside those that fail.
        tables, aside = [], []
        for tag, rows in buffer:
            try:
                tables.append(self._table(rows))
            except (TypeError, ValueError, OverflowError, self.pa.ArrowException) as exc:
                aside.append((tag, self._fault(rows, exc)))
                self.rows -= len(rows)
        if tables:
            self._writer.write_table(self.pa.concat_tables(tables).combine_chunks())
        return aside

    def _fault(self, rows: list[dict[str, Any]], exc: Exception) -> str:
        """Where in ``rows`` orjson (JSON columns) or Arrow cannot take a value."""
        where = unwritable(rows)
        if where is not None:  # worded as JsonlWriter and the Ray engine word it
            return in_row(where)
        for field in self.schema:
            if field.name in self.json_cols:
                continue
            values = [row.get(field.name) for row in rows]
            try:
                self.pa.array(values, type=field.type)
            except (TypeError, ValueError, OverflowError, self.pa.ArrowException) as column_exc:
                return f"{field.name}: {type(column_exc).__name__}: {column_exc}"
        return f"{type(exc).__name__}: {exc}"

    def close(self, ok: bool = True) -> None:
        if ok and self._buffer:  # rows set aside here would go unreported
            raise RuntimeError("ParquetWriter.finish() must be called before close()")
        if self._writer is None:
            self._writer = self.pq.ParquetWriter(str(self.tmp), self.schema)
        self._writer.close()
        if ok:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


class HFWriter:
    """Streams rows into a Parquet file, then lets ``datasets`` turn it into a
    ``save_to_disk`` folder (memory-mapped: no full copy in memory)."""

    def __init__(self, path: Path, columns: list[tuple[str, str]]):
        self.datasets = _need("datasets", "hf")
        self.path = path
        self.work = partial_path(path)
        shutil.rmtree(self.work, ignore_errors=True)
        private_mkdir(self.work)
        self._parquet = ParquetWriter(self.work / "rows.parquet", columns, fmt="hf")

    @property
    def rows(self) -> int:
        return self._parquet.rows

    def write(self, rows: list[dict[str, Any]], tag: Any = None) -> SetAside:
        return self._parquet.write(rows, tag)

    def finish(self) -> SetAside:
        return self._parquet.finish()

    def close(self, ok: bool = True) -> None:
        self._parquet.close(ok)
        try:
            if ok:
                from datasets.utils import logging as hf_logging

                bars = hf_logging.is_progress_bar_enabled()
                hf_logging.disable_progress_bar()
                try:
                    ds = self.datasets.Dataset.from_parquet(str(self._parquet.path), cache_dir=str(self.work / "cache"))
                    staged = self.work / "dataset"
                    ds.save_to_disk(str(staged))
                    del ds
                    for part in [staged, *staged.rglob("*")]:  # written by datasets under the umask: private, as ours
                        os.chmod(part, 0o700 if part.is_dir() else 0o600)
                finally:
                    if bars:
                        hf_logging.enable_progress_bar()
                old = self.path.with_name(f".{self.path.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                if self.path.exists():  # moved aside, not deleted, until the new folder is in place
                    os.replace(self.path, old)
                os.replace(staged, self.path)
                shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(self.work, ignore_errors=True)


class VerlWriter(ParquetWriter):
    """verl's Parquet: each trace's view rows mapped by :func:`~.verl.verl_rows`,
    numbered across the file. For ``chat`` (whose ``tools`` column is typed
    from every row, see :mod:`.verl`) the rows are written at the end."""

    def __init__(self, path: Path, view: str):
        _need("pyarrow", "verl")  # the missing-extra message before the schema needs pyarrow
        super().__init__(path, [], fmt="verl", schema=verl_schema(view))
        self.view = view
        self._index = 0

    def write(self, rows: list[dict[str, Any]], tag: Any = None) -> SetAside:
        mapped = verl_rows(self.view, rows, self._index)
        self._index += len(mapped)
        if self.view not in SFT_VIEWS:
            return super().write(mapped, tag)
        self._buffer.append((tag, mapped))
        self.rows += len(mapped)
        return []

    def finish(self) -> SetAside:
        if self.view in SFT_VIEWS and self._writer is None:
            self.schema = verl_schema(self.view, tools_type(self.pa, [row for _, rows in self._buffer for row in rows]))
        return super().finish()


class ArtWriter(JsonlWriter):
    """ART trajectory groups, one JSON line per group (:mod:`.art`); ``rows`` counts trajectories. A group
    takes branches from several traces, so trajectories are held (as JSON) until :meth:`finish`."""

    def __init__(self, path: Path, columns: list[tuple[str, str]]):
        super().__init__(path, columns)
        self._groups: dict[str, list[bytes]] = {}

    def write(self, rows: list[dict[str, Any]], tag: Any = None) -> SetAside:
        try:
            data = [orjson.dumps(r) for r in rows]
        except TypeError as exc:
            where = unwritable(rows)
            return [(tag, in_row(where) if where else f"{type(exc).__name__}: {exc}")]
        for row, line in zip(rows, data):
            self._groups.setdefault(row["metadata"]["art_group"], []).append(line)
        self.rows += len(rows)
        return []

    def finish(self) -> SetAside:
        for key, trajectories in self._groups.items():
            self._handle.write(group_line(key, trajectories))
        self._groups = {}
        return []


def open_writer(outdir: str | os.PathLike[str], view: str, fmt: str, columns: list[tuple[str, str]]):
    check_format(view, fmt)
    path = output_path(outdir, view, fmt)
    if fmt == "jsonl":
        return JsonlWriter(path, columns)
    if fmt == "art":
        return ArtWriter(path, columns)
    if fmt == "parquet":
        return ParquetWriter(path, columns)
    if fmt == "verl":
        return VerlWriter(path, view)
    return HFWriter(path, columns)
