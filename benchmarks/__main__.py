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
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from . import memory as memory_bench
from .capture import REPO, CaptureResult, Series, added_ms, fmt_range, med, run_capture
from .profiles import run_breakdowns

PEERS = {
    "openinference.instrumentation.langchain": "openinference-instrumentation-langchain",
    "openinference.instrumentation.autogen_agentchat": "openinference-instrumentation-autogen-agentchat",
    "opentelemetry.instrumentation.langchain": "opentelemetry-instrumentation-langchain",
}
PACKAGES = ("orch-otel", "langgraph", "langchain-core", "langchain", "autogen-agentchat", "autogen-core",
            "autogen-ext", "opentelemetry-sdk", *PEERS.values())
LABELS = {
    "none": "none (uninstrumented)",
    "orch_otel": "orch-otel `instrument()` (trace files)",
    "openinference": "OpenInference",
    "openllmetry": "OpenLLMetry",
    "builtin": "AutoGen built-in tracing",
    "callbacks_only": "LangChain callbacks only (no-op handler)",
    "sdk_spans": "bare SDK spans via a minimal handler (in-app floor)",
}
UNTRACED = ("none", "callbacks_only")  # reference configurations that record nothing
PARTS = ("langgraph", "autogen", "memory", "breakdown", "convert", "datasets")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# -- external benchmarks (conversion, datasets) ------------------------------------------------


