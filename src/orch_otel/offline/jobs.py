"""``orch-otel convert --jobs N``: the local engine on N processes.

Every job reads every input, but keeps only the traces it owns (by trace id,
:func:`~orch_otel.offline.local.owner`), so all the spans of a trace meet
in one job and each job runs the plain local engine on its share. Reading and
parsing are repeated in every job; decoding, assembly, conversion and writing
are split. That buys wall-clock time with spare cores: N jobs cost more CPU in
all than one.

* Every problem is reported once: a bad, late or conflicting span by the job
  that owns its trace (when its trace id could be read), any other bad record
  by job 0.
* ``linger`` counts every span read, as in one job; ``max_open_traces`` and
  ``remember_closed`` are shared out between the jobs, so memory stays within
  the same bounds.
* Each job writes its own part files, in a hidden folder beside ``OUT``;
  they are appended to ``OUT`` (and its quarantine and content store) job by
  job at the end, so traces come out grouped by job, not in input order.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .local import rare_collections, run_local
from .outputs import ConvertSummary, Options, Outputs


def job_count(requested: int) -> int:
    """``--jobs``: 0 means one per CPU core."""
    if requested < 0:
        raise ValueError(f"--jobs must be 0 (one per core) or more, got {requested}")
    return requested or os.cpu_count() or 1


def _job(job: int, jobs: int, files: list[str], part: str, options: Options, results: Any, progress: Any) -> None:
    """One job, in its own process: the local engine on this job's traces."""
    if progress is not None:
        progress.cancel_join_thread()  # exit even if the parent stopped reading progress: it is only a display
    try:
        summary = ConvertSummary()
        outputs = Outputs(Path(part), keep_content=options.capture_content)
        on_bytes = (lambda path, n: progress.put((str(path), n))) if progress is not None else None
        try:
            with rare_collections():  # this process is the job's own: its GC is ours to tune
                run_local([Path(f) for f in files], outputs, options, summary, on_bytes, shard=(job, jobs))
        except BaseException:
            outputs.discard()
            raise
        outputs.commit()
        results.put((job, summary, None))
    except BaseException:  # reported by the parent, which stops the run
        results.put((job, None, traceback.format_exc()))


def run_jobs(files: list[Path], outputs: Outputs, options: Options, summary: ConvertSummary,
             on_bytes: Callable[[Path, int], None] | None = None) -> None:
    jobs = job_count(options.jobs)
    summary.files += len(files)
    if not files:
        return
    share = replace(options, jobs=1, max_open_traces=max(1, options.max_open_traces // jobs),
                    remember_closed=options.remember_closed // jobs)
    ctx = multiprocessing.get_context("spawn")  # no fork: the caller may run threads (progress bars, exporters)
    results, progress = ctx.Queue(), ctx.Queue()
    with tempfile.TemporaryDirectory(prefix=".orch-otel-jobs-", dir=outputs.out.parent) as tmp:
        parts = [Path(tmp) / f"part-{k}.jsonl" for k in range(jobs)]
        procs = [ctx.Process(target=_job, args=(k, jobs, [str(f) for f in files], str(parts[k]), share, results,
                                                progress if k == 0 else None), daemon=True) for k in range(jobs)]
        for proc in procs:
            proc.start()
        try:
            done = _wait(procs, results, progress, on_bytes)
        finally:
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()
                proc.join()
        for k in range(jobs):
            summary.merge(done[k])
            outputs.absorb(parts[k])


def _wait(procs: list[Any], results: Any, progress: Any, on_bytes: Callable[[Path, int], None] | None) -> dict[int, ConvertSummary]:
    done: dict[int, ConvertSummary] = {}
    while len(done) < len(procs):
        while True:  # forward job 0's progress
            try:
                path, n = progress.get_nowait()
            except queue.Empty:
                break
            if on_bytes is not None:
                on_bytes(Path(path), n)
        try:
            job, job_summary, error = results.get(timeout=0.2)
        except queue.Empty:
            for k, proc in enumerate(procs):
                if k not in done and proc.exitcode not in (None, 0):
                    raise RuntimeError(f"conversion job {k} died (exit code {proc.exitcode})") from None
            continue
        if error is not None:
            raise RuntimeError(f"conversion job {job} failed:\n{error}")
        done[job] = job_summary
    return done
