"""Optimisation experiments: candidate fixes to orch-otel applied as monkeypatches
in a benchmark worker (``BENCH_ORCH_VARIANT``), measured against the unpatched
orch-otel and the uninstrumented app in alternation. Diagnostic only: the
published tables never use a variant; a fix that pays off belongs in
orch-otel's source, after which the main tables show it.

    .venv-bench/bin/python -m benchmarks.experiments [--rounds 8] [--runs 10] [--app supervisor] VARIANT...
"""

from __future__ import annotations

import argparse
import sys

from . import variants as variant_patches
from .capture import WorkerProcess, fmt_range
from .variants import VARIANTS


def run(variants: list[str], *, suite: str, app: str, rounds: int, runs: int, log=print) -> dict[str, list[dict]]:
    configs = [("none", "none", None), ("orch_otel", "orch_otel", None)]
    configs += [(f"orch_otel+{v}", "orch_otel", v) for v in variants]
    workers = {label: WorkerProcess(suite, config, env={"BENCH_ORCH_VARIANT": variant} if variant else None)
               for label, config, variant in configs}
    out: dict[str, list[dict]] = {label: [] for label, _, _ in configs}
    try:
        for worker in workers.values():
            worker.call(op="batch", app=app, runs=5)
        for r in range(rounds):
            for label, worker in workers.items():
                out[label].append(worker.call(op="batch", app=app, runs=runs))
            log(f"round {r + 1}/{rounds}: " + "  ".join(
                f"{label}={1000 * out[label][-1]['seconds'] / runs:.1f}ms" for label in workers))
    finally:
        for worker in workers.values():
            worker.close()
    return out


def table(out: dict[str, list[dict]]) -> str:
    base_wall = [1000 * b["seconds"] / b["runs"] for b in out["none"]]
    base_cpu = [1000 * b["cpu_seconds"] / b["runs"] for b in out["none"]]
    lines = ["| configuration | ms/run | added ms/run | CPU ms/run | added CPU ms/run | spans/run |",
             "|---|---:|---:|---:|---:|---:|"]
    for label, batches in out.items():
        wall = [1000 * b["seconds"] / b["runs"] for b in batches]
        cpu = [1000 * b["cpu_seconds"] / b["runs"] for b in batches]
        added = [w - b for w, b in zip(wall, base_wall)]
        added_cpu = [c - b for c, b in zip(cpu, base_cpu)]
        spans = sum(b["spans"] for b in batches) / sum(b["runs"] for b in batches)
        lines.append(f"| {label} | {fmt_range(wall)} | {'–' if label == 'none' else fmt_range(added)} | "
                     f"{fmt_range(cpu)} | {'–' if label == 'none' else fmt_range(added_cpu)} | {spans:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=f"{__doc__}\n{variant_patches.__doc__}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help=f"variants ({', '.join(VARIANTS)}; combine with +)")
    parser.add_argument("--suite", default="langgraph")
    parser.add_argument("--app", default="supervisor")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    out = run(args.variants, suite=args.suite, app=args.app, rounds=args.rounds, runs=args.runs,
              log=lambda m: print(m, file=sys.stderr))
    print(f"{args.suite} {args.app}: {args.rounds} rounds x {args.runs} runs, alternated\n")
    print(table(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
