"""Memory: RSS over many runs of the LangGraph supervisor app, in a fresh
process per configuration.

    python -m benchmarks.memory CONFIG RUNS EVERY      # CONFIG: none | orch_otel

Prints one JSON object: RSS (MiB, after a flush and ``gc.collect()``) at
every ``EVERY`` runs, plus orch-otel's own bounded structures (open and
remembered traces of the assembler) at the end.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def rss_mib() -> float:
    try:
        import psutil

        return psutil.Process().memory_info().rss / 2**20
    except ImportError:  # Linux fallback
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _measure(config: str, runs: int, every: int) -> dict[str, Any]:
    from ._worker import _quiet_libraries
    from .apps_langgraph import LangGraphApp

    _quiet_libraries()
    state = None
    if config == "orch_otel":
        import orch_otel

        state = orch_otel.instrument(trace_dir=tempfile.mkdtemp(prefix="orch-bench-mem-"))
    app = LangGraphApp("supervisor")
    loop = asyncio.new_event_loop()

    def settle() -> float:
        if state is not None:
            import orch_otel

            orch_otel.flush()
        gc.collect()
        return rss_mib()

    checkpoints = [(0, settle())]
    done = 0
    while done < runs:
        n = min(every, runs - done)

        async def go(n: int = n) -> None:
            for _ in range(n):
                await app.arun()

        loop.run_until_complete(go())
        done += n
        checkpoints.append((done, settle()))
    out: dict[str, Any] = {"config": config, "runs": runs, "checkpoints": checkpoints}
    if state is not None and state.trace_exporter is not None:
        assembler = state.trace_exporter.assembler
        out["open_traces"] = assembler.open_traces
        out["remembered_closed"] = len(getattr(assembler, "_closed", ()))
        out["trace_bytes"] = sum(p.stat().st_size for p in Path(state.trace_dir).rglob("*") if p.is_file())
    return out


def measure(config: str, runs: int, every: int, python: str = sys.executable) -> subprocess.Popen:
    """Start the measurement in a subprocess; ``collect()`` its result."""
    return subprocess.Popen([python, "-m", "benchmarks.memory", config, str(runs), str(every)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def collect(proc: subprocess.Popen) -> dict[str, Any]:
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"memory benchmark failed ({proc.returncode}):\n{err[-4000:]}")
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    config, runs, every = argv[0], int(argv[1]), int(argv[2])
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ORCH_OTEL_TRACE_DIR"):
        os.environ.pop(name, None)
    result = _measure(config, runs, every)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
