"""``orch-otel convert``'s engine-independent parts and its local engine:
read -> assemble -> convert -> write, with bad input quarantined, never fatal.

Outputs, for ``-o OUT.jsonl``:

* ``OUT.jsonl``: one replayable trace per line;
* ``<OUT dir>/content/content-<OUT stem>.jsonl``: captured contents, the
  layout :func:`orch_otel.tracefiles.load_contents` reads;
* ``OUT.jsonl.quarantine`` (only when something was quarantined): one JSON
  object per bad record or unusable span: ``where`` (``file:line`` or
  ``file@offset``, or ``trace <id>``), ``reason``, ``kind`` (``record`` or
  ``span``) and ``raw`` (the input as read) or ``span`` (a span-dump record).

All three are written under hidden ``.NAME.partial`` names and moved into
place only when the run read something usable; a run that fails or reads
nothing leaves the previous outputs as they were.

Balance: ``spans == converted_spans + quarantined_spans + duplicates``; bad
records whose spans cannot be counted (malformed lines, truncated messages)
are counted in ``bad_records``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ..assembly import CONFLICT, DUPLICATE, LATE, StreamAssembler
from ..converter import convert
from ..jsonvalues import unwritable
from ..spans import SpanRecord
from ..tracefiles import ContentStore
from .readers import input_files, read_file
from .records import Problem

EXIT_OK, EXIT_QUARANTINED, EXIT_NO_INPUT = 0, 1, 2


@dataclass
class Options:
    max_open_traces: int = 10_000
    linger: int = 50_000
    max_spans_per_trace: int = 100_000
    remember_closed: int = 10_000
    check: bool = False  # validate each trace against the schema and contract; invalid -> quarantine
    jobs: int = 1  # local engine processes (offline/jobs.py); 0: one per CPU core


@dataclass
class Summary:
    files: int = 0
    spans: int = 0  # span objects read, usable or not
    traces: int = 0  # traces written
    incomplete: int = 0  # of those, written with stop reason "incomplete"
    converted_spans: int = 0
    duplicates: int = 0  # identical copies dropped
    quarantined_spans: int = 0
    bad_records: int = 0  # quarantined lines/messages/files that are not single spans
    late: int = 0
    conflicts: int = 0
    failed_traces: int = 0  # traces whose spans were quarantined because conversion failed
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.spans == 0 and self.traces == 0:
            return EXIT_NO_INPUT
        return EXIT_QUARANTINED if (self.quarantined_spans or self.bad_records) else EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "warnings"}

    def merge(self, job: Summary) -> None:
        """Add one job's counts (``--jobs``); files are counted once, by the caller."""
        for key, value in job.as_dict().items():
            if key != "files":
                setattr(self, key, getattr(self, key) + value)
        self.warnings.extend(job.warnings)


def quarantine_path(out: Path) -> Path:
    return out.with_name(out.name + ".quarantine")


def content_path(out: Path) -> Path:
    return out.parent / "content" / f"content-{out.stem}.jsonl"


def partial_path(path: Path) -> Path:
    """Where an output is written until the run succeeds: hidden, beside it
    (directory inputs skip hidden files, so it is never read back)."""
    return path.with_name(f".{path.name}.partial")


