"""Rows per second of each dataset view, local engine and ``--engine ray``, on N traces.

    python -m benchmarks.bench_datasets [--traces N] [--views decisions,turns] [--format jsonl] [--engines local,ray]

The traces are recorded once from real orch-otel runs (the decorator research
team demo and a planner/executor/critic supervisor, content captured), then
replicated with fresh trace ids up to N traces (content refs are shared, as
they would be for repeated prompts), in pairs of fork branches with rewards
0 and 1 (so ``groups`` and ``preferences`` have rows). Not a test: it prints a table.

Each view runs on the local engine, then on Ray with one worker per core:
Ray is started before the clock and stopped after it, for each view, so its
worker processes start inside the clock (as on a cluster that is up), as in
``bench_convert``. Times are wall clock (Ray's work is in its workers).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def _timed(path: Path, out: Path, view: str, fmt: str, engine: str, tokenizer: str | None = None) -> tuple[Any, float]:
    ray = None
    if engine == "ray":  # as on a running cluster: Ray is up, its worker processes start on demand (in the clock)
        import ray

        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        start = time.perf_counter()
        summary = build([path.parent], out, Config(view=view, tokenizer=tokenizer), fmt=fmt, engine=engine)
        return summary, time.perf_counter() - start
    finally:
        if ray is not None:
            ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--views", default=None,
                        help="default: every view (triplets only with --tokenizer: the recorded runs have no token ids)")
    parser.add_argument("--tokenizer", help="a Hugging Face tokenizer for the triplets view (--tokenizer of the command)")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet", "hf"])
    parser.add_argument("--engines", default="local,ray", help="local, ray or both (ray is left out when not installed)")
    args = parser.parse_args(argv)
    if args.views is None:
        args.views = ",".join(v for v in VIEWS if v != "triplets" or args.tokenizer)
    engines = [e for e in args.engines.split(",") if e != "ray" or importlib.util.find_spec("ray") is not None]
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        path = make_input(tmp_path / "in", args.traces)
        size_mb = os.path.getsize(path) / 1e6
        print(f"{args.traces} traces, {size_mb:.1f} MB, format {args.format}, engines {', '.join(engines)} "
              f"(ray: {os.cpu_count()} workers, Ray started before the clock), wall clock")
        print(f"{'view':<12} {'rows':>9}" + "".join(f" {e + ' s':>8} {e + ' rows/s':>12}" for e in engines)
              + (f" {'speedup':>9}" if len(engines) == 2 else ""))
        for view in args.views.split(","):
            took, rows = {}, set()
            for engine in engines:
                summary, took[engine] = _timed(path, tmp_path / engine, view, args.format, engine,
                                               args.tokenizer if view == "triplets" else None)
                rows.add(summary.rows_written)
            if len(rows) != 1:
                raise SystemExit(f"{view}: the engines wrote different numbers of rows: {sorted(rows)}")
            (n,) = rows
            line = f"{view:<12} {n:>9}" + "".join(f" {took[e]:>8.2f} {n / took[e]:>12.0f}" for e in engines)
            if len(engines) == 2:
                line += f" {took[engines[0]] / took[engines[1]]:>8.2f}x"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
