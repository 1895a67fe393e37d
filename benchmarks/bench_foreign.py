"""Foreign against native conversion, per span, side by side (issue 17: within 1.5x).

For each app that has foreign fixtures (tests/fixtures/foreign/), two inputs of
the same run: the peer's spans (the fixture) and orch-otel's own spans of the
app, recorded here under orch-otel's instrumentors. Each input is repeated
with fresh trace ids until it holds about ``--spans`` spans, and converted
by the local engine in its own process. The figure is CPU seconds per span,
foreign over native (1.0: as fast). Runs alternate round by round::

    .venv-bench/bin/python -m benchmarks.bench_foreign [--spans N] [--rounds N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_convert import _cpu_seconds
from benchmarks.foreign_fixtures import FIXTURES, MANIFEST, find_case

# fixture -> its label: one per source, the apps the peers share where they can
INPUTS = {
    "openinference_langgraph_supervisor.otlp.jsonl": "OpenInference, langgraph-supervisor",
    "openllmetry_langgraph_supervisor.otlp.jsonl": "OpenLLMetry, langgraph-supervisor",
    "openinference_langgraph_fanout.otlp.jsonl": "OpenInference, Send fan-out",
    "autogen_core_swarm.otlp.jsonl": "AutoGen runtime, swarm (stitched)",
    "openinference_autogen_swarm.otlp.jsonl": "OpenInference agentchat, swarm",
}


def native_lines(entry: dict[str, str]) -> bytes:
    """orch-otel's own spans of one run of the fixture's case, as OTLP JSON lines."""
    from offline_support import otlp_line

    from orch_otel import testing
    from orch_otel.integrations.autogen import AutoGenInstrumentor
    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    case = find_case(entry["cases"], entry["app"])
    testing.ensure_sdk_provider()
    instrumentors = [LangGraphInstrumentor(), AutoGenInstrumentor()]
    for i in instrumentors:
        i.instrument()
    try:
        with testing.capture() as captured:
            case.run()
    finally:
        for i in reversed(instrumentors):
            i.uninstrument()
    return b"".join(otlp_line(spans) for spans in captured.by_trace().values())


def repeated(lines: bytes, spans: int) -> tuple[bytes, int]:
    """``lines`` again and again, each copy under fresh trace ids (links too), to about ``spans`` spans."""
    batches = [orjson.loads(line) for line in lines.splitlines() if line.strip()]
    per_copy = sum(len(ss["spans"]) for b in batches for rs in b["resourceSpans"] for ss in rs["scopeSpans"])
    copies = max(1, round(spans / per_copy))
    out = []
    for k in range(copies):
        prefix = f"{k + 1:08x}"
        for batch in batches:
            for rs in batch["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        span["traceId"] = prefix + span["traceId"][8:]
                        for link in span.get("links", ()):
                            link["traceId"] = prefix + link["traceId"][8:]
            out.append(orjson.dumps(batch) + b"\n")
    return b"".join(out), copies * per_copy


def _child(path: Path, out: Path) -> None:
    from orch_otel.offline import convert_inputs
    from orch_otel.offline.local import rare_collections

    cpu = _cpu_seconds()
    with rare_collections():
        summary = convert_inputs([path], out)
    print(orjson.dumps({"seconds": _cpu_seconds() - cpu, "traces": summary.traces,
                        "failed": summary.failed_traces + summary.bad_records}).decode())


def _measure(path: Path, out: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "benchmarks.bench_foreign", "--child", str(path), str(out)],
                          capture_output=True, text=True, check=True)
    return orjson.loads(done.stdout.strip().splitlines()[-1])


def measure(work: Path, spans: int, rounds: int) -> dict[str, Any]:
    manifest = json.loads((FIXTURES / MANIFEST).read_text())
    inputs: dict[str, dict[str, Any]] = {}
    for fixture, label in INPUTS.items():
        for side, lines in (("foreign", (FIXTURES / fixture).read_bytes()), ("native", native_lines(manifest[fixture]))):
            data, count = repeated(lines, spans)
            path = work / f"{fixture}.{side}.jsonl"
            path.write_bytes(data)
            inputs.setdefault(label, {})[side] = {"path": path, "spans": count, "bytes": len(data), "seconds": []}
    for r in range(rounds):
        for label, sides in inputs.items():
            for side, run in sides.items():
                m = _measure(run["path"], work / "out.jsonl")
                if m["failed"]:
                    raise RuntimeError(f"{label}, {side}: {m['failed']} trace(s) or record(s) failed")
                run["seconds"].append(m["seconds"])
        print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    rows = []
    for label, sides in inputs.items():
        per_span = {side: [s / run["spans"] * 1e6 for s in run["seconds"]] for side, run in sides.items()}
        ratios = [f / n for f, n in zip(per_span["foreign"], per_span["native"])]
        rows.append({"input": label, "foreign_spans": sides["foreign"]["spans"], "native_spans": sides["native"]["spans"],
                     **{f"{side}_bytes_per_span": run["bytes"] / run["spans"] for side, run in sides.items()},
                     "foreign_us_per_span": statistics.median(per_span["foreign"]),
                     "native_us_per_span": statistics.median(per_span["native"]),
                     "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios)})
    return {"spans": spans, "rounds": rounds, "rows": rows}


def table(figures: dict[str, Any]) -> str:
    lines = ["| input | spans (foreign / native) | bytes per span (foreign / native) | foreign µs CPU per span "
             "| native µs CPU per span | foreign ÷ native |",
             "|---|---|---|---|---|---|"]
    for r in figures["rows"]:
        lines.append(f"| {r['input']} | {r['foreign_spans']:,} / {r['native_spans']:,} "
                     f"| {r['foreign_bytes_per_span']:,.0f} / {r['native_bytes_per_span']:,.0f} | {r['foreign_us_per_span']:.1f} "
                     f"| {r['native_us_per_span']:.1f} | {r['ratio']:.2f} ({r['ratio_min']:.2f}–{r['ratio_max']:.2f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=100_000, help="spans per input (default 100,000)")
    parser.add_argument("--rounds", type=int, default=3, help="alternation rounds (default 3)")
    parser.add_argument("--json", default=None, help="also write the raw figures to this JSON file")
    parser.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(Path(args.child[0]), Path(args.child[1]))
        return 0
    sys.path[:0] = [str(FIXTURES.parents[1])]  # tests/: offline_support and the fidelity cases
    with tempfile.TemporaryDirectory(prefix="orch-bench-foreign-") as tmp:
        figures = measure(Path(tmp), args.spans, args.rounds)
    print(table(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