EXTERNAL = {
    # module: (full args, smoke args)
    # The 1M-span file. 1x RSS input: big enough to fill the bounded caches (10,000 remembered
    # traces), so 1x and 10x compare like for like.
    "convert": ("benchmarks.bench_convert", ["--spans", "1000000", "--rss-spans", "200000"],
                ["--spans", "3000", "--rss-spans", "500", "--open-traces", "10", "--rounds", "1"]),
    "datasets": ("benchmarks.bench_datasets", ["--traces", "5000"], ["--traces", "200"]),
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
        extra = ["--dir", tmp, "--json", str(raw)] if part == "convert" else []
        proc = subprocess.run([*cmd, *extra], cwd=REPO, check=False, capture_output=True, text=True, timeout=1800)
        figures = json.loads(raw.read_text()) if raw.exists() else None
    if proc.returncode != 0:
        raise RuntimeError(f"{module} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return {"module": module, "command": "python -m " + " ".join([module, *args]), "output": proc.stdout.strip(),
            "seconds": time.perf_counter() - start, "figures": figures}


# -- report -----------------------------------------------------------------------------------


def _kb(n: float) -> str:
    return f"{n / 1024:.1f}"


def capture_table(res: CaptureResult, app: str, *, traces: bool) -> list[str]:
    head = ("| configuration | ms/run | added ms/run vs none | CPU ms/run | added CPU ms/run | spans/run "
            "| trace KB/run |")
    sep = "|---|---:|---:|---:|---:|---:|---:|"
    if traces:
        head += " traces/run |"
        sep += "---:|"
    lines = [head, sep]
    for config in res.configs:
        s = res.series[(app, config)]
        add = "–" if config == "none" else fmt_range(added_ms(res, app, config))
        add_cpu = "–" if config == "none" else fmt_range(added_ms(res, app, config, cpu=True))
        row = (f"| {LABELS[config]} | {fmt_range(s.per_run_ms())} | {add} | {fmt_range(s.per_run_cpu_ms())} | "
               f"{add_cpu} | {s.per_run('spans'):.1f} | {_kb(s.per_run('bytes'))} |")
        if traces:
            row += f" {s.per_run('traces'):.2f} |"
        lines.append(row)
    return lines


def added_median(res: CaptureResult, app: str, config: str, *, cpu: bool = False) -> float:
    return med(added_ms(res, app, config, cpu=cpu))


def added_per_span(res: CaptureResult, app: str, config: str) -> list[float]:
    """Per round: the configuration's added µs per run ÷ its spans per run."""
    spans = res.series[(app, config)].per_run("spans")
    return [1000 * a / spans for a in added_ms(res, app, config)] if spans else [float("nan")]


def _ratios_line(res: CaptureResult, app: str, others: tuple[str, ...]) -> str:
    """orch-otel's added time ÷ each other configuration's, wall and process CPU."""
    oo, oo_cpu = added_median(res, app, "orch_otel"), added_median(res, app, "orch_otel", cpu=True)
    parts = [f"÷ {LABELS[c]} added: **{_ratio(oo, added_median(res, app, c)):.2f}** "
             f"(CPU: {_ratio(oo_cpu, added_median(res, app, c, cpu=True)):.2f})" for c in others]
    return "orch-otel added " + "; ".join(parts) + "."


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def _ok(flag: bool) -> str:
    return "yes" if flag else "**no**"


def write_report(path: Path, *, args: argparse.Namespace, argv: list[str], results: dict[str, Any],
                 started: str, load_before: str, load_after: str, seconds: float) -> dict[str, Any]:
    lg: CaptureResult | None = results.get("langgraph")
    ag: CaptureResult | None = results.get("autogen")
    versions = _versions()
    for res in (lg, ag):
        if res:
            versions.update(res.versions)
    cmd = ".venv-bench/bin/python -m benchmarks " + " ".join(shlex.quote(a) for a in argv)
    out: list[str] = []
    w = out.append
    summary: dict[str, Any] = {}
    w("# orch-otel benchmarks")
    w("")
    w("Generated by `python -m benchmarks` (see `docs/benchmarks.md`); do not edit by hand.")
    w("")
    w(f"- Command: `{cmd.strip()}` (from the repository root, in the benchmark venv)")
    w(f"- Date: {started}; wall time {seconds / 60:.1f} min")
    w(f"- Machine: {os.cpu_count()} CPU core(s), {_cpu_model()}; {platform.system()} {platform.release()}; "
      f"Python {platform.python_version()}")
    w(f"- Load average (1, 5, 15 min) before: {load_before}; after: {load_after}")
    w("- Packages: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    w("")
    w("**The machine is shared and noisy** (other engineers run test suites on the same 2 cores). Each "
      "configuration runs in its own long-lived process; configurations are alternated A B C D A B C D "
      "round by round, each batch after a warm-up; tables give the **median over rounds with min–max**, "
      "and *added* figures are per-round differences against the uninstrumented process measured in the "
      "same round (median, min–max). A batch's time includes flushing the configuration's exporters "
      "(orch-otel converts and writes on the batch processor's thread; that work is counted). "
      "Compare ratios, not single times.")
    w("")
    if args.smoke:
        w("> **Smoke run**: a few runs each, to check that the benchmarks work. The figures mean nothing.")
        w("")

    # -- summary
    rows: list[str] = []
    if lg:
        for app in lg.apps:
            oo, oi = added_median(lg, app, "orch_otel"), added_median(lg, app, "openinference")
            ratio = _ratio(oo, oi)
            summary[f"langgraph.{app}.ratio_vs_openinference"] = ratio
            cpu_ratio = _ratio(added_median(lg, app, "orch_otel", cpu=True), added_median(lg, app, "openinference", cpu=True))
            summary[f"langgraph.{app}.cpu_ratio_vs_openinference"] = cpu_ratio
            rows.append(f"| LangGraph {app}: orch-otel added ms/run ÷ OpenInference added | ≤ 0.25 | "
                        f"{oo:.2f} ÷ {oi:.2f} = **{ratio:.2f}** (process CPU: {cpu_ratio:.2f}) | {_ok(ratio <= 0.25)} |")
    if ag:
        for app in ag.apps:
            oo, bi = added_median(ag, app, "orch_otel"), added_median(ag, app, "builtin")
            tr = ag.series[(app, "orch_otel")].per_run("traces")
            summary[f"autogen.{app}.added_vs_builtin"] = (oo, bi)
            oo_c, bi_c = added_median(ag, app, "orch_otel", cpu=True), added_median(ag, app, "builtin", cpu=True)
            rows.append(f"| AutoGen {app}: orch-otel added ms/run vs built-in tracing's | ≤ built-in | "
                        f"{oo:.2f} vs {bi:.2f} (process CPU: {oo_c:.2f} vs {bi_c:.2f}) | {_ok(oo <= bi)} |")
            rows.append(f"| AutoGen {app}: orch-otel traces per run | 1 | {tr:.2f} "
                        f"(built-in: {ag.series[(app, 'builtin')].per_run('traces'):.1f}) | {_ok(abs(tr - 1) < 1e-9)} |")
    floor_line = None
    if lg and lg.floor:
        floor_us = med([1e6 * f["seconds"] / f["spans"] for f in lg.floor])
        rec_us = med([1e6 * r["seconds"] / r["spans"] for r in lg.recorder])
        floor_line = (floor_us, rec_us)
        summary["floor.recorder_ratio"] = _ratio(rec_us, floor_us)
        rows.append(f"| Recorder span (with export) ÷ bare SDK span, same process | ≤ 3x | "
                    f"{rec_us:.1f} µs ÷ {floor_us:.1f} µs = **{rec_us / floor_us:.2f}x** | {_ok(rec_us / floor_us <= 3)} |")
        for app in lg.apps:
            per_span = med(added_per_span(lg, app, "orch_otel"))
            summary[f"floor.{app}.added_per_span_ratio"] = _ratio(per_span, floor_us)
            rows.append(f"| LangGraph {app}: orch-otel added µs per recorded span ÷ bare SDK span (tight loop) | ≤ 3x | "
                        f"{per_span:.1f} µs ÷ {floor_us:.1f} µs = **{per_span / floor_us:.2f}x** | "
                        f"{_ok(per_span / floor_us <= 3)} |")
            if (app, "sdk_spans") in lg.series:
                in_app = med(added_per_span(lg, app, "sdk_spans"))
                summary[f"floor.{app}.added_per_span_ratio_in_app"] = _ratio(per_span, in_app)
                rows.append(f"| LangGraph {app}: orch-otel added µs per recorded span ÷ a bare SDK span's in the "
                            f"same app (minimal handler) | ≤ 3x | {per_span:.1f} µs ÷ {in_app:.1f} µs = "
                            f"**{_ratio(per_span, in_app):.2f}x** | {_ok(_ratio(per_span, in_app) <= 3)} |")
    mem = results.get("memory")
    if mem:
        oo = mem["orch_otel"]["checkpoints"]
        base = mem["none"]["checkpoints"]
        first = max(1, len(oo) // 5)  # after the first fifth: imports, caches and pools have settled
        grow = oo[-1][1] - oo[first][1]
        grow_none = base[-1][1] - base[min(first, len(base) - 1)][1]
        summary["memory.growth_mib"] = grow
        rows.append(f"| RSS growth, supervisor runs {oo[first][0]:,}→{oo[-1][0]:,}, orch-otel on | flat (≈ none) | "
                    f"{grow:+.1f} MiB (uninstrumented: {grow_none:+.1f} MiB) | {_ok(grow <= max(2.0, grow_none + 2.0))} |")
    conv = (results.get("convert") or {}).get("figures")
    if conv:
        ratio, floor = med(conv["ratios"]["convert"]), med(conv["ratios"]["group"])
        summary["convert.ratio_to_parse"] = ratio
        jobs = f"; `--jobs {conv['jobs']}`, wall clock: {med(conv['wall_ratios']['jobs']):.2f}" if "jobs" in conv else ""
        rows.append(f"| Offline conversion: spans per CPU-second ÷ orjson parse-only | ≥ 0.3 | **{ratio:.2f}** "
                    f"(grouping by trace id alone, no conversion: {floor:.2f}{jobs}) | {_ok(ratio >= 0.3)} |")
        one, ten = (r["rss_kib"] / 1024 for r in conv["rss"])
        summary["convert.rss_10x_over_1x"] = _ratio(ten, one)
        rows.append(f"| Offline conversion: peak RSS, 10x input ÷ 1x, same traces open | flat (≤ 1.25x) | "
                    f"{ten:.0f} MiB ÷ {one:.0f} MiB = **{_ratio(ten, one):.2f}x** | {_ok(_ratio(ten, one) <= 1.25)} |")
    if rows:
        w("## Summary against the targets")
        w("")
        w("| what | target | measured (medians) | met |")
        w("|---|---|---|---|")
        out.extend(rows)
        w("")

    if lg:
        w("## Capture overhead: LangGraph")
        w("")
        w(f"{lg.rounds} rounds × {lg.runs} runs per configuration and app (after a warm-up), `ainvoke` per run. "
          "Apps (`benchmarks/apps_langgraph.py`, offline fake tool-calling models): **supervisor**, a supervisor "
          "agent that hands off (`Command(graph=PARENT)`) to a research-team subgraph fanning out with `Send` to 3 "
          "worker agents (model → `search` tool → model) and back in, then to a writer agent with a tool; "
          "**fanout8**, an 8-way `Send` fan-out of the same worker agent with a fan-in. orch-otel runs its "
          "default `orch_otel.instrument(trace_dir=...)` (batch processor + trace-file exporter; content capture "
          "off by default); the peers run their default instrumentors on an SDK provider with a simple processor "
          "and an in-memory exporter (they capture inputs and outputs by default). *Trace KB/run*: orch-otel, "
          "bytes written to trace files; peers, the JSON of their spans' names, attributes and events.")
        w("")
        for app in lg.apps:
            w(f"### {app}")
            w("")
            out.extend(capture_table(lg, app, traces=True))
            w("")
            w(f"{_ratios_line(lg, app, ('openinference', 'openllmetry'))} LangChain's callback dispatch alone "
              f"(a no-op handler) adds {added_median(lg, app, 'callbacks_only'):.2f} ms/run of orch-otel's "
              f"{added_median(lg, app, 'orch_otel'):.2f}.")
            w("")
    if ag:
        w("## Capture overhead: AutoGen")
        w("")
        w(f"{ag.rounds} rounds × {ag.runs} runs per configuration and app (after a warm-up), one `team.run()` "
          "per run; teams are built before the timed section (replay clients are consumed). Apps "
          "(`benchmarks/apps_autogen.py`, `ReplayChatCompletionClient`): **round_robin**, a RoundRobin team "
          "whose first agent calls a tool and reflects, the second terminates; **swarm**, a Swarm where alice "
          "calls a tool and hands off to bob, who hands off to the user. Built-in tracing: a global SDK "
          "provider (simple processor, in-memory exporter), nothing else. OpenInference: its instrumentor on a "
          "private provider (no global provider, so no built-in spans).")
        w("")
        for app in ag.apps:
            w(f"### {app}")
            w("")
            out.extend(capture_table(ag, app, traces=True))
            w("")
            w(_ratios_line(ag, app, ("builtin", "openinference")))
            w("")
    if lg and lg.floor:
        floor_us, rec_us = floor_line  # type: ignore[misc]
        w("## Floor: orch-otel's cost per span against a bare SDK span")
        w("")
        w("Measured inside the orch-otel LangGraph worker, alternating with its app batches. *Bare SDK span*: "
          "`tracer.start_as_current_span(name, attributes=<5 attributes>)` on a private provider with a simple "
          "processor and an in-memory exporter. *orch-otel recorder span*: `Recorder.agent(...)` spans (5 "
          "attributes, 9 per `workflow` root) through `instrument()`'s pipeline, including the batch "
          "processor's conversion and trace-file write (flushed at the end of the batch). *Bare SDK spans via "
          "a minimal handler (in-app floor)*: the LangGraph apps run with a LangChain handler that only opens "
          "a bare SDK span (5 attributes, simple processor, in-memory exporter) for every graph, node, model "
          "and tool run (`benchmarks/sdk_spans.py`): what one SDK span costs inside the app, callback "
          "dispatch included, which no callback instrumentation can go below. *Added time per span* rows "
          "divide a configuration's added time per run by its spans per run.")
        w("")
        w("| per span | µs, median (min–max) | ÷ bare SDK span |")
        w("|---|---:|---:|")
        fl = [1e6 * f["seconds"] / f["spans"] for f in lg.floor]
        rec = [1e6 * r["seconds"] / r["spans"] for r in lg.recorder]
        rec_app = [1e6 * r["app_seconds"] / r["spans"] for r in lg.recorder]
        w(f"| bare SDK span (floor) | {fmt_range(fl)} | 1.00 |")
        w(f"| orch-otel recorder span, with conversion + write | {fmt_range(rec)} | {med(rec) / med(fl):.2f} |")
        w(f"| orch-otel recorder span, app thread only (export after) | {fmt_range(rec_app)} | "
          f"{med(rec_app) / med(fl):.2f} |")
        for app in lg.apps:
            for config in ("sdk_spans", "orch_otel", "openinference", "openllmetry"):
                if (app, config) not in lg.series:
                    continue
                per_span = added_per_span(lg, app, config)
                spans = lg.series[(app, config)].per_run("spans")
                w(f"| LangGraph {app}: {LABELS[config]}, added time per span ({spans:.0f} spans/run) | "
                  f"{fmt_range(per_span)} | {med(per_span) / med(fl):.2f} |")
        w("")
    if mem:
        w("## Memory: RSS over many supervisor runs")
        w("")
        n = mem["orch_otel"]["runs"]
        w(f"{n:,} runs of the LangGraph supervisor app in a fresh process per configuration (both processes "
          "at once; memory is not timed). RSS in MiB after `orch_otel.flush()` and `gc.collect()` at each "
          "checkpoint.")
        w("")
        pts_oo, pts_none = mem["orch_otel"]["checkpoints"], mem["none"]["checkpoints"]
        w("| runs | " + " | ".join(f"{r:,}" for r, _ in pts_oo) + " |")
        w("|---|" + "---:|" * len(pts_oo))
        w("| orch-otel RSS | " + " | ".join(f"{v:.1f}" for _, v in pts_oo) + " |")
        w("| none RSS | " + " | ".join(f"{v:.1f}" for _, v in pts_none) + " |")
        w("")
        extra = mem["orch_otel"]
        if "open_traces" in extra:
            w(f"At the end, orch-otel's assembler held {extra['open_traces']} open trace(s) and remembered "
              f"{extra['remembered_closed']:,} closed trace ids (bounded at 10,000 by default); "
              f"{extra['trace_bytes'] / 1e6:.1f} MB of trace files were written.")
            w("")
    bd = results.get("breakdown")
    if bd:
        w("## Where orch-otel's time goes")
        w("")
        w("CPU time per run (`time.thread_time`, so GIL waits and other threads do not count) inside orch-otel's "
          "entry points and hot internals, measured by wrapping them in a separate orch-otel worker "
          "(`benchmarks/breakdown.py`). Figures are inclusive (a callback contains the recorder calls it makes); "
          "the `TraceFileExporter.export` rows run on the batch processor's thread. *App-thread CPU* is the whole "
          "run's CPU on the event-loop thread, app included.")
        w("")
        for (suite, app), data in bd.items():
            w(f"**{suite} {app}**: app-thread CPU {data['main_thread_cpu_us_per_run'] / 1000:.1f} ms/run")
            w("")
            w("| function | calls/run | CPU µs/run | µs/call |")
            w("|---|---:|---:|---:|")
            for row in data["rows"][:14]:
                per = row["cpu_us_per_run"] / row["calls_per_run"] if row["calls_per_run"] else 0
                w(f"| `{row['function']}` | {row['calls_per_run']:.1f} | {row['cpu_us_per_run']:.0f} | {per:.1f} |")
            w("")
    for part, title in (("convert", "Conversion (offline logs to replayable traces)"),
                        ("datasets", "Datasets (replayable traces to RL datasets)")):
        ext = results.get(part)
        if not ext:
            continue
        w(f"## {title}")
        w("")
        if ext.get("missing"):
            w(f"`{ext['module']}` has not landed yet; `python -m benchmarks` includes it once it does.")
        else:
            w(f"From `{ext['command']}` ({ext['seconds']:.0f} s):")
            w("")
            text = ext["output"]
            if any(line.startswith("|") for line in text.splitlines()):
                out.append(text)  # already markdown
            else:
                out.extend(["```", text, "```"])
        w("")
    opt = REPO / "benchmarks" / "optimisation.md"
    if opt.exists() and not args.smoke:
        w(opt.read_text().strip())
        w("")
    path.write_text("\n".join(out).rstrip() + "\n")
    return summary


# -- raw results (re-render the report without re-measuring) ----------------------------------


def dump_results(results: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"meta": meta}
    for key, value in results.items():
        if isinstance(value, CaptureResult):
            out[key] = {"suite": value.suite, "configs": list(value.configs), "apps": list(value.apps),
                        "rounds": value.rounds, "runs": value.runs, "floor": value.floor,
                        "recorder": value.recorder, "versions": value.versions,
                        "series": [[app, config, s.batches] for (app, config), s in value.series.items()]}
        elif key == "breakdown":
            out[key] = [[suite, app, data] for (suite, app), data in value.items()]
        else:
            out[key] = value
    return out


def load_results(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    results: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("langgraph", "autogen"):
            res = CaptureResult(value["suite"], tuple(value["configs"]), tuple(value["apps"]), value["rounds"],
                                value["runs"], floor=value["floor"], recorder=value["recorder"],
                                versions=value["versions"])
            for app, config, batches in value["series"]:
                res.series[(app, config)] = Series(batches)
            results[key] = res
        elif key == "breakdown":
            results[key] = {(suite, app): d for suite, app, d in value}
        elif key != "meta":
            results[key] = value
    return results, data.get("meta", {})


# -- smoke checks -----------------------------------------------------------------------------


def smoke_check(results: dict[str, Any]) -> list[str]:
    """Problems: a configuration that did not run or produced no spans (never timings)."""
    problems = []
    for suite in ("langgraph", "autogen"):
        res: CaptureResult | None = results.get(suite)
        if res is None:
            continue
        for app in res.apps:
            for config in res.configs:
                s = res.series.get((app, config))
                if not s or not s.batches:
                    problems.append(f"{suite}/{app}/{config}: did not run")
                    continue
                traced = config not in UNTRACED
                if traced and s.per_run("spans") <= 0:
                    problems.append(f"{suite}/{app}/{config}: produced no spans")
                if traced and s.per_run("bytes") <= 0:
                    problems.append(f"{suite}/{app}/{config}: produced no trace bytes")
                if not traced and s.per_run("spans") > 0:
                    problems.append(f"{suite}/{app}/{config}: recorded spans while uninstrumented")
        if suite == "langgraph" and (not res.floor or not res.recorder or res.recorder[-1]["spans"] <= 0):
            problems.append("floor: the bare SDK or recorder measurement did not run")
    mem = results.get("memory")
    if mem is not None and any(len(mem[c]["checkpoints"]) < 2 for c in ("none", "orch_otel")):
        problems.append("memory: no checkpoints")
    conv = results.get("convert")
    if conv is not None and not conv.get("missing") and not ((conv.get("figures") or {}).get("summary") or {}).get("traces"):
        problems.append("convert: no trace was converted")
    bd = results.get("breakdown")
    if bd is not None and not all(d["rows"] for d in bd.values()):
        problems.append("breakdown: no orch-otel function was timed")
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few runs each; check only that everything ran")
    parser.add_argument("--rounds", type=int, default=None, help="alternation rounds (default 16; smoke 1)")
    parser.add_argument("--runs", type=int, default=None, help="runs per batch (default 10 LangGraph, 30 AutoGen)")
    parser.add_argument("--memory-runs", type=int, default=None, help="supervisor runs for RSS (default 5000)")
    parser.add_argument("--only", default=None, help=f"comma-separated parts of {','.join(PARTS)}")
    parser.add_argument("--out", default=None, help="report path (default BENCHMARKS.md in the repository)")
    parser.add_argument("--save", default=None,
                        help="raw results JSON (default bench-out/results.json; smoke: not saved)")
    parser.add_argument("--render", default=None, metavar="RESULTS_JSON",
                        help="only re-write the report from saved raw results (no measuring)")
    args = parser.parse_args(argv)
    out_path = Path(args.out) if args.out else REPO / "BENCHMARKS.md"
    if args.render:
        results, meta = load_results(json.loads(Path(args.render).read_text()))
        args.smoke = meta.get("smoke", False)
        write_report(out_path, args=args, argv=meta.get("argv", []), results=results, started=meta["started"],
                     load_before=meta["load_before"], load_after=meta["load_after"], seconds=meta["seconds"])
        _log(f"wrote {out_path} from {args.render}")
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
    rounds = args.rounds or (1 if smoke else 16)
    lg_runs = args.runs or (2 if smoke else 10)
    ag_runs = args.runs or (2 if smoke else 30)
    warmup = 1 if smoke else 5
    mem_runs = args.memory_runs or (20 if smoke else 5000)
    started = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _load()
    t0 = time.perf_counter()
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
    if "breakdown" in parts:
        _log("where orch-otel's time goes")
        results["breakdown"] = run_breakdowns(2 if smoke else 40, log=_log)
    for part in ("convert", "datasets"):
        if part in parts:
            _log(f"{part} benchmark")
            results[part] = run_external(part, smoke)
    if mem_procs is not None:
        results["memory"] = {c: memory_bench.collect(p) for c, p in mem_procs.items()}
    meta = {"argv": argv, "smoke": smoke, "started": started, "load_before": load_before, "load_after": _load(),
            "seconds": time.perf_counter() - t0}
    save = Path(args.save) if args.save else (None if smoke else REPO / "bench-out" / "results.json")
    if save is not None:
        save.parent.mkdir(parents=True, exist_ok=True)
        save.write_text(json.dumps(dump_results(results, meta)))
        _log(f"raw results: {save} (re-render with --render {save})")
    summary = write_report(out_path, args=args, argv=argv, results=results, started=started,
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
