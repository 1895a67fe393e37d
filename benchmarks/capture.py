"""Capture overhead: each configuration in its own long-lived worker process
(:mod:`benchmarks._worker`), driven in alternation A B C D A B C D ... so
that the shared machine's slow and fast moments fall on every configuration
alike. One *batch* is ``runs`` app runs plus the flush of that
configuration's exporters; each round gives one ms/run figure per
configuration and app, and the tables quote medians with min–max over rounds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .suites import APPS, SUITES

REPO = Path(__file__).resolve().parent.parent


class WorkerError(RuntimeError):
    pass


class WorkerProcess:
    """A running ``benchmarks._worker``; ``call()`` sends one command and waits for its reply."""

    def __init__(self, suite: str, config: str, python: str = sys.executable, env: dict[str, str] | None = None) -> None:
        self.suite, self.config = suite, config
        self.proc = subprocess.Popen(
            [python, "-m", "benchmarks._worker", suite, config],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
            env={**os.environ, **(env or {})},
        )
        self._stderr: list[str] = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        self._hello: dict[str, Any] | None = None

    @property
    def hello(self) -> dict[str, Any]:
        """The worker's first line (waits for its imports and setup)."""
        if self._hello is None:
            self._hello = self._read()
        return self._hello

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)
            del self._stderr[:-200]

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=30)
            raise WorkerError(f"worker {self.suite}/{self.config} exited ({self.proc.returncode}):\n"
                              + "".join(self._stderr[-40:]))
        return json.loads(line)

    def call(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.hello  # noqa: B018 - wait for the worker to be ready
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        if not reply.get("ok"):
            raise WorkerError(f"worker {self.suite}/{self.config} failed on {cmd}: {reply.get('error')}\n"
                              + "".join(self._stderr[-40:]))
        return reply

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
        except Exception:  # noqa: BLE001 - a stuck worker is killed
            self.proc.kill()
            self.proc.wait()


@dataclass
class Series:
    """One (suite, app, config): a batch result per round."""

    batches: list[dict[str, Any]] = field(default_factory=list)

    def per_run_ms(self) -> list[float]:
        return [1000 * b["seconds"] / b["runs"] for b in self.batches]

    def per_run_cpu_ms(self) -> list[float]:
        return [1000 * b["cpu_seconds"] / b["runs"] for b in self.batches]

    def per_run(self, key: str) -> float:
        runs = sum(b["runs"] for b in self.batches)
        return sum(b[key] for b in self.batches) / runs


@dataclass
class CaptureResult:
    suite: str
    configs: tuple[str, ...]
    apps: tuple[str, ...]
    rounds: int
    runs: int
    series: dict[tuple[str, str], Series] = field(default_factory=dict)
    floor: list[dict[str, Any]] = field(default_factory=list)
    recorder: list[dict[str, Any]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


def run_capture(suite: str, *, rounds: int, runs: int, warmup: int, floor_spans: int = 0,
                python: str = sys.executable, log=print) -> CaptureResult:
    """All configurations of ``suite`` on all its apps, alternated over ``rounds``.
    With ``floor_spans``, the orch-otel worker also measures the bare SDK floor
    and orch-otel's recorder, alternating with its app batches."""
    configs, apps = SUITES[suite], APPS[suite]
    result = CaptureResult(suite, configs, apps, rounds, runs)
    workers: dict[str, WorkerProcess] = {}
    try:
        for config in configs:  # started together: the imports overlap
            workers[config] = WorkerProcess(suite, config, python)
        for config in configs:
            result.versions.update(workers[config].hello.get("versions", {}))
        for app in apps:
            for config in configs:  # warm-up: imports, compiled graphs, caches, first traces
                workers[config].call(op="batch", app=app, runs=warmup)
        if floor_spans:
            workers["orch_otel"].call(op="floor", spans=max(floor_spans // 10, 10))
            workers["orch_otel"].call(op="recorder", spans=max(floor_spans // 10, 10))
        for r in range(rounds):
            for app in apps:
                for config in configs:
                    batch = workers[config].call(op="batch", app=app, runs=runs)
                    result.series.setdefault((app, config), Series()).batches.append(batch)
            if floor_spans:
                result.floor.append(workers["orch_otel"].call(op="floor", spans=floor_spans))
                result.recorder.append(workers["orch_otel"].call(op="recorder", spans=floor_spans))
            log(f"  {suite}: round {r + 1}/{rounds} " + "  ".join(
                f"{app}/{config}={result.series[(app, config)].per_run_ms()[-1]:.1f}ms"
                for app in apps for config in configs))
    finally:
        for worker in workers.values():
            worker.close()
    return result


def profile(suite: str, config: str, app: str, runs: int, out: Path, *, warmup: int = 5,
            python: str = sys.executable) -> Path:
    """cProfile ``runs`` runs of ``app`` under ``config`` (after a warm-up) into ``out``."""
    worker = WorkerProcess(suite, config, python)
    try:
        worker.call(op="batch", app=app, runs=warmup)
        worker.call(op="profile", app=app, runs=runs, out=str(out))
    finally:
        worker.close()
    return out


# -- figures ----------------------------------------------------------------------------


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fmt_range(values: list[float], digits: int = 1) -> str:
    if not values:
        return "–"
    return f"{med(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def added_ms(result: CaptureResult, app: str, config: str, baseline: str = "none", *, cpu: bool = False) -> list[float]:
    """Per-round added ms/run (wall, or process CPU) against the baseline measured in the same round (paired)."""
    pick = (lambda s: s.per_run_cpu_ms()) if cpu else (lambda s: s.per_run_ms())
    base = pick(result.series[(app, baseline)])
    mine = pick(result.series[(app, config)])
    return [m - b for m, b in zip(mine, base)]