class Outputs:
    """Writes traces, contents and quarantined records for one ``OUT``.

    Everything goes to hidden ``.NAME.partial`` files first; :meth:`commit`
    moves them into place (and removes an old quarantine or content file the
    new run has none of), :meth:`discard` removes them. Until ``commit``,
    an earlier run's outputs stay byte for byte."""

    def __init__(self, out: Path, quarantine: Path | None = None, *,
                 on_problem: Callable[[Problem], None] | None = None, max_remembered_refs: int = 100_000):
        if out.is_dir():
            raise IsADirectoryError(f"{out}: is a directory; -o names the trace file to write (e.g. {out}/traces.jsonl)")
        self.out = out
        self.quarantine = quarantine or quarantine_path(out)
        self.contents = content_path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        self._partials = {final: partial_path(final) for final in (self.out, self.quarantine, self.contents)}
        for stale in self._partials.values():  # left by a killed run
            stale.unlink(missing_ok=True)
        self._traces: IO[bytes] = open(self._partials[out], "wb")
        self._q: IO[bytes] | None = None
        self._contents = ContentStore(self._partials[self.contents], append=False, limit=max_remembered_refs)
        self.on_problem = on_problem
        self._closed = False
        self._content_dir_existed = self.contents.parent.exists()

    def paths(self) -> set[Path]:
        return {p.resolve() for pair in self._partials.items() for p in pair}

    def trace(self, line: bytes, contents: dict[str, str]) -> None:
        if contents:
            self._contents.add(contents)
        self._traces.write(line)

    def problem(self, problem: Problem, summary: Summary) -> None:
        self.quarantine_line(problem.to_line(), problem.is_span, summary)
        if self.on_problem is not None:
            self.on_problem(problem)

    def quarantine_line(self, line: bytes, is_span: bool, summary: Summary) -> None:
        """Write one quarantine record (JSON, without the newline) and count it."""
        if is_span:
            summary.quarantined_spans += 1
        else:
            summary.bad_records += 1
        self._quarantine_file().write(line + b"\n")

    def _quarantine_file(self) -> IO[bytes]:
        if self._q is None:  # created only when something is quarantined
            self._q = open(self._partials[self.quarantine], "wb")
        return self._q

    def absorb(self, part: Path) -> None:
        """Append the outputs a job wrote for ``-o part`` (``--jobs``) to these:
        its traces, its quarantine (problems the job counted already;
        ``on_problem`` sees them now) and its contents not written yet."""
        with open(part, "rb") as src:
            shutil.copyfileobj(src, self._traces)
        if quarantine_path(part).exists():
            with open(quarantine_path(part), "rb") as src:
                for line in src:
                    self._quarantine_file().write(line)
                    if self.on_problem is not None:
                        data = orjson.loads(line)
                        self.on_problem(Problem(data["where"], data["reason"], is_span=data["kind"] == "span"))
        if content_path(part).exists():
            with open(content_path(part), "rb") as src:
                for line in src:
                    item = orjson.loads(line)
                    self._contents.add({item["ref"]: item["text"]})

    def _close_files(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._traces.close()
        if self._q is not None:
            self._q.close()
        self._contents.close()

    def commit(self) -> None:
        """Move this run's files into place; an old quarantine or content
        file with no counterpart in this run is removed (it described another run)."""
        self._close_files()
        for final, partial in self._partials.items():
            if partial.exists():
                os.replace(partial, final)
            elif final != self.out:
                final.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove this run's files; the previous outputs stay as they were."""
        self._close_files()
        for partial in self._partials.values():
            partial.unlink(missing_ok=True)
        if not self._content_dir_existed:
            with contextlib.suppress(OSError):  # the content folder this run created, if still empty
                self.contents.parent.rmdir()


@dataclass
class Converted:
    """One trace's outcome: a JSON line to write, or problems to quarantine."""

    trace_id: str
    line: bytes | None = None
    contents: dict[str, str] = field(default_factory=dict)
    spans: int = 0
    incomplete: bool = False
    problems: list[Problem] = field(default_factory=list)
    warning: str | None = None


def convert_one(trace_id: str, spans: dict[str, SpanRecord], complete: bool, check: bool) -> Converted:
    """Convert one assembled trace; never raises (a failure quarantines its spans)."""
    result = Converted(trace_id, spans=len(spans))
    conversion = None
    try:
        conversion = convert(spans.values(), complete=complete)
        trace = conversion.trace
        if check:
            from ..validation import trace_errors

            errors = trace_errors(trace)
            if errors:
                raise ValueError(f"invalid trace: {errors[0]}")
        result.line = orjson.dumps(trace) + b"\n"
    except Exception as exc:  # one bad trace never stops the run
        where = unwritable(trace) if isinstance(exc, TypeError) and conversion is not None else None
        reason = (f"trace could not be written: {where}" if where else
                  f"trace could not be converted: {type(exc).__name__}: {exc}")
        result.problems = [Problem(f"trace {trace_id}", reason, span=s, is_span=True) for s in spans.values()]
        return result
    if conversion.problems:  # cycles broken, data left out or repaired: reported, not silent
        result.warning = f"trace {trace_id}: " + "; ".join(conversion.problems)
    result.contents = conversion.contents
    result.incomplete = conversion.incomplete
    return result


def record_converted(result: Converted, outputs: Outputs, summary: Summary) -> None:
    if result.warning:
        summary.warnings.append(result.warning)
    if result.line is None:
        summary.failed_traces += 1
        for problem in result.problems:
            outputs.problem(problem, summary)
        return
    outputs.trace(result.line, result.contents)
    summary.traces += 1
    summary.converted_spans += result.spans
    summary.incomplete += result.incomplete


@contextmanager
def rare_collections() -> Iterator[None]:
    """Run the cyclic garbage collector rarely for a while. The assembler keeps up
    to ``linger`` spans alive, and at the default thresholds the collector walks
    them over and over (a quarter of a conversion's CPU). Conversion makes
    almost no reference cycles, so memory stays bounded all the same."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], 100_000), max(old[1], 50), max(old[2], 50))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run_local(files: Iterable[Path], outputs: Outputs, options: Options, summary: Summary,
              on_bytes: Callable[[Path, int], None] | None = None, *, shard: tuple[int, int] | None = None) -> None:
    """The local engine. ``shard=(k, n)``: this is job ``k`` of ``n`` (see
    :mod:`orch_otel.offline.jobs`); it keeps only the traces that job owns and
    reports only its share of the problems found in the input."""
    with rare_collections():
        _run_local(files, outputs, options, summary, on_bytes, shard)


def owner(trace_id: str, jobs: int) -> int:
    """The job that converts a trace (ids are random hex: their first 32 bits spread evenly)."""
    return int(trace_id[:8], 16) % jobs


def _run_local(files: Iterable[Path], outputs: Outputs, options: Options, summary: Summary,
               on_bytes: Callable[[Path, int], None] | None, shard: tuple[int, int] | None) -> None:
    asm = StreamAssembler(max_open_traces=options.max_open_traces, linger=options.linger,
                          max_spans_per_trace=options.max_spans_per_trace, remember_closed=options.remember_closed)
    add, released, check = asm.add, asm.released, options.check
    job, jobs = shard or (0, 1)
    keep = (lambda trace_id: owner(trace_id, jobs) == job) if jobs > 1 else None

    def flush() -> None:
        for r in released:
            record_converted(convert_one(r.trace_id, r.spans, r.complete, check), outputs, summary)
        released.clear()

    for path in files:
        summary.files += 1
        callback = (lambda n, p=path: on_bytes(p, n)) if on_bytes is not None else None
        for chunk in read_file(path, callback, keep):
            for problem in chunk.problems:
                # With jobs, a bad span is reported by its trace's owner; other bad input by job 0.
                if jobs == 1 or (owner(problem.trace_id, jobs) if problem.trace_id else 0) == job:
                    summary.spans += problem.is_span
                    outputs.problem(problem, summary)
            if chunk.skipped:  # other jobs' spans: they still count towards linger
                asm.skip(chunk.skipped)
            summary.spans += len(chunk.spans)
            for span in chunk.spans:
                outcome = add(span)
                if outcome:
                    _unadded(outcome, span, chunk.where, outputs, summary)
            if released:
                flush()
    asm.drain()
    flush()


def _unadded(outcome: int, span: SpanRecord, where: str, outputs: Outputs, summary: Summary) -> None:
    if outcome == DUPLICATE:
        summary.duplicates += 1
    elif outcome == CONFLICT:
        summary.conflicts += 1
        outputs.problem(Problem(where, f"duplicate span id {span.span_id} with different content (first copy kept)",
                                span=span, is_span=True), summary)
    elif outcome == LATE:
        summary.late += 1
        outputs.problem(Problem(where, f"late span: trace {span.trace_id} was already written "
                                "(raise --linger, or use --engine ray for exact grouping)", span=span, is_span=True), summary)


def convert_inputs(inputs: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str], *, engine: str = "local",
                   address: str | None = None, options: Options | None = None, quarantine: str | None = None,
                   on_problem: Callable[[Problem], None] | None = None,
                   on_bytes: Callable[[Path, int], None] | None = None,
                   on_files: Callable[[list[Path]], None] | None = None) -> Summary:
    """Convert log files (or directories of them) into ``out``; see the module doc."""
    from .jobs import job_count, run_jobs

    options = options or Options()
    if engine not in ("local", "ray"):
        raise ValueError(f"unknown engine {engine!r} (local or ray)")
    if engine == "ray" and options.jobs != 1:
        raise ValueError("--jobs is for the local engine; Ray schedules its own workers")
    jobs = job_count(options.jobs)
    files, missing = input_files(inputs)
    if missing:  # a mistyped name: fail before touching the outputs
        raise FileNotFoundError(f"{missing[0]}: no such file or directory")
    summary = Summary()
    out_path = Path(out)
    outputs = Outputs(out_path, Path(quarantine) if quarantine else None, on_problem=on_problem)
    ok = False
    try:
        own = outputs.paths()
        files = [f for f in files if f.resolve() not in own]
        if on_files is not None:
            on_files(files)
        if engine == "ray":
            from .ray_engine import run_ray

            run_ray(files, outputs, options, summary, address=address)
        elif jobs > 1:
            run_jobs(files, outputs, options, summary, on_bytes)
        else:
            run_local(files, outputs, options, summary, on_bytes)
        ok = summary.exit_code != EXIT_NO_INPUT  # nothing usable read: the old outputs stay
    finally:
        if ok:
            outputs.commit()
        else:
            outputs.discard()
    return summary
