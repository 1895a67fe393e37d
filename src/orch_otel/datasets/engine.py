"""The dataset pipeline: read lines -> parse and check -> prepare -> view rows
-> writer, with bad lines kept aside. :func:`process_line` is the one
per-record function; the local engine calls it in a loop, the Ray engine in
Ray Data tasks, and both feed the same writers in the same order, so their
outputs are identical."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .analysis import VIEWS, Config, prepare
from .reader import BadTrace, ContentStore, LineLookup, RawLine, RejectSink, content_dirs, iter_raw_lines, parse_trace
from .rewards import OutcomeError, unknown_reward_terms
from .schema import columns
from .views import BUILDERS, ContentMissing
from .writers import open_writer, output_path, partial_path

ENGINES = ("local", "ray")
_REF_KEYS = ("content_ref", "input_ref", "tools_ref")


class NoTraces(ValueError):
    """The inputs hold no trace line at all (no file, or only empty files)."""


class AllRejected(ValueError):
    """Every line read was rejected: there is nothing to write."""


@dataclass
class Summary:
    view: str
    format: str
    engine: str
    output: str
    traces_read: int = 0  # lines that are traces (rejected lines that are not traces are not counted)
    traces_used: int = 0
    rows_written: int = 0
    rejects: int = 0
    rejects_path: str | None = None
    duplicates: int = 0  # later copies of a trace id already read, identical to the first: dropped
    conflicting_duplicates: int = 0  # later copies that differ from the first: dropped, and kept in the rejects file
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
    except RecursionError:  # the checks bound nesting: this is a backstop, never a crash
        return {**base, "reject": "nested too deeply to check", "line": line.raw.decode("utf-8", "replace")}
    try:
        prepared = prepare(trace, config)
        rows = BUILDERS[config.view](prepared, config, store)
    except ContentMissing as exc:
        return {**base, **_identity(trace, line), "missing_content": str(exc)}
    except Exception as exc:  # a trace the views cannot read is kept aside, never dropped
        return {**base, "reject": f"cannot build {config.view} rows: {type(exc).__name__}: {exc}",
                "line": line.raw.decode("utf-8", "replace"), "is_trace": True}
    result = {**base, **_identity(trace, line), "rows": rows}
    if config.reward is not None:  # for the check that every --reward term names something
        result["reward_names"] = sorted(prepared.rewards)
    if config.view == "traces":
        refs = {e[k] for e in trace["events"] for k in _REF_KEYS if type(e.get(k)) is str}
        result["contents"] = [[ref, text] for ref in sorted(refs) if (text := store.get(ref)) is not None]
    return result


def _identity(trace: dict[str, Any], line: RawLine) -> dict[str, Any]:
    """Ids, and a digest of the line to tell a copy of a trace from a different trace under the same id."""
    return {"trace_id": trace["trace_id"], "task_id": trace["task_id"],
            "digest": hashlib.blake2b(line.raw, digest_size=16).hexdigest()}


class _FirstCopies:
    """Trace ids read so far (with the first copy's digest and place), to drop
    later copies: trace files plus the same runs converted from a spool, a
    file given twice. Memory grows with the number of traces (some 350 bytes each)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, str]] = {}

    def first_of(self, result: dict[str, Any]) -> tuple[str, str] | None:
        """None for the first copy of its trace id (remembered), else (digest, where) of the first."""
        first = self._seen.get(result["trace_id"])
        if first is None:
            self._seen[result["trace_id"]] = (result["digest"], result["where"])
        return first

    def forget(self, trace_id: str) -> None:
        """The copy remembered was set aside: a later copy may be the one used."""
        self._seen.pop(trace_id, None)


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
    ``skipped_trace_ids``); with ``strict`` it raises ``ContentMissing``.
    A later line with a trace id read already is dropped (``duplicates``;
    ``conflicting_duplicates`` and a reject when it differs from the first).

    Raises ``NoTraces`` (no trace line in the inputs), ``AllRejected`` (every
    line rejected), ``RewardSpecError`` (a ``--reward`` term that names no
    reward or metric), ``ContentMissing`` (``strict``) and ``OutcomeError``
    (outcome rows that match no trace). Every output (dataset, rejects,
    content copy, summary) is written under a hidden partial name and moved
    into place only on success, so on any of these errors the previous
    outputs in ``outdir`` stay as they were.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    inputs = [str(p) for p in inputs]
    for path in inputs:
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: not a folder; -o names the folder to write the dataset into")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    store = ContentStore(content_dirs(inputs))
    summary = Summary(config.view, fmt, engine, str(output_path(out, config.view, fmt)))
    rejects_path = out / f"{config.view}.rejects.jsonl"
    rejects = RejectSink(partial_path(rejects_path))
    rejects.path.unlink(missing_ok=True)
    writer = open_writer(out, config.view, fmt, columns(config))
    contents = _ContentCopy(out) if config.view == "traces" else None
    trace_ids: set[str] = set()
    task_ids: set[str] = set()
    reward_names: set[str] = set()
    copies = _FirstCopies()
    lookup = LineLookup()

    def set_aside(traces: list[tuple[tuple[str, str], str]]) -> None:
        """Traces whose rows the writer could not take (content or a value the checks let through): rejected."""
        for (where, trace_id), why in traces:
            summary.traces_used -= 1
            copies.forget(trace_id)
            reject = {"where": where, "reject": f"cannot write {config.view} rows: {why}", "is_trace": True}
            rejects.add(where, reject["reject"], lookup(where))
            if progress is not None:
                progress(reject)

    ok = False
    try:
        if engine == "ray":
            from .ray_engine import ray_results

            results = ray_results(inputs, config, store.directories, out.resolve())
        else:
            results = _local_results(inputs, config, store, out.resolve())
        for result in results:
            first = None if "reject" in result else copies.first_of(result)
            if "reject" in result:
                summary.traces_read += bool(result.get("is_trace"))
                rejects.add(result["where"], result["reject"], result["line"].encode())
            elif first is not None:  # a later copy of a trace read already: the first is kept
                summary.traces_read += 1
                if first[0] == result["digest"]:
                    summary.duplicates += 1
                else:
                    summary.conflicting_duplicates += 1
                    result = {**result, "reject": f"trace {result['trace_id']} again, with different content "
                              f"(the first copy, {first[1]}, is kept)", "is_trace": True}
                    rejects.add(result["where"], result["reject"], lookup(result["where"]))
            elif "missing_content" in result:
                summary.traces_read += 1
                if strict:
                    raise ContentMissing(result["missing_content"] + " (strict: without it, such traces are skipped and counted)")
                summary.traces_skipped += 1
                summary.skipped_trace_ids.append(result["trace_id"])
                if config.outcomes is not None:  # read, so its outcome rows match a trace
                    trace_ids.add(result["trace_id"])
                    task_ids.add(result["task_id"])
            else:
                summary.traces_read += 1
                summary.traces_used += 1
                set_aside(writer.write(result["rows"], (result["where"], result["trace_id"])))
                reward_names.update(result.get("reward_names", ()))
                if config.outcomes is not None:
                    trace_ids.add(result["trace_id"])
                    task_ids.add(result["task_id"])
                if contents is not None:
                    contents.add(result["contents"])
            if progress is not None:
                progress(result)
        set_aside(writer.finish())
        if not summary.traces_used and not summary.traces_skipped:
            if not rejects.count:
                raise NoTraces(f"no trace found in {', '.join(inputs)} (trace files are *.jsonl, one trace per line, "
                               "as written by orch_otel.instrument() or `orch-otel convert`)")
            raise AllRejected(f"all {rejects.count} line(s) read were rejected (reasons above): no trace to build "
                              f"{config.view} rows from")
        if config.reward is not None:
            unknown = unknown_reward_terms(config.reward, reward_names, config.outcome_fields)
            if unknown:
                raise unknown
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
        lookup.close()
        writer.close(ok)
        rejects.close()
        if contents is not None:
            contents.close(ok)
        store.close()
        if ok:
            _put_in_place(rejects.path, rejects_path)
        else:
            rejects.path.unlink(missing_ok=True)
            if created:
                with contextlib.suppress(OSError):  # the folder this run made, if still empty
                    out.rmdir()
    summary.rows_written = writer.rows
    summary.rejects = rejects.count
    summary.rejects_path = str(rejects_path) if rejects.count else None
    summary_path = out / f"{config.view}.summary.json"
    partial_path(summary_path).write_bytes(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2))
    os.replace(partial_path(summary_path), summary_path)
    return summary


def _put_in_place(partial: Path, final: Path) -> None:
    """This run's file over the old one; no file this run: the old one goes (it described another run)."""
    if partial.exists():
        os.replace(partial, final)
    else:
        final.unlink(missing_ok=True)


class _ContentCopy:
    """The content a re-written trace refers to, copied beside it so the
    output folder is a replayable trace directory on its own."""

    def __init__(self, outdir: Path):
        self.path = outdir / "content" / "content-traces.jsonl"
        self.partial = partial_path(self.path)
        self.partial.unlink(missing_ok=True)
        self.seen: set[str] = set()
        self._handle = None

    def add(self, pairs: list[list[str]]) -> None:
        for ref, text in pairs:
            if ref in self.seen:
                continue
            self.seen.add(ref)
            if self._handle is None:
                self.partial.parent.mkdir(parents=True, exist_ok=True)
                self._handle = open(self.partial, "wb")
            self._handle.write(orjson.dumps({"ref": ref, "text": text}) + b"\n")

    def close(self, ok: bool = True) -> None:
        if self._handle is not None:
            self._handle.close()
        if ok:
            _put_in_place(self.partial, self.path)
        else:
            self.partial.unlink(missing_ok=True)
