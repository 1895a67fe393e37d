"""Rows per second of each dataset view (local engine, jsonl) on N traces.

    python -m benchmarks.bench_datasets [--traces N] [--views decisions,turns] [--format jsonl]

The traces are recorded once from real orch-otel runs (the decorator research
team demo and a planner/executor/critic supervisor, content captured), then
replicated with fresh trace ids up to N traces (content refs are shared, as
they would be for repeated prompts), in pairs of fork branches with rewards
0 and 1 (so ``groups`` and ``preferences`` have rows). Not a test: it prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

from orch_otel import demo
from orch_otel.datasets import VIEWS, Config, build


def _seed(directory: Path) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fixtures.dataset_runs import record, supervisor_run

    traces = record(directory, [lambda: asyncio.run(demo.run(task_id="bench-research")),
                                lambda: supervisor_run("bench-calc", 3)], capture=True)
    for path in directory.glob("traces-*.jsonl"):
        path.unlink()  # keep the content store; traces are replicated below
    return traces


def make_input(directory: Path, n: int) -> Path:
    seeds = _seed(directory)
    path = directory / "traces-bench.jsonl"
    with open(path, "wb") as handle:
        for i in range(n):
            trace = dict(seeds[(i // 2) % len(seeds)])
            trace["trace_id"] = f"{i:032x}"
            trace["task_id"] = f"{trace['task_id']}-{i // 2}"
            _as_branch(trace, group=i // 2, reward=float(i % 2))
            handle.write(orjson.dumps(trace) + b"\n")
    return path


def _as_branch(trace: dict, group: int, reward: float) -> None:
    """Make the trace one of a pair of fork branches (the ``groups`` and
    ``preferences`` views read only branches; the other views ignore it)."""
    events = [dict(e) for e in trace["events"]]
    decision = next((e for e in events if e["type"] == "orchestrator_decision" and not e.get("implied")), None)
    if decision is not None:
        source = f"{group:032x}"
        decision["fork"] = {"source_trace_id": source, "event_id": decision["id"], "decision": decision["decision"],
                            "recorded": decision.get("targets") or [], "forced": decision.get("targets") or [],
                            "group": f"{source}/{decision['id']}"}
    trace["events"] = events
    trace["rewards"] = {**trace["rewards"], "bench": reward}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--views", default=",".join(VIEWS))
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet", "hf"])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        path = make_input(tmp_path / "in", args.traces)
        size_mb = os.path.getsize(path) / 1e6
        print(f"{args.traces} traces, {size_mb:.1f} MB, format {args.format}, engine local")
        print(f"{'view':<10} {'rows':>9} {'seconds':>8} {'rows/s':>9} {'traces/s':>9}")
        for view in args.views.split(","):
            start = time.perf_counter()
            summary = build([path.parent], tmp_path / "out", Config(view=view), fmt=args.format)
            took = time.perf_counter() - start
            print(f"{view:<10} {summary.rows_written:>9} {took:>8.2f} {summary.rows_written / took:>9.0f} "
                  f"{summary.traces_read / took:>9.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
