"""Where orch-otel's time goes: cProfile of its configurations, reduced to
the functions in orch-otel's own source (``src/orch_otel``) and the SDK calls
they make.

The app-thread profile covers the callbacks and patches that run inside the
app; the exporter profile covers the conversion and file writes that
``instrument()`` runs on the batch processor's thread.
"""

from __future__ import annotations

import pstats
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .capture import WorkerProcess

_OURS = ("/orch_otel/",)


@dataclass
class HotSpot:
    function: str
    calls_per_run: float
    self_ms: float  # per run
    cum_ms: float  # per run


@dataclass
class Profile:
    title: str
    runs: int
    total_ms: float  # per run, all code, under the profiler
    ours_self_ms: float  # per run, self time in orch-otel functions
    spots: list[HotSpot]


def _label(key: tuple[str, int, str]) -> str:
    filename, line, name = key
    path = Path(filename)
    parts = path.parts
    if "orch_otel" in parts:
        rel = "/".join(parts[parts.index("orch_otel") + 1:])
        return f"{rel}:{line} {name}"
    return f"{path.name}:{line} {name}"


def reduce(stats_path: Path, runs: int, title: str, top: int = 12) -> Profile:
    stats = pstats.Stats(str(stats_path))
    entries = stats.stats  # type: ignore[attr-defined]
    total = stats.total_tt  # type: ignore[attr-defined]
    ours = [(k, v) for k, v in entries.items() if any(tag in k[0] for tag in _OURS)]
    ours_self = sum(v[2] for _, v in ours)
    ours.sort(key=lambda kv: kv[1][3], reverse=True)
    spots = [HotSpot(_label(k), v[1] / runs, 1000 * v[2] / runs, 1000 * v[3] / runs) for k, v in ours[:top]]
    return Profile(title, runs, 1000 * total / runs, 1000 * ours_self / runs, spots)


def self_heavy(stats_path: Path, runs: int, top: int = 12) -> list[HotSpot]:
    """All functions (any package) by self time: what the profiled code itself spends on."""
    stats = pstats.Stats(str(stats_path))
    entries = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    return [HotSpot(_label(k), v[1] / runs, 1000 * v[2] / runs, 1000 * v[3] / runs) for k, v in entries[:top]]


def run_profiles(runs: int, python: str = sys.executable, log=print) -> list[tuple[Profile, list[HotSpot]]]:
    out: list[tuple[Profile, list[HotSpot]]] = []
    work = Path(tempfile.mkdtemp(prefix="orch-bench-prof-"))
    jobs = [("langgraph", "supervisor"), ("autogen", "round_robin")]
    for suite, app in jobs:
        worker = WorkerProcess(suite, "orch_otel", python)
        try:
            worker.call(op="batch", app=app, runs=5)
            path = work / f"{suite}-{app}.prof"
            worker.call(op="profile", app=app, runs=runs, out=str(path))
            out.append((reduce(path, runs, f"{suite} {app}: app thread (cProfile, {runs} runs)"),
                        self_heavy(path, runs)))
            epath = work / f"{suite}-{app}-export.prof"
            worker.call(op="export_profile", app=app, runs=runs, out=str(epath))
            out.append((reduce(epath, runs, f"{suite} {app}: exporter (conversion + write, {runs} runs' spans)"),
                        self_heavy(epath, runs)))
        finally:
            worker.close()
        log(f"  profiled {suite}/{app}")
    return out


def run_breakdowns(runs: int, python: str = sys.executable, log=print) -> dict[tuple[str, str], dict]:
    """CPU time per orch-otel function per run (:mod:`benchmarks.breakdown`), in a
    fresh orch-otel worker per suite (the wrappers must not touch the timed workers)."""
    out: dict[tuple[str, str], dict] = {}
    for suite, apps in (("langgraph", ("supervisor", "fanout8")), ("autogen", ("round_robin", "swarm")),
                        ("openai_agents", ("handoffs", "as_tools"))):
        worker = WorkerProcess(suite, "orch_otel", python)
        try:
            for app in apps:
                worker.call(op="batch", app=app, runs=max(2, min(5, runs)))
                out[(suite, app)] = worker.call(op="breakdown", app=app, runs=runs)
        finally:
            worker.close()
        log(f"  breakdown {suite} done")
    return out
