"""The dataset pipeline: find the trace files once -> (the views that build
prompts: a first pass, who gave each reply in the tasks of several traces,
:mod:`.tasks`) -> read lines -> parse and check -> prepare -> view rows
(:func:`~.rows.process_line`) -> writer, with bad lines quarantined
(``VIEW.rejects.jsonl``). The local engine runs the rows step
in a loop here, the Ray engine (:mod:`.ray_engine`) in Ray tasks, a range of lines each; both
feed the same writers in the same order, so their outputs are identical."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Generator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._inputs import Unreadable
from .._renamed import renamed_keyword
from ..tracefiles import (
    ContentIndex,
    ContentWriter,
    OnBytes,
    OnFiles,
    OnProblem,
    Problem,
    Quarantine,
    content_dirs,
    find_trace_files,
    private_mkdir,
    private_opener,
)
from .analysis import GROUP_VIEWS, Config
from .groups import finish as finish_groups
from .progress import LineProgress
from .ray_engine import ray_results
from .reader import LineLookup, raw_lines
from .rewards import OutcomeError, unknown_reward_terms
from .rows import is_own_output, process_line
from .schema import columns
from .tasks import reads_prompts, task_replies
from .tokenize import TokensMissing, load_tokenizer
from .trainers import CONTENT_FORMATS, TRAINER_ROWS
from .views import ContentMissing
from .writers import check_format, open_writer, output_path, partial_path

ENGINES = ("local", "ray")


class NoTraces(ValueError):
    """The inputs hold no trace line at all (no file, or only empty files)."""


class AllRejected(ValueError):
    """Every line read was rejected: there is nothing to write."""


class NoBranches(ValueError):
    """groups / preferences: no trace read is a branch of a fork (none has a ``fork`` event)."""


class NoPairs(ValueError):
    """preferences: branches were read, but no two of one fork have different rewards (often: none has a reward)."""


@dataclass
class DatasetSummary:
    """What one ``orch-otel dataset`` run read and wrote (``ConvertSummary`` is the convert command's)."""

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
    traces_without_tokens: int = 0  # of traces_skipped: triplets / art RL ids neither captured nor --tokenizer given
    traces_not_branches: int = 0  # groups / preferences: traces without a fork event, skipped (not rejected)
    groups: int = 0  # groups / preferences: the groups of branches read
    branches_without_reward: int = 0  # groups / preferences: branches with a null reward (no advantage, no pair)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def dataset_files(inputs: Sequence[str], outdir: Path) -> tuple[list[Path], list[Problem]]:
    """(the trace files to read, found once: :func:`~orch_otel.tracefiles.find_trace_files`
    less this command's own outputs in ``outdir`` that a directory input found;
    the files found in a directory that cannot be read, a FIFO or a symlink
    loop, each a problem). A named file that is no regular file raises."""
    explicit = {Path(p).resolve() for p in inputs if Path(p).is_file()}
    found, unread = find_trace_files(inputs)
    for problem in unread:
        if problem.where in {str(Path(p)) for p in inputs}:
            raise Unreadable(problem.where, problem.reason)
    files = [path for path in found if path.resolve() in explicit or not is_own_output(path, outdir)]
    return files, unread


def _local_results(files: Sequence[Path], config: Config, store: ContentIndex) -> Generator[dict[str, Any], None, None]:
    # the first pass, for the views that build prompts; with no content captured there is no reply to tell
    tasks = task_replies(files, store) if reads_prompts(config.view, config.trainer) and len(store) else None
    for path in files:
        try:
            for line in raw_lines(path):
                yield process_line(line, config, store, tasks)
        except Unreadable as exc:  # swapped for a FIFO since it was found: set aside, the other files read
            yield unread_file(Problem(exc.path, exc.reason))


def unread_file(problem: Problem) -> dict[str, Any]:
    """The result for a file that cannot be read: a reject naming the file."""
    return {"where": problem.where, "reject": problem.reason, "line": ""}


def _quarantine_record(where: str, error: str, raw: bytes) -> bytes:
    """A record of the rejects file: where, why, and the line itself."""
    return orjson.dumps({"where": where, "error": error, "line": raw.decode("utf-8", errors="replace")})


def build(
    inputs: Sequence[str | os.PathLike[str]],
    outdir: str | os.PathLike[str],
    config: Config,
    *,
    fmt: str = "jsonl",
    engine: str = "local",
    allow_unknown_outcomes: bool = False,
    strict: bool = False,
    on_files: OnFiles | None = None,
    on_bytes: OnBytes | None = None,
    on_problem: OnProblem | None = None,
    **renamed: Any,
) -> DatasetSummary:
    """Write one view of the traces in ``inputs`` to ``outdir``.

    The progress callbacks are :func:`orch_otel.offline.convert_inputs`'s:
    ``on_files`` gets the trace files once they are found, ``on_bytes`` one of
    them and the bytes of it read so far, ``on_problem`` each rejected line as
    a :class:`orch_otel.tracefiles.Problem` (``where``, ``reason``). The 0.1
    ``progress=`` (each line's result dict) still works for one release, with
    a ``DeprecationWarning``.

    A trace whose LLM calls lack captured content gives no chat / triplets
    rows: it is skipped and counted (``DatasetSummary.traces_skipped``,
    ``skipped_trace_ids``); with ``strict`` it raises ``ContentMissing``, and
    also without it when every trace read was skipped (no row to write).
    A later line with a trace id read already is dropped (``duplicates``;
    ``conflicting_duplicates`` and a reject when it differs from the first).

    Raises ``NoTraces`` (no trace line in the inputs), ``AllRejected`` (every
    line rejected), ``RewardSpecError`` (a ``--reward`` term that names no
    reward or metric), ``ContentMissing`` (``strict``, or no trace with content) and ``OutcomeError``
    (outcome rows that match no trace). Every output (dataset, rejects,
    content copy, summary) is written under a hidden partial name and moved
    into place only on success, so on any of these errors the previous
    outputs in ``outdir`` stay as they were.
    """
    legacy = renamed_keyword("orch_otel.datasets.build", renamed, "progress", "on_bytes= and on_problem", None)
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    check_format(config.view, fmt)
    if fmt in CONTENT_FORMATS and not config.need_content:  # a trainer's rows are prompts: content is needed
        config = dataclasses.replace(config, need_content=True)
    if fmt in TRAINER_ROWS:  # rows made per trace by the trainer format itself (datasets/art.py)
        config = dataclasses.replace(config, trainer=fmt)
    if config.tokenizer is not None:  # a wrong --tokenizer fails here, not as a reject per trace
        load_tokenizer(config.tokenizer)
    names = [str(p) for p in inputs]
    for path in names:
        if not Path(path).exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: not a folder; -o names the folder to write the dataset into")
    files, unread = dataset_files(names, out.resolve())
    if on_files is not None:
        on_files(files)
    created = not out.exists()
    private_mkdir(out)
    store = ContentIndex(content_dirs(names))
    summary = DatasetSummary(config.view, fmt, engine, str(output_path(out, config.view, fmt)))
    rejects_path = out / f"{config.view}.rejects.jsonl"
    quarantine = Quarantine(partial_path(rejects_path))  # the dataset's quarantine file
    quarantine.path.unlink(missing_ok=True)
    writer = open_writer(out, config.view, fmt, columns(config))
    contents_path = out / "content" / "content-traces.jsonl"  # beside the traces: the folder replays on its own
    contents = ContentWriter(partial_path(contents_path), append=False) if config.view == "traces" else None
    if contents is not None:
        contents.path.unlink(missing_ok=True)
    reports = LineProgress(files, on_bytes, on_problem, legacy)
    intake = _Intake(summary, config, writer, quarantine, contents, reports.line, strict)
    ok = False
    results = ray_results(files, config, store.directories) if engine == "ray" else _local_results(files, config, store)
    try:
        for problem in unread:
            intake.take(unread_file(problem))
        for result in results:
            intake.take(result)
        reports.finish()
        intake.finish_groups()
        intake.set_aside(writer.finish())
        intake.check(names, allow_unknown_outcomes)
        ok = True
    finally:
        results.close()  # the Ray engine leaves Ray by its policy even when the run fails
        intake.lookup.close()
        writer.close(ok)
        quarantine.close()
        if contents is not None:
            contents.close()
        store.close()
        _finish(quarantine.path, rejects_path, ok)
        if contents is not None:
            _finish(contents.path, contents_path, ok)
        if not ok and created:
            with contextlib.suppress(OSError):  # the folder this run made, if still empty
                out.rmdir()
    summary.rows_written = writer.rows
    summary.rejects = quarantine.count
    summary.rejects_path = str(rejects_path) if quarantine.count else None
    summary_path = out / f"{config.view}.summary.json"
    with open(partial_path(summary_path), "wb", opener=private_opener) as handle:
        handle.write(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2))
    os.replace(partial_path(summary_path), summary_path)
    return summary


