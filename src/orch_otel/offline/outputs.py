"""``orch-otel convert``'s outputs and the types every engine shares: the
options, the counts, one trace's conversion, and the files written.

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
import os
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from .._jsonvalues import unwritable
from ..content import ContentPolicy, Redactor
from ..converter import NotOrchestration, convert
from ..foreign import MIXED, is_definition, map_trace, source_of
from ..spans import SpanRecord
from ..tracefiles import ContentWriter, Quarantine, private_mkdir, private_opener
from .records import LEFT_OUT, Problem, without_content

EXIT_OK, EXIT_QUARANTINED, EXIT_NO_INPUT = 0, 1, 2


@dataclass
class Options:
    max_open_traces: int = 10_000
    linger: int = 50_000
    max_spans_per_trace: int = 100_000
    remember_closed: int = 10_000
    check: bool = False  # validate each trace against the schema and contract; invalid -> quarantine
    jobs: int = 1  # local engine processes (offline/jobs.py); 0: one per CPU core
    source: str = "auto"  # which instrumentation wrote the spans (foreign.SOURCES); auto: detected per trace
    capture_content: bool = False  # keep the content a foreign log carries (redacted); off: dropped
    redactors: tuple[Redactor, ...] | None = None  # with capture_content: instead of the default secret redactor
    columnar: bool = True  # JSON lines in blocks through pyarrow where it can (offline/columnar.py); same output


@dataclass
class ConvertSummary:
    """The counts of one ``orch-otel convert`` run (``DatasetSummary`` is the dataset command's)."""

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
    definitions: int = 0  # traces that only define agents (create_agent), not runs: counted, not written
    definition_spans: int = 0  # their spans
    not_orchestration: int = 0  # traces with no orch-otel span (an HTTP request's, a database's): counted, not written
    not_orchestration_spans: int = 0  # their spans: spans = converted + definition + not_orchestration
    # + quarantined spans + duplicates
    sources: Counter[str] = field(default_factory=Counter)  # traces written, by the instrumentation that wrote them
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.spans == 0 and self.traces == 0:
            return EXIT_NO_INPUT
        return EXIT_QUARANTINED if (self.quarantined_spans or self.bad_records) else EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "warnings"}

    def merge(self, job: ConvertSummary) -> None:
        """Add one job's counts (``--jobs``); files are counted once, by the caller."""
        for key, value in job.as_dict().items():
            if key == "sources":
                self.sources.update(value)
            elif key != "files":
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
                 on_problem: Callable[[Problem], None] | None = None, max_remembered_refs: int = 100_000,
                 keep_content: bool = False):
        if out.is_dir():
            raise IsADirectoryError(f"{out}: is a directory; -o names the trace file to write (e.g. {out}/traces.jsonl)")
        self.out = out
        self.quarantine = quarantine or quarantine_path(out)
        self.contents = content_path(out)
        private_mkdir(out.parent)
        self._partials = {final: partial_path(final) for final in (self.out, self.quarantine, self.contents)}
        for stale in self._partials.values():  # left by a killed run
            stale.unlink(missing_ok=True)
        self._traces: IO[bytes] = open(self._partials[out], "wb", opener=private_opener)
        self._quarantined = Quarantine(self._partials[self.quarantine])
        self._contents = ContentWriter(self._partials[self.contents], append=False, limit=max_remembered_refs)
        self.on_problem = on_problem
        self.keep_content = keep_content  # False: a quarantined span keeps no content (records.without_content)
        self._closed = False
        self._content_dir_existed = self.contents.parent.exists()

    def paths(self) -> set[Path]:
        return {p.resolve() for pair in self._partials.items() for p in pair}

    def trace(self, line: bytes, contents: dict[str, str]) -> None:
        if contents:
            self._contents.add(contents)
        self._traces.write(line)

    def problem(self, problem: Problem, summary: ConvertSummary) -> None:
        self.quarantine_line(problem.to_line(), problem.is_span, summary)
        if self.on_problem is not None:
            self.on_problem(problem)

    def quarantine_line(self, line: bytes, is_span: bool, summary: ConvertSummary) -> None:
        """Write one quarantine record (JSON, without the newline) and count it."""
        if is_span:
            summary.quarantined_spans += 1
            if not self.keep_content:
                line = _content_free(line)
        else:
            summary.bad_records += 1
        self._quarantined.add(line)

    def absorb(self, part: Path) -> None:
        """Append the outputs a job wrote for ``-o part`` (``--jobs``) to these:
        its traces, its quarantine (problems the job counted already;
        ``on_problem`` sees them now) and its contents not written yet."""
        with open(part, "rb") as src:
            shutil.copyfileobj(src, self._traces)
        if quarantine_path(part).exists():
            with open(quarantine_path(part), "rb") as src:
                for line in src:
                    self._quarantined.add(line.rstrip(b"\n"))
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
        self._quarantined.close()
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


