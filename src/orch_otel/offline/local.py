"""``orch-otel convert``'s local engine: read -> assemble -> convert -> write
in one streaming pass, with bad input quarantined, never fatal. With
``shard``, one job of ``--jobs`` (:mod:`orch_otel.offline.jobs`)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .._assembly import CONFLICT, DUPLICATE, LATE, StreamAssembler
from ..foreign import AUTOGEN, RunPool
from ..spans import SpanRecord
from .outputs import ConvertSummary, Options, Outputs, convert_one, record_converted
from .readers import read_file
from .records import Problem


@contextmanager
def rare_collections() -> Iterator[None]:
    """Run the cyclic garbage collector rarely for a while. The assembler keeps up
    to ``linger`` spans alive, and at the default thresholds the collector walks
    them over and over (a quarter of a conversion's CPU). Conversion makes
    almost no reference cycles, so memory stays bounded all the same.

    The threshold is the whole process's, so only processes that orch-otel
    owns use this: the ``orch-otel convert`` command, the ``--jobs``
    workers and the ``--engine ray`` tasks. :func:`run_local` called from a host's code leaves its GC alone."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], 100_000), max(old[1], 50), max(old[2], 50))
    try:
        yield
    finally:
        gc.set_threshold(*old)


def run_local(files: Iterable[Path], outputs: Outputs, options: Options, summary: ConvertSummary,
              on_bytes: Callable[[Path, int], None] | None = None, *, shard: tuple[int, int] | None = None) -> None:
    """The local engine. ``shard=(k, n)``: this is job ``k`` of ``n`` (see
    :mod:`orch_otel.offline.jobs`); it keeps only the traces that job owns and
    reports only its share of the problems found in the input. The garbage
    collector's settings are the caller's (see :func:`rare_collections`)."""
    _run_local(files, outputs, options, summary, on_bytes, shard)


def owner(trace_id: str, jobs: int) -> int:
    """The job that converts a trace (ids are random hex: their first 32 bits spread evenly)."""
    return int(trace_id[:8], 16) % jobs


def _run_local(files: Iterable[Path], outputs: Outputs, options: Options, summary: ConvertSummary,
               on_bytes: Callable[[Path, int], None] | None, shard: tuple[int, int] | None) -> None:
    asm = StreamAssembler(max_open_traces=options.max_open_traces, linger=options.linger,
                          max_spans_per_trace=options.max_spans_per_trace, remember_closed=options.remember_closed)
    add, released, check = asm.add, asm.released, options.check
    job, jobs = shard or (0, 1)
    keep = (lambda trace_id: owner(trace_id, jobs) == job) if jobs > 1 else None
    # AutoGen's runtime splits a run over many traces: one process sees them all only without --jobs
    pool = RunPool() if jobs == 1 and options.source in ("auto", AUTOGEN) else None

    def convert(batch: Iterable) -> None:
        for r in batch:
            record_converted(convert_one(r.trace_id, r.spans, r.complete, check, options), outputs, summary)

    def flush() -> None:
        for r in released:
            convert(pool.offer(r) if pool is not None else (r,))
        released.clear()

    for path in files:
        summary.files += 1
        callback = (lambda n, p=path: on_bytes(p, n)) if on_bytes is not None else None
        for chunk in read_file(path, callback, keep, columnar=options.columnar):
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
    if pool is not None:
        convert(pool.drain())


def conflicting_copy(where: str, span: SpanRecord) -> Problem:
    """A second copy of a span id whose content differs from the first one's (which is kept)."""
    return Problem(where, f"duplicate span id {span.span_id} with different content (first copy kept)",
                   span=span, is_span=True)


def _unadded(outcome: int, span: SpanRecord, where: str, outputs: Outputs, summary: ConvertSummary) -> None:
    if outcome == DUPLICATE:
        summary.duplicates += 1
    elif outcome == CONFLICT:
        summary.conflicts += 1
        outputs.problem(conflicting_copy(where, span), summary)
    elif outcome == LATE:
        summary.late += 1
        outputs.problem(Problem(where, f"late span: trace {span.trace_id} was already written "
                                "(raise --linger, or use --engine ray for exact grouping)", span=span, is_span=True), summary)
