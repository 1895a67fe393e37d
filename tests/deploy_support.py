"""Shared by the deployment tests (forks, servers, SIGTERM): a run whose
identity is known by hand, and counting what reached the trace files and the
collector.

A run ``label`` is three spans in one trace: agent ``lead`` delegates to agent
``worker``, which calls tool ``search`` with call id ``label``. Its trace is
complete when its stop decision is not ``incomplete``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson

SPANS_PER_RUN = 3

RUN = '''
def run(label, pause=0.0):
    import time
    import orch_otel
    recorder = orch_otel.get_recorder()
    with recorder.agent("lead"):
        if pause:
            time.sleep(pause)
        with recorder.agent("worker"):
            with recorder.tool("search", call_id=str(label)):
                pass
'''


def written(trace_dir: Path) -> tuple[Counter, Counter, list[Path]]:
    """(complete runs by label, incomplete runs by label, trace files) under ``trace_dir``."""
    complete: Counter = Counter()
    incomplete: Counter = Counter()
    files = sorted(Path(trace_dir).glob("traces-*.jsonl"))
    for path in files:
        for raw in path.read_bytes().splitlines():
            if not raw.strip():
                continue
            trace = orjson.loads(raw)
            labels = {e["call_id"] for e in trace["events"] if e["type"] == "tool_call"}
            stopped = [e for e in trace["events"] if e.get("decision") == "stop"]
            whole = bool(stopped) and stopped[-1].get("reason") != "incomplete"
            for label in labels:
                (complete if whole else incomplete)[label] += 1
    return complete, incomplete, files


def wait_for(predicate, timeout_s: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def replay(spool: Path, port: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orch_otel", "spool", "replay", str(spool),
                           "--endpoint", f"http://127.0.0.1:{port}"], capture_output=True, text=True, timeout=120)


def env_for(trace_dir: Path, spool: Path | None = None, port: int | None = None, **extra: str) -> dict[str, str]:
    env = {**os.environ, "ORCH_OTEL_TRACE_DIR": str(trace_dir), **extra}
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        env.pop(name, None)
    if port is not None:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{port}"
        env["ORCH_OTEL_SPOOL_DIR"] = str(spool)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(Path(__file__).parent), env.get("PYTHONPATH", "")) if p)
    return env
