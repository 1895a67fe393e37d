"""The dataset pipeline: read lines -> parse and check -> prepare -> view rows
-> writer, with bad lines kept aside. :func:`process_line` is the one
per-record function; the local engine calls it in a loop, the Ray engine in
Ray Data tasks, and both feed the same writers in the same order, so their
outputs are identical."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .analysis import VIEWS, Config, prepare
from .reader import BadTrace, ContentStore, RawLine, RejectSink, content_dirs, iter_raw_lines, parse_trace
from .rewards import OutcomeError
from .schema import columns
from .views import BUILDERS, ContentMissing
from .writers import open_writer, output_path

ENGINES = ("local", "ray")
_REF_KEYS = ("content_ref", "input_ref", "tools_ref")


@dataclass
class Summary:
    view: str
    format: str
    engine: str
    output: str
    traces_read: int = 0
    traces_used: int = 0
    rows_written: int = 0
    rejects: int = 0
    rejects_path: str | None = None
    unknown_outcomes: list[str] = field(default_factory=list)
    traces_skipped: int = 0  # chat / triplets: traces whose LLM calls have no captured content
    skipped_trace_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def process_line(line: RawLine, config: Config, store: ContentStore) -> dict[str, Any]:
    """One trace line -> its rows, a reject saying why not, or (``missing_content``)
    the reason a view that needs captured content cannot use this trace."""
    base = {"where": line.where, "size": len(line.raw) + 1}
    try:
        trace = parse_trace(line, validate=config.validate)
    except BadTrace as exc:
        return {**base, "reject": str(exc), "line": line.raw.decode("utf-8", "replace")}
    try:
        prepared = prepare(trace, config)
        rows = BUILDERS[config.view](prepared, config, store)
    except ContentMissing as exc:
        return {**base, "trace_id": trace["trace_id"], "task_id": trace["task_id"], "missing_content": str(exc)}
    except Exception as exc:  # a trace the views cannot read is kept aside, never dropped
        return {**base, "reject": f"cannot build {config.view} rows: {type(exc).__name__}: {exc}",
                "line": line.raw.decode("utf-8", "replace")}
    result = {**base, "trace_id": trace["trace_id"], "task_id": trace["task_id"], "rows": rows}
    if config.view == "traces":
        refs = {e[k] for e in trace["events"] for k in _REF_KEYS if e.get(k)}
        result["contents"] = [[ref, text] for ref in sorted(refs) if (text := store.get(ref)) is not None]
    return result


def is_own_output(path: str | os.PathLike[str], outdir: Path) -> bool:
    """A file this command writes (rejects, non-trace views) found by a
    directory input: never read back as traces."""
    path = Path(path).resolve()
    if path.parent != outdir:
        return False
    return path.name.endswith(".rejects.jsonl") or path.name in {f"{v}.jsonl" for v in VIEWS if v != "traces"}


def _local_results(inputs: Sequence[str], config: Config, store: ContentStore,
                   exclude: Path) -> Iterator[dict[str, Any]]:
    explicit = {Path(p).resolve() for p in inputs if Path(p).is_file()}
    skip: dict[str, bool] = {}
    for line in iter_raw_lines(inputs):
        if line.path not in skip:
            skip[line.path] = Path(line.path).resolve() not in explicit and is_own_output(line.path, exclude)
        if not skip[line.path]:
            yield process_line(line, config, store)


def build(
    inputs: Sequence[str | os.PathLike[str]],
    outdir: str | os.PathLike[str],
    config: Config,
    *,
    fmt: str = "jsonl",
    engine: str = "local",
    allow_unknown_outcomes: bool = False,
    strict: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> Summary:
    """Write one view of the traces in ``inputs`` to ``outdir``.

    A trace whose LLM calls lack captured content gives no chat / triplets
    rows: it is skipped and counted (``Summary.traces_skipped``,
    ``skipped_trace_ids``). Raises ``ContentMissing`` for such a trace when
    ``strict``, and ``OutcomeError`` (outcome rows that match no trace); in
    both cases no dataset file is left in place.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    inputs = [str(p) for p in inputs]
    for path in inputs:
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    store = ContentStore(content_dirs(inputs))
    summary = Summary(config.view, fmt, engine, str(output_path(out, config.view, fmt)))
    rejects = RejectSink(out / f"{config.view}.rejects.jsonl")
    rejects.path.unlink(missing_ok=True)
    writer = open_writer(out, config.view, fmt, columns(config))
    contents = _ContentCopy(out) if config.view == "traces" else None
    trace_ids: set[str] = set()
    task_ids: set[str] = set()
    ok = False
    try:
        if engine == "ray":
            from .ray_engine import ray_results

            results = ray_results(inputs, config, store.directories, out.resolve())
        else:
            results = _local_results(inputs, config, store, out.resolve())
        for result in results:
            summary.traces_read += 1
            if "reject" in result:
                rejects.add(result["where"], result["reject"], result["line"].encode())
            elif "missing_content" in result:
                if strict:
                    raise ContentMissing(result["missing_content"] + " (strict: without it, such traces are skipped and counted)")
                summary.traces_skipped += 1
                summary.skipped_trace_ids.append(result["trace_id"])
                if config.outcomes is not None:  # read, so its outcome rows match a trace
                    trace_ids.add(result["trace_id"])
                    task_ids.add(result["task_id"])
            else:
                summary.traces_used += 1
                writer.write(result["rows"])
                if config.outcomes is not None:
                    trace_ids.add(result["trace_id"])
                    task_ids.add(result["task_id"])
                if contents is not None:
                    contents.add(result["contents"])
            if progress is not None:
                progress(result)
        if config.outcomes is not None:
            summary.unknown_outcomes = config.outcomes.unknown(trace_ids, task_ids)
            if summary.unknown_outcomes and not allow_unknown_outcomes:
                shown = summary.unknown_outcomes[:20]
                more = len(summary.unknown_outcomes) - len(shown)
                raise OutcomeError(
                    f"{len(summary.unknown_outcomes)} outcome row(s) match no trace read "
                    "(pass --allow-unknown-outcomes to write the dataset anyway):\n  "
                    + "\n  ".join(shown) + (f"\n  ... and {more} more" if more else "")
                )
        ok = True
    finally:
        writer.close(ok)
        rejects.close()
        if contents is not None:
            contents.close()
        store.close()
    summary.rows_written = writer.rows
    summary.rejects = rejects.count
    summary.rejects_path = str(rejects.path) if rejects.count else None
    (out / f"{config.view}.summary.json").write_bytes(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2))
    return summary


class _ContentCopy:
    """The content a re-written trace refers to, copied beside it so the
    output folder is a replayable trace directory on its own."""

    def __init__(self, outdir: Path):
        self.path = outdir / "content" / "content-traces.jsonl"
        self.path.unlink(missing_ok=True)
        self.seen: set[str] = set()
        self._handle = None

    def add(self, pairs: list[list[str]]) -> None:
        for ref, text in pairs:
            if ref in self.seen:
                continue
            self.seen.add(ref)
            if self._handle is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self.path, "wb")
            self._handle.write(orjson.dumps({"ref": ref, "text": text}) + b"\n")

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
