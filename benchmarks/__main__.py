"""Run every orch-otel benchmark and write BENCHMARKS.md.

    .venv-bench/bin/python -m benchmarks [--smoke] [--rounds N] [--runs N] [--out BENCHMARKS.md]

Needs the benchmark venv (``python3 -m venv .venv-bench &&
.venv-bench/bin/pip install -e '.[all,bench]'``): the peers
(OpenInference, OpenLLMetry) must never be installed next to orch-otel's own
tests. ``--smoke`` runs a few runs of everything and checks only that every
configuration ran and produced spans, never timings.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import memory as memory_bench
from .capture import REPO, run_capture
from .profiles import run_breakdowns
from .report import write_report
from .results import dump_results, load_results, smoke_check
from .suites import PEERS
from .update import update_report

PARTS = ("langgraph", "autogen", "agent_framework", "openai_agents", "memory", "breakdown", "convert", "foreign", "datasets", "replay")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# -- external benchmarks (conversion, datasets) ------------------------------------------------


EXTERNAL = {
    # module: (full args, smoke args)
    # The 1M-span file; memory compared on 1M and 10M spans (about 6 GB, generated and deleted).
    # 1x RSS input: big enough to fill the bounded caches (10,000 remembered traces), so 1x and 10x
    # compare like for like.
    "convert": ("benchmarks.bench_convert", ["--spans", "1000000", "--rss-spans", "1000000"],
                ["--spans", "3000", "--rss-spans", "500", "--open-traces", "10", "--rounds", "1"]),
    # the peers' spans of the fixture apps against orch-otel's own spans of the same runs
    "foreign": ("benchmarks.bench_foreign", ["--spans", "100000"], ["--spans", "2000", "--rounds", "1"]),
    "datasets": ("benchmarks.bench_datasets", ["--traces", "20000"], ["--traces", "200"]),
    "replay": ("benchmarks.bench_replay", ["--runs", "40"], ["--runs", "2"]),
}


def run_external(part: str, smoke: bool) -> dict[str, Any]:
    module, full, quick = EXTERNAL[part]
    if importlib.util.find_spec(module) is None:
        return {"module": module, "missing": True}
    args = quick if smoke else full
    cmd = [sys.executable, "-m", module, *args]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"orch-bench-{part}-") as tmp:
        raw = Path(tmp) / "figures.json"
        extra = ["--dir", tmp, "--json", str(raw)] if part in ("convert", "foreign") else []
        proc = subprocess.run([*cmd, *extra], cwd=REPO, check=False, capture_output=True, text=True, timeout=3600)
        figures = json.loads(raw.read_text()) if raw.exists() else None
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return {"module": module, "command": "python -m " + " ".join([module, *args]), "output": proc.stdout.strip(),
            "seconds": time.perf_counter() - start, "figures": figures}


def measure(parts: set[str], *, smoke: bool, rounds: int | None, runs: int | None,
            memory_runs: int | None) -> dict[str, Any]:
    """Run the benchmark ``parts``; the defaults for ``None`` depend on ``smoke``."""
    rounds = rounds or (1 if smoke else 16)
    lg_runs = runs or (2 if smoke else 10)
    ag_runs = runs or (2 if smoke else 30)  # AutoGen, Agent Framework and the OpenAI Agents SDK
    warmup = 1 if smoke else 5
    mem_runs = memory_runs or (20 if smoke else 5000)
    results: dict[str, Any] = {}
    mem_procs = None
    if "memory" in parts:  # in the background: RSS is not a timing, and it takes the longest
        every = max(mem_runs // 10, 1)
        _log(f"memory: {mem_runs} supervisor runs per configuration (background)")
        mem_procs = {c: memory_bench.measure(c, mem_runs, every) for c in ("none", "orch_otel")}
        if not smoke:
            # Let the memory processes finish before timing, so they do not add to the noise.
            results["memory"] = {c: memory_bench.collect(p) for c, p in mem_procs.items()}
            mem_procs = None
    if "langgraph" in parts:
        _log(f"capture overhead, LangGraph: {rounds} rounds x {lg_runs} runs")
        results["langgraph"] = run_capture("langgraph", rounds=rounds, runs=lg_runs, warmup=warmup,
                                           floor_spans=500 if smoke else 5000, log=_log)
    if "autogen" in parts:
        _log(f"capture overhead, AutoGen: {rounds} rounds x {ag_runs} runs")
        results["autogen"] = run_capture("autogen", rounds=rounds, runs=ag_runs, warmup=warmup, log=_log)
    if "agent_framework" in parts:
        if importlib.util.find_spec("agent_framework_orchestrations") is None:  # it needs Python >= 3.11
            _log("capture overhead, Agent Framework: skipped, agent-framework-orchestrations is not installed")
        else:
            _log(f"capture overhead, Agent Framework: {rounds} rounds x {ag_runs} runs")
            results["agent_framework"] = run_capture("agent_framework", rounds=rounds, runs=ag_runs,
                                                     warmup=warmup, log=_log)
    if "openai_agents" in parts:
        _log(f"capture overhead, OpenAI Agents SDK: {rounds} rounds x {ag_runs} runs")
        results["openai_agents"] = run_capture("openai_agents", rounds=rounds, runs=ag_runs, warmup=warmup, log=_log)
    if "breakdown" in parts:
        _log("where orch-otel's time goes")
        results["breakdown"] = run_breakdowns(2 if smoke else 40, log=_log)
    for part in ("convert", "foreign", "datasets", "replay"):
        if part in parts:
            _log(f"{part} benchmark")
            results[part] = run_external(part, smoke)
    if mem_procs is not None:
        results["memory"] = {c: memory_bench.collect(p) for c, p in mem_procs.items()}
    return results


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few runs each; check only that everything ran")
    parser.add_argument("--rounds", type=int, default=None, help="alternation rounds (default 16; smoke 1)")
    parser.add_argument("--runs", type=int, default=None, help="runs per batch (default 10 LangGraph, 30 the others)")
    parser.add_argument("--memory-runs", type=int, default=None, help="supervisor runs for RSS (default 5000)")
    parser.add_argument("--only", default=None, help=f"comma-separated parts of {','.join(PARTS)}")
    parser.add_argument("--out", default=None, help="report path (default BENCHMARKS.md in the repository)")
    parser.add_argument("--save", default=None,
                        help="raw results JSON (default bench-out/results.json; smoke: not saved)")
    parser.add_argument("--render", default=None, metavar="RESULTS_JSON",
                        help="only re-write the report from saved raw results (no measuring)")
    parser.add_argument("--update", action="store_true",
                        help="with --render of an AutoGen, Agent Framework or OpenAI Agents SDK run alone: replace "
                             "only that suite's "
                             "section and summary rows in the existing report")
    args = parser.parse_args(argv)
    out_path = Path(args.out) if args.out else REPO / "BENCHMARKS.md"
    if args.update and not args.render:
        parser.error("--update needs --render RESULTS_JSON")
    if args.render:
        results, meta = load_results(json.loads(Path(args.render).read_text()))
        target = out_path.with_name(out_path.name + ".partial") if args.update else out_path
        write_report(target, smoke=meta.get("smoke", False), argv=meta.get("argv", []), results=results,
                     started=meta["started"], load_before=meta["load_before"], load_after=meta["load_after"],
                     seconds=meta["seconds"])
        if args.update:
            try:
                merged = update_report(out_path.read_text(), target.read_text(), sorted(results, key=PARTS.index))
            except ValueError as exc:
                parser.error(str(exc))
            finally:
                target.unlink()
            out_path.write_text(merged)
        _log(f"{'updated' if args.update else 'wrote'} {out_path} from {args.render}")
        return 0
    parts = set(args.only.split(",")) if args.only else set(PARTS)
    if unknown := parts - set(PARTS):
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    missing = [dist for module, dist in PEERS.items() if importlib.util.find_spec(module.rsplit(".", 1)[0]) is None
               or importlib.util.find_spec(module) is None]
    if missing:
        print(f"missing peers: {', '.join(missing)}. Run in the benchmark venv: python3 -m venv .venv-bench && "
              ".venv-bench/bin/pip install -e '.[all,bench]' && .venv-bench/bin/python -m benchmarks",
              file=sys.stderr)
        return 2
    smoke = args.smoke
    started = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _load()
    t0 = time.perf_counter()
    results = measure(parts, smoke=smoke, rounds=args.rounds, runs=args.runs, memory_runs=args.memory_runs)
    meta = {"argv": argv, "smoke": smoke, "started": started, "load_before": load_before, "load_after": _load(),
            "seconds": time.perf_counter() - t0}
    save = Path(args.save) if args.save else (None if smoke else REPO / "bench-out" / "results.json")
    if save is not None:
        save.parent.mkdir(parents=True, exist_ok=True)
        save.write_text(json.dumps(dump_results(results, meta)))
        _log(f"raw results: {save} (re-render with --render {save})")
    summary = write_report(out_path, smoke=smoke, argv=argv, results=results, started=started,
                           load_before=meta["load_before"], load_after=meta["load_after"], seconds=meta["seconds"])
    _log(f"wrote {out_path}")
    for key, value in summary.items():
        _log(f"  {key}: {value}")
    if smoke:
        problems = smoke_check(results)
        for problem in problems:
            _log(f"SMOKE FAILURE: {problem}")
        if problems:
            return 1
        _log("smoke: every configuration ran and produced spans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
