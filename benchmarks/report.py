"""BENCHMARKS.md from the results of one ``python -m benchmarks`` run (or
its saved raw results): a header, the summary against the targets, then one
section per part. Each ``_section`` returns its lines; nothing here measures.
"""

from __future__ import annotations

import os
import platform
import shlex
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .capture import REPO, CaptureResult, added_ms, fmt_range, med
from .suites import LABELS, PACKAGES, SUITES, label

EXTERNAL_TITLES = (("convert", "Conversion (offline logs to replayable traces)"),
                   ("foreign", "Foreign logs against orch-otel's own, per span (docs/foreign-logs.md)"),
                   ("datasets", "Datasets (replayable traces to RL datasets)"),
                   ("replay", "Replay against the original run (same fake models)"))


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
        row = (f"| {label(res.suite, config)} | {fmt_range(s.per_run_ms())} | {add} | {fmt_range(s.per_run_cpu_ms())} | "
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
    parts = [f"÷ {label(res.suite, c)} added: **{_ratio(oo, added_median(res, app, c)):.2f}** "
             f"(CPU: {_ratio(oo_cpu, added_median(res, app, c, cpu=True)):.2f})" for c in others]
    return "orch-otel added " + "; ".join(parts) + "."


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def _ok(flag: bool) -> str:
    return "yes" if flag else "**no**"



def write_report(path: Path, *, smoke: bool, argv: list[str], results: dict[str, Any],
                 started: str, load_before: str, load_after: str, seconds: float) -> dict[str, Any]:
    """Write the report to ``path``; returns the summary figures (key -> value) for the log."""
    lg: CaptureResult | None = results.get("langgraph")
    ag: CaptureResult | None = results.get("autogen")
    af: CaptureResult | None = results.get("agent_framework")
    mem = results.get("memory")
    bd = results.get("breakdown")
    summary: dict[str, Any] = {}
    out = _header(results, smoke=smoke, argv=argv, started=started, load_before=load_before,
                  load_after=load_after, seconds=seconds)
    out += _summary_section(results, summary)
    if lg:
        out += _langgraph_section(lg)
    if ag:
        out += _builtin_suite_section(ag, "AutoGen", AUTOGEN_APPS, ("builtin", "openinference"))
    if af:
        out += _builtin_suite_section(af, "Agent Framework", AGENT_FRAMEWORK_APPS, ("builtin",))
    if lg and lg.floor:
        out += _floor_section(lg)
    if mem:
        out += _memory_section(mem)
    if bd:
        out += _breakdown_section(bd)
    for part, title in EXTERNAL_TITLES:
        if results.get(part):
            out += _external_section(results[part], title)
    opt = REPO / "benchmarks" / "optimisation.md"
    if opt.exists() and not smoke:
        out += [opt.read_text().strip(), ""]
    path.write_text("\n".join(out).rstrip() + "\n")
    return summary


def _header(results: dict[str, Any], *, smoke: bool, argv: list[str], started: str, load_before: str,
            load_after: str, seconds: float) -> list[str]:
    versions = _versions()
    for key in SUITES:
        if results.get(key):
            versions.update(results[key].versions)
    cmd = ".venv-bench/bin/python -m benchmarks " + " ".join(shlex.quote(a) for a in argv)
    out: list[str] = []
    w = out.append
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
    if smoke:
        w("> **Smoke run**: a few runs each, to check that the benchmarks work. The figures mean nothing.")
        w("")
    return out


# -- the summary against the targets: a row function per part, each also adding its figures to `summary`


def _summary_section(results: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    lg: CaptureResult | None = results.get("langgraph")
    conv = (results.get("convert") or {}).get("figures")
    rows: list[str] = []
    if lg:
        rows += _langgraph_rows(lg, summary)
    for suite, name in (("autogen", "AutoGen"), ("agent_framework", "Agent Framework")):
        if results.get(suite):
            rows += _builtin_rows(results[suite], name, summary)
    if lg and lg.floor:
        rows += _floor_rows(lg, summary)
    if results.get("memory"):
        rows += _memory_rows(results["memory"], summary)
    if conv:
        rows += _convert_rows(conv, summary)
    foreign = (results.get("foreign") or {}).get("figures")
    if foreign:
        rows += _foreign_rows(foreign, summary)
    if not rows:
        return []
    return ["## Summary against the targets", "", "| what | target | measured (medians) | met |", "|---|---|---|---|",
            *rows, ""]


def _langgraph_rows(lg: CaptureResult, summary: dict[str, Any]) -> list[str]:
    rows: list[str] = []
    for app in lg.apps:
        oo, oi = added_median(lg, app, "orch_otel"), added_median(lg, app, "openinference")
        ratio = _ratio(oo, oi)
        summary[f"langgraph.{app}.ratio_vs_openinference"] = ratio
        cpu_ratio = _ratio(added_median(lg, app, "orch_otel", cpu=True), added_median(lg, app, "openinference", cpu=True))
        summary[f"langgraph.{app}.cpu_ratio_vs_openinference"] = cpu_ratio
        rows.append(f"| LangGraph {app}: orch-otel added ms/run ÷ OpenInference added | ≤ 0.25 | "
                    f"{oo:.2f} ÷ {oi:.2f} = **{ratio:.2f}** (process CPU: {cpu_ratio:.2f}) | {_ok(ratio <= 0.25)} |")
    return rows


def _builtin_rows(res: CaptureResult, name: str, summary: dict[str, Any]) -> list[str]:
    """A framework with its own tracing (AutoGen, Agent Framework): orch-otel against it."""
    rows: list[str] = []
    for app in res.apps:
        oo, bi = added_median(res, app, "orch_otel"), added_median(res, app, "builtin")
        tr = res.series[(app, "orch_otel")].per_run("traces")
        summary[f"{res.suite}.{app}.added_vs_builtin"] = (oo, bi)
        oo_c, bi_c = added_median(res, app, "orch_otel", cpu=True), added_median(res, app, "builtin", cpu=True)
        rows.append(f"| {name} {app}: orch-otel added ms/run vs built-in tracing's | ≤ built-in | "
                    f"{oo:.2f} vs {bi:.2f} (process CPU: {oo_c:.2f} vs {bi_c:.2f}) | {_ok(oo <= bi)} |")
        rows.append(f"| {name} {app}: orch-otel traces per run | 1 | {tr:.2f} "
                    f"(built-in: {res.series[(app, 'builtin')].per_run('traces'):.1f}) | {_ok(abs(tr - 1) < 1e-9)} |")
    return rows


def _floor_rows(lg: CaptureResult, summary: dict[str, Any]) -> list[str]:
    rows: list[str] = []
    floor_us = med([1e6 * f["seconds"] / f["spans"] for f in lg.floor])
    rec_us = med([1e6 * r["seconds"] / r["spans"] for r in lg.recorder])
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
    return rows


def _memory_rows(mem: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    oo = mem["orch_otel"]["checkpoints"]
    base = mem["none"]["checkpoints"]
    first = max(1, len(oo) // 5)  # after the first fifth: imports, caches and pools have settled
    grow = oo[-1][1] - oo[first][1]
    grow_none = base[-1][1] - base[min(first, len(base) - 1)][1]
    summary["memory.growth_mib"] = grow
    return [f"| RSS growth, supervisor runs {oo[first][0]:,}→{oo[-1][0]:,}, orch-otel on | flat (≈ none) | "
            f"{grow:+.1f} MiB (uninstrumented: {grow_none:+.1f} MiB) | {_ok(grow <= max(2.0, grow_none + 2.0))} |"]


def _convert_rows(conv: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    rows: list[str] = []
    ratio, floor = med(conv["ratios"]["convert"]), med(conv["ratios"]["group"])
    summary["convert.ratio_to_parse"] = ratio
    rows.append(f"| Offline conversion: spans per CPU-second ÷ orjson parse-only | ≥ 0.5 | **{ratio:.2f}** "
                f"(grouping by trace id alone, no conversion: {floor:.2f}) | {_ok(ratio >= 0.5)} |")
    if "rows" in conv["ratios"]:  # the columnar reader against the row-by-row one, same round
        cpu = med([r / c for r, c in zip(conv["seconds"]["rows"], conv["seconds"]["convert"])])
        wall = med([r / c for r, c in zip(conv["wall"]["rows"], conv["wall"]["convert"])])
        summary["convert.columnar_over_rows"] = {"cpu": cpu, "wall": wall}
        rows.append(f"| Offline conversion: columnar reader ÷ row-by-row reader, local engine | reported | "
                    f"**{wall:.2f}x** as fast in wall clock, {cpu:.2f}x per CPU-second | — |")
    if "jobs" in conv:
        jobs = med(conv["wall_ratios"]["jobs"])
        summary["convert.jobs_wall_ratio_to_parse"] = jobs
        rows.append(f"| Offline conversion: `--jobs {conv['jobs']}` spans per second (wall) ÷ orjson parse-only | ≥ 0.8 | "
                    f"**{jobs:.2f}** | {_ok(jobs >= 0.8)} |")
    if "ray_over_local" in conv:
        speedup = med(conv["ray_over_local"])
        summary["convert.ray_over_local"] = speedup
        rows.append(f"| Offline conversion: `--engine ray` ({conv['jobs']} workers) ÷ one local process, wall clock | "
                    f"≥ 1.5 | **{speedup:.2f}** | {_ok(speedup >= 1.5)} |")
    for kind, engine, key in (("convert", "local engine", "rss_kib"), ("ray", "`--engine ray`, the driver", "rss_kib"),
                              ("ray", "`--engine ray`, the largest Ray process", "ray_rss_kib")):
        by_factor = {r["factor"]: r for r in conv["rss"] if r.get("kind", "convert") == kind and r.get(key)}
        if {1, 10} <= by_factor.keys():
            one, ten = by_factor[1][key] / 1024, by_factor[10][key] / 1024
            summary[f"convert.{kind}.{key}.10x_over_1x"] = _ratio(ten, one)
            rows.append(f"| Offline conversion, {engine}: peak RSS, {by_factor[10]['spans']:,} spans ÷ "
                        f"{by_factor[1]['spans']:,}, same traces open | flat (≤ 1.25x) | {ten:.0f} MiB ÷ {one:.0f} MiB "
                        f"= **{_ratio(ten, one):.2f}x** | {_ok(_ratio(ten, one) <= 1.25)} |")
    return rows


def _foreign_rows(figures: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    rows: list[str] = []
    for r in figures["rows"]:
        summary[f"foreign.{r['input']}.ratio"] = r["ratio"]
        rows.append(f"| Foreign conversion, {r['input']}: CPU per span ÷ native's, same app | ≤ 1.5 | "
                    f"{r['foreign_us_per_span']:.1f} µs ÷ {r['native_us_per_span']:.1f} µs = **{r['ratio']:.2f}** | "
                    f"{_ok(r['ratio'] <= 1.5)} |")
    return rows


# -- one section per part


def _langgraph_section(lg: CaptureResult) -> list[str]:
    out: list[str] = []
    w = out.append
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
    return out


AUTOGEN_APPS = (
    "one `team.run()` per run; teams are built before the timed section (replay clients are consumed). Apps "
    "(`benchmarks/apps_autogen.py`, `ReplayChatCompletionClient`): **round_robin**, a RoundRobin team "
    "whose first agent calls a tool and reflects, the second terminates; **swarm**, a Swarm where alice "
    "calls a tool and hands off to bob, who hands off to the user. Built-in tracing: a global SDK "
    "provider (simple processor, in-memory exporter), nothing else. OpenInference: its instrumentor on a "
    "private provider (no global provider, so no built-in spans).")
AGENT_FRAMEWORK_APPS = (
    "one `workflow.run()` per run; workflows are built before the timed section (scripted clients are "
    "consumed), so the framework's `workflow.build` spans are not counted. Apps "
    "(`benchmarks/apps_agent_framework.py`, the tests' scripted chat client built from the framework's own "
    "client layers): **sequential**, a Sequential workflow whose first agent calls an async tool and "
    "answers, the second writes; **handoff**, a Handoff workflow where triage calls the tool and hands off "
    "to billing, whose reply meets the termination condition. None: no provider set (the framework's "
    "instrumentation is on by default but records to the API's no-op provider). Built-in tracing: a global "
    "SDK provider (simple processor, in-memory exporter), nothing else. orch-otel: `instrument()`, which "
    "suppresses the framework's own spans by default.")


def _builtin_suite_section(res: CaptureResult, name: str, apps_text: str, others: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    w = out.append
    w(f"## Capture overhead: {name}")
    w("")
    w(f"{res.rounds} rounds × {res.runs} runs per configuration and app (after a warm-up), {apps_text}")
    w("")
    for app in res.apps:
        w(f"### {app}")
        w("")
        out.extend(capture_table(res, app, traces=True))
        w("")
        w(_ratios_line(res, app, others))
        w("")
    return out


def _floor_section(lg: CaptureResult) -> list[str]:
    out: list[str] = []
    w = out.append
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
    return out


def _memory_section(mem: dict[str, Any]) -> list[str]:
    out: list[str] = []
    w = out.append
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
    return out


def _breakdown_section(bd: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    out: list[str] = []
    w = out.append
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
    return out


def _external_section(ext: dict[str, Any], title: str) -> list[str]:
    out: list[str] = []
    w = out.append
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
    return out
