"""``orch-otel convert``: find the inputs, open the outputs, and hand the run
to one engine: the local streaming pass (:mod:`.local`), ``--jobs N`` local
processes (:mod:`.jobs`) or Ray tasks (:mod:`.ray_engine`). The types every
engine shares, and the files a run writes, are in :mod:`.outputs`."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from .._inputs import Unreadable, why_unreadable
from ..foreign import AUTOGEN
from .jobs import job_count, run_jobs
from .local import run_local
from .outputs import EXIT_NO_INPUT, ConvertSummary, Options, Outputs
from .ray_engine import run_ray
from .readers import input_files
from .records import Problem

ENGINES = ("local", "ray")


def convert_inputs(inputs: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str], *, engine: str = "local",
                   address: str | None = None, options: Options | None = None, quarantine: str | None = None,
                   on_problem: Callable[[Problem], None] | None = None,
                   on_bytes: Callable[[Path, int], None] | None = None,
                   on_files: Callable[[list[Path]], None] | None = None) -> ConvertSummary:
    """Convert log files (or directories of them) into ``out``; see :mod:`.outputs`
    for what is written. ``on_files`` gets the input files once they are found,
    ``on_bytes`` one of them and the bytes of it read so far (now and then),
    ``on_problem`` each problem as it is quarantined: the progress callbacks
    of :func:`orch_otel.datasets.build` too (:mod:`orch_otel.tracefiles`)."""
    options = options or Options()
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (local or ray)")
    if engine == "ray" and options.jobs != 1:
        raise ValueError("--jobs is for the local engine; Ray schedules its own workers")
    jobs = job_count(options.jobs)
    files, missing = input_files(inputs)
    if missing:  # a mistyped name (or a named FIFO, a symlink loop): fail before touching the outputs
        raise Unreadable(missing[0], why_unreadable(missing[0]) or "no such file or directory")
    summary = ConvertSummary()
    outputs = Outputs(Path(out), Path(quarantine) if quarantine else None, on_problem=on_problem,
                      keep_content=options.capture_content)
    ok = False
    try:
        own = outputs.paths()
        files = [f for f in files if Path(os.path.realpath(f)) not in own]  # realpath: no error on a symlink loop
        if on_files is not None:
            on_files(files)
        if engine == "ray":
            run_ray(files, outputs, options, summary, address=address, on_bytes=on_bytes)
        elif jobs > 1:
            run_jobs(files, outputs, options, summary, on_bytes)
        else:
            run_local(files, outputs, options, summary, on_bytes)
        if (engine == "ray" or jobs > 1) and summary.sources.get(AUTOGEN, 0) > 1:
            summary.warnings.append(
                f"{summary.sources[AUTOGEN]} AutoGen runtime traces written as they are: its runs are "
                "stitched back into one trace each only by the local engine without --jobs "
                "(docs/foreign-logs.md in the source repository)")
        ok = summary.exit_code != EXIT_NO_INPUT  # nothing usable read: the old outputs stay
    finally:
        if ok:
            outputs.commit()
        else:
            outputs.discard()
    return summary