def _content_free(line: bytes) -> bytes:
    """A quarantine line whose span keeps no content (:func:`.records.without_content`)."""
    try:
        return orjson.dumps(without_content(orjson.loads(line)))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # a value orjson cannot read back: keep where and why only
        data = orjson.loads(line[: line.index(b',"raw"')] + b"}") if b',"raw"' in line else {}
        return orjson.dumps({**data, "raw": LEFT_OUT}) if data else line


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
    source: str = ""  # the instrumentation that wrote the spans (foreign/sources.py)
    definition: bool = False  # only agent definitions, no run: not written
    not_run: bool = False  # no orch-otel span in it (converter.NotOrchestration): not written


_POLICIES: dict[tuple[bool, tuple[Redactor, ...] | None], ContentPolicy] = {}


def _content_policy(options: Options | None) -> ContentPolicy:
    """The policy for a foreign log's content, one per process and options:
    the environment's hash key and size limit, the options' redactors."""
    key = (options.capture_content, options.redactors) if options else (False, None)
    policy = _POLICIES.get(key)
    if policy is None:
        if len(_POLICIES) > 64:  # options made anew per call with fresh redactors cannot grow it without bound
            _POLICIES.clear()
        policy = _POLICIES[key] = ContentPolicy.from_env(capture=key[0], redactors=key[1], record_for_replay=False)
    return policy


def convert_one(trace_id: str, spans: dict[str, SpanRecord], complete: bool, check: bool,
                options: Options | None = None) -> Converted:
    """Convert one assembled trace, read as the instrumentation that wrote it
    (``options.source``); never raises (a failure quarantines its spans)."""
    result = Converted(trace_id, spans=len(spans))
    conversion = None
    records = list(spans.values())
    try:
        result.source, read_as = source_of(records, options.source if options else "auto")
        if is_definition(records):
            result.definition = True
            return result
        mapping_notes: list[str] = []
        records = map_trace(records, read_as, _content_policy(options), mapping_notes)
        try:
            conversion = convert(records, complete=complete)
        except NotOrchestration:
            result.not_run = True
            if mapping_notes:  # why a foreign log's spans could not be read as a run
                result.warning = f"trace {trace_id}: " + "; ".join(mapping_notes)
            return result
        trace = conversion.trace
        if check:
            from .._validation import trace_errors  # the schema validators load only for --check

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
    notes = mapping_notes + conversion.problems  # cycles broken, data left out or repaired: reported, not silent
    if result.source == MIXED:
        notes.insert(0, f"spans of several instrumentations, read as {read_as}'s (the others' as plain spans)")
    if notes:
        result.warning = f"trace {trace_id}: " + "; ".join(notes)
    result.contents = conversion.contents
    result.incomplete = conversion.incomplete
    return result


def record_converted(result: Converted, outputs: Outputs, summary: ConvertSummary) -> None:
    if result.warning:
        summary.warnings.append(result.warning)
    if result.definition:
        summary.definitions += 1
        summary.definition_spans += result.spans
        return
    if result.not_run:
        summary.not_orchestration += 1
        summary.not_orchestration_spans += result.spans
        return
    if result.line is None:
        summary.failed_traces += 1
        for problem in result.problems:
            outputs.problem(problem, summary)
        return
    outputs.trace(result.line, result.contents)
    summary.traces += 1
    summary.converted_spans += result.spans
    summary.incomplete += result.incomplete
    if result.source:
        summary.sources[result.source] += 1