def _finish(partial: Path, final: Path, ok: bool) -> None:
    """A run that succeeded: its file over the old one, and with no file this
    run the old one goes (it described another run). A run that failed: its
    file goes, the old one stays."""
    if not ok:
        partial.unlink(missing_ok=True)
    elif partial.exists():
        os.replace(partial, final)
    else:
        final.unlink(missing_ok=True)


class _Intake:
    """What one build does with each line's result, in input order: rows to the
    writer, bad lines and later copies of a trace to the quarantine, and the
    counts and ids that the checks after the last line need."""

    def __init__(self, summary: DatasetSummary, config: Config, writer: Any, quarantine: Quarantine,
                 contents: ContentWriter | None, progress: Callable[[dict[str, Any]], None] | None,
                 strict: bool) -> None:
        self.summary, self.config, self.writer, self.quarantine = summary, config, writer, quarantine
        self.contents, self.progress, self.strict = contents, progress, strict
        self.missing_content = ""  # the reason of the last trace skipped for lack of content
        self.trace_ids: set[str] = set()
        self.task_ids: set[str] = set()
        self.reward_names: set[str] = set()
        self.copies = _FirstCopies()
        self.lookup = LineLookup()
        self.members: list[tuple[tuple[str, str], dict[str, Any]]] | None = [] if config.view in GROUP_VIEWS else None
        self.tokens_missing: str | None = None  # the reason a trace had no token ids (the last one seen)

    def take(self, result: dict[str, Any]) -> None:
        summary, quarantine = self.summary, self.quarantine
        first = None if "reject" in result else self.copies.first_of(result)
        if "reject" in result:
            summary.traces_read += bool(result.get("is_trace"))
            quarantine.add(_quarantine_record(result["where"], result["reject"], result["line"].encode()))
        elif first is not None:  # a later copy of a trace read already: the first is kept
            summary.traces_read += 1
            if first[0] == result["digest"]:
                summary.duplicates += 1
            else:
                summary.conflicting_duplicates += 1
                result = {**result, "reject": f"trace {result['trace_id']} again, with different content "
                          f"(the first copy, {first[1]}, is kept)", "is_trace": True}
                quarantine.add(_quarantine_record(result["where"], result["reject"], self.lookup(result["where"])))
        elif "not_branch" in result:
            summary.traces_read += 1
            summary.traces_not_branches += 1
            self._seen(result)
        elif "missing_content" in result:
            summary.traces_read += 1
            error = TokensMissing if result.get("missing_tokens") else ContentMissing
            if self.strict:
                raise error(result["missing_content"] + " (strict: without it, such traces are skipped and counted)")
            if error is TokensMissing:
                summary.traces_without_tokens += 1
                self.tokens_missing = result["missing_content"]
            summary.traces_skipped += 1
            summary.skipped_trace_ids.append(result["trace_id"])
            self.missing_content = result["missing_content"]
            self._seen(result)
        else:
            summary.traces_read += 1
            summary.traces_used += 1
            tag = (result["where"], result["trace_id"])
            if self.members is not None:  # a branch: its rows are made once its whole group is read
                self.members.extend((tag, row) for row in result["rows"])
            else:
                self.set_aside(self.writer.write(result["rows"], tag))
            self.reward_names.update(result.get("reward_names", ()))
            self._seen(result)
            if self.contents is not None:
                self.contents.add(dict(result["contents"]))
        if self.progress is not None:
            self.progress(result)

    def _seen(self, result: dict[str, Any]) -> None:
        """A trace read (used or not), so that its outcome rows match it."""
        if self.config.outcomes is not None:
            self.trace_ids.add(result["trace_id"])
            self.task_ids.add(result["task_id"])

    def finish_groups(self) -> None:
        """groups / preferences: after the last line, the rows of each group of branches."""
        if self.members is None:
            return
        self.summary.branches_without_reward = sum(1 for _, row in self.members if row["reward"] is None)
        self.summary.groups, batches = finish_groups(self.config.view, self.members)
        self.members = []
        for tags, rows in batches:
            self.set_aside(self.writer.write(rows, tags))

    def _why_no_pairs(self) -> str:
        summary, config = self.summary, self.config
        n, k, read = summary.traces_used, summary.branches_without_reward, f"({summary.groups} group(s))"
        found = f"none of the {n} branch(es) read {read} has a reward" if k == n else \
            f"the {n} branch(es) read {read} have equal rewards within each group" if not k else \
            f"of the {n} branch(es) read {read}, {k} have no reward and the others equal rewards within their group"
        why = f"no preference pair: a pair is two branches of one fork whose rewards differ, and {found}"
        if not k:
            return why
        named = sorted({*self.reward_names, *config.outcome_fields} - {"reward"})
        if named and config.reward is None:
            why += f"; these traces and outcomes have {', '.join(named[:10])}: pass --reward {named[0]} to use it"
        return (why + ". A branch's reward is the --reward spec, else an outcome column named `reward`, else the "
                "rewards its run emitted (orch_otel.reward()): score the branches with --outcomes FILE (a trace_id "
                "column, one row per branch) and --reward NAME")

    def set_aside(self, traces: list[tuple[Any, str]]) -> None:
        """Traces whose rows the writer could not take (content or a value the checks let through): rejected.
        A tag is one trace's ``(where, trace_id)``, or a list of them (a group's rows)."""
        for tag, why in traces:
            for where, trace_id in (tag if isinstance(tag, list) else [tag]):
                self._reject_written(where, trace_id, why)

    def _reject_written(self, where: str, trace_id: str, why: str) -> None:
        self.summary.traces_used -= 1
        self.copies.forget(trace_id)
        reason = f"cannot write {self.config.view} rows: {why}"
        self.quarantine.add(_quarantine_record(where, reason, self.lookup(where)))
        if self.progress is not None:
            self.progress({"where": where, "reject": reason, "is_trace": True})

    def check(self, names: list[str], allow_unknown_outcomes: bool) -> None:
        """After the last line: something to write, every --reward term known, every outcome row matched."""
        summary, config, rejected = self.summary, self.config, self.quarantine.count
        if not summary.traces_used and not summary.traces_skipped and summary.traces_not_branches:
            raise NoBranches(f"none of the {summary.traces_read} trace(s) read is a branch of a fork (no event has a "
                             f"`fork` field): the {config.view} view is built from the branches that "
                             "`orch-otel replay TRACES --app MODULE:FACTORY --fork EVENT_ID --choose-each` writes")
        if not summary.traces_used and self.tokens_missing is not None:  # rows without ids would train on nothing
            raise TokensMissing(f"no trace read has token ids ({summary.traces_without_tokens} without): "
                                + self.tokens_missing)
        if not summary.traces_used and summary.traces_skipped:
            # zero rows must not look like success: every trace lacked the content this view needs
            raise ContentMissing(f"none of the {summary.traces_read} trace(s) read has the captured content the "
                                 f"{config.view} view needs, so there is no row to write. {self.missing_content}")
        if not summary.traces_used and not summary.traces_skipped:
            if not rejected:
                raise NoTraces(f"no trace found in {', '.join(names)} (trace files are *.jsonl, one trace per line, "
                               "as written by orch_otel.instrument() or `orch-otel convert`)")
            raise AllRejected(f"all {rejected} line(s) read were rejected (reasons above): no trace to build "
                              f"{config.view} rows from")
        if config.reward is not None:
            unknown = unknown_reward_terms(config.reward, self.reward_names, config.outcome_fields)
            if unknown:
                raise unknown
        if config.view == "preferences" and summary.traces_used and not self.writer.rows:
            raise NoPairs(self._why_no_pairs())
        if config.outcomes is not None:
            summary.unknown_outcomes = config.outcomes.unknown(self.trace_ids, self.task_ids)
            if summary.unknown_outcomes and not allow_unknown_outcomes:
                shown = summary.unknown_outcomes[:20]
                more = len(summary.unknown_outcomes) - len(shown)
                raise OutcomeError(
                    f"{len(summary.unknown_outcomes)} outcome row(s) match no trace read "
                    "(pass --allow-unknown-outcomes to write the dataset anyway):\n  "
                    + "\n  ".join(shown) + (f"\n  ... and {more} more" if more else "")
                )
