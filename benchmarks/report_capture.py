"""The capture suites' sections of BENCHMARKS.md (LangGraph, AutoGen, Agent
Framework, the floor) and the per-round figures the summary rows also use.
Nothing here measures; :mod:`benchmarks.report` assembles the report.
"""

from __future__ import annotations

from .capture import CaptureResult, added_ms, fmt_range, med
from .suites import LABELS, TITLES, label


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
    parts = [f"÷ {label(res.suite, c)} added: **{safe_ratio(oo, added_median(res, app, c)):.2f}** "
             f"(CPU: {safe_ratio(oo_cpu, added_median(res, app, c, cpu=True)):.2f})" for c in others]
    return "orch-otel added " + "; ".join(parts) + "."


def safe_ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def met(flag: bool) -> str:
    return "yes" if flag else "**no**"


def langgraph_section(lg: CaptureResult) -> list[str]:
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
    "suppresses the framework's own spans by default. OpenInference: its span processor "
    "(`AgentFrameworkToOpenInferenceProcessor`, which rewrites the framework's spans into OpenInference "
    "attributes) ahead of the same in-memory exporter, on the built-in tracing; its cost includes the "
    "built-in tracing's.")
OPENAI_AGENTS_APPS = (
    "one `Runner.run()` per run; the starting agents are built before the timed section (scripted models are "
    "consumed). Apps (`benchmarks/apps_openai_agents.py`, the SDK's own `ScriptedModel` as the tests build "
    "it, writing the SDK's generation spans when its tracing is on, as a real model does): **handoffs**, triage "
    "calls an async function tool, hands off to billing, billing answers (3 model calls); **as_tools**, a "
    "manager calls two agents as tools in one turn (they run concurrently), then answers (4 model calls, 2 "
    "nested runs). Everything is offline: the SDK's default trace processor (which uploads to OpenAI) is "
    "never used. None: the SDK's tracing off (`set_tracing_disabled(True)`). SDK tracing: on, with an "
    "in-memory `TracingProcessor` that only keeps what it is given (`set_trace_processors`, "
    "`benchmarks/agents_tracing.py`), so it costs what the SDK's tracing itself costs. orch-otel: "
    "`instrument()` with the SDK's tracing off, the way the docs recommend (orch-otel does not read the SDK's "
    "trace), and again with it on (in-memory processor). OpenInference: `OpenAIAgentsInstrumentor` with its "
    "default `exclusive_processor=True` (its processor replaces the SDK's); OpenLLMetry: its "
    "`OpenAIAgentsInstrumentor`, which adds its processor (here the only one); both are processors on the "
    "SDK's tracing, so their cost includes it, and both export to a private SDK provider with a simple "
    "processor and an in-memory exporter. *Trace KB/run* for the SDK's tracing: the JSON of its spans' and "
    "traces' `export()`.")


def builtin_suite_section(res: CaptureResult, apps_text: str, others: tuple[str, ...]) -> list[str]:
    others = tuple(c for c in others if c in res.configs)  # saved results may predate a configuration
    out: list[str] = []
    w = out.append
    w(f"## Capture overhead: {TITLES[res.suite]}")
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


def floor_section(lg: CaptureResult) -> list[str]:
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
