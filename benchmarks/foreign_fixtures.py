"""Make the foreign-log fixtures in ``tests/fixtures/foreign/``: fidelity cases
(tests/fidelity_cases_*.py) run under the real peer instrumentors (never
orch-otel's), their spans written as a Collector's file exporter writes OTLP
JSON lines (and, for a few, length-prefixed OTLP protobuf), with
``MANIFEST.json`` saying which peer, at which version, recorded which case.

Run in the benchmark venv, where the peers are installed (they register
``opentelemetry_instrumentor`` entry points, so they never enter ``.venv``)::

    .venv-bench/bin/python -m benchmarks.foreign_fixtures [--out DIR]
    .venv-bench/bin/python -m benchmarks.foreign_fixtures --check

``--check`` records every fixture again into a temporary folder and fails when
a converted trace differs from the committed fixture's (ids and times aside),
or when an installed peer is not the version the manifest names.

Each fixture is recorded in its own process, so one peer's patches never see
another's app.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "foreign"
MANIFEST = "MANIFEST.json"
# peer -> the distribution whose version the manifest records
PEERS = {
    "openinference-langchain": "openinference-instrumentation-langchain",
    "openllmetry-langchain": "opentelemetry-instrumentation-langchain",
    "autogen-core": "autogen-core",  # AutoGen's own runtime tracing
    "openinference-autogen-agentchat": "openinference-instrumentation-autogen-agentchat",
    "agent_framework": "agent-framework-core",  # Microsoft Agent Framework's own tracing (its source name)
    "openinference-openai-agents": "openinference-instrumentation-openai-agents",
    "openllmetry-openai-agents": "opentelemetry-instrumentation-openai-agents",
}
# short name -> how the case's truth.app starts (exactly one case matches)
LANGGRAPH = {
    "supervisor": "langgraph-supervisor: supervisor -> math_expert -> supervisor -> research_expert",
    "swarm": "langgraph-swarm:",
    "fanout": "Send fan-out:",
    "nested": "3 levels of graphs:",
    "interrupt": "interrupt:",
}
AUTOGEN = {
    "selector": "autogen selector:",
    "swarm": "autogen swarm:",
    "tool_round_robin": "autogen round robin: a calls get_weather (w1)",
    "society_of_mind": "autogen SocietyOfMind:",
}
AGENT_FRAMEWORK = {
    "agent_tool": "agent framework agent as a tool:",
    "sequential": "agent framework Sequential:",
    "concurrent": "agent framework Concurrent",
    "switch_case": "agent framework switch-case",
    "handoff": "agent framework Handoff with a termination condition:",
    "group_chat_manager": "agent framework GroupChat, manager agent:",
    "magentic": "agent framework Magentic: the manager plans",
}
OPENAI_AGENTS = {
    "handoffs": "openai-agents handoffs:",
    "as_tools": "openai-agents agents as tools:",
    "parallel_tools": "openai-agents parallel tools:",
}
# fixture name -> (peer, cases module, truth.app prefix)
CASES: dict[str, tuple[str, str, str]] = {
    **{f"openinference_langgraph_{k}": ("openinference-langchain", "fidelity_cases_langgraph", v) for k, v in LANGGRAPH.items()},
    **{f"openllmetry_langgraph_{k}": ("openllmetry-langchain", "fidelity_cases_langgraph", v) for k, v in LANGGRAPH.items()},
    **{f"autogen_core_{k}": ("autogen-core", "fidelity_cases_autogen", v) for k, v in AUTOGEN.items()},
    **{f"openinference_autogen_{k}": ("openinference-autogen-agentchat", "fidelity_cases_autogen", AUTOGEN[k])
       for k in ("selector", "swarm")},
    **{f"agent_framework_{k}": ("agent_framework", "fidelity_cases_maf", v) for k, v in AGENT_FRAMEWORK.items()},
    **{f"{peer}_openai_agents_{k}": (f"{peer}-openai-agents", "fidelity_cases_openai_agents", v)
       for peer in ("openinference", "openllmetry") for k, v in OPENAI_AGENTS.items()},
}
PROTOBUF = {"openinference_langgraph_supervisor", "autogen_core_selector"}  # also written as .otlp.pb


def _tests_on_path() -> None:
    for p in (str(REPO / "src"), str(REPO / "tests")):
        if p not in sys.path:
            sys.path.insert(0, p)


def find_case(module: str, app: str, prefix: bool = False) -> Any:
    """The one case of ``tests/<module>.py`` whose truth.app is ``app`` (or starts with it)."""
    _tests_on_path()
    cases = importlib.import_module(module).CASES
    found = [c for c in cases if (c.truth.app.startswith(app) if prefix else c.truth.app == app)]
    if len(found) != 1:
        raise LookupError(f"{module}: {len(found)} cases with truth.app {'starting with ' if prefix else ''}{app!r}")
    return found[0]


def files_of(name: str) -> list[str]:
    return [f"{name}.otlp.jsonl"] + ([f"{name}.otlp.pb"] if name in PROTOBUF else [])


def _record(name: str, out_dir: Path) -> None:
    peer, module, app = CASES[name]
    case = find_case(module, app, prefix=True)
    from offline_support import json_lines, proto_file
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if peer == "openinference-langchain":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    elif peer == "openllmetry-langchain":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)
    elif peer == "openinference-autogen-agentchat":
        # the global provider stays unset, so AutoGen's own runtime tracing records nothing here
        from openinference.instrumentation.autogen_agentchat import AutogenAgentChatInstrumentor

        AutogenAgentChatInstrumentor().instrument(tracer_provider=provider)
    elif peer == "openinference-openai-agents":
        # added beside the SDK's own processors (its default replaces them, dropping the OpenAI exporter)
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, exclusive_processor=False)
    elif peer == "openllmetry-openai-agents":
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor as OpenLLMetryAgents

        OpenLLMetryAgents().instrument(tracer_provider=provider)
    else:  # AutoGen's and Agent Framework's own tracing take the global provider
        trace.set_tracer_provider(provider)
    case.run()
    provider.force_flush()
    spans = exporter.get_finished_spans()
    (out_dir / f"{name}.otlp.jsonl").write_bytes(json_lines([spans]))
    if name in PROTOBUF:
        (out_dir / f"{name}.otlp.pb").write_bytes(proto_file([spans]))


def record_all(out_dir: Path) -> dict[str, dict[str, str]]:
    """Record every fixture into ``out_dir`` (one process each, in parallel); returns the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "benchmarks.foreign_fixtures", "--one", name, str(out_dir)],
                              cwd=REPO, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        done = dict(zip(CASES, pool.map(one, CASES)))
    failed = {name: p for name, p in done.items() if p.returncode}
    for name, p in failed.items():
        print(f"== {name} failed (exit {p.returncode}):\n{p.stderr[-3000:]}", file=sys.stderr)
    if failed:
        raise SystemExit(f"{len(failed)} fixture(s) failed to record: {', '.join(failed)}")
    manifest = {}
    for name, (peer, module, app) in CASES.items():
        entry = {"peer": peer, "peer_package": PEERS[peer], "peer_version": version(PEERS[peer]),
                 "cases": module, "app": find_case(module, app, prefix=True).truth.app}
        manifest.update({f: entry for f in files_of(name)})
    return dict(sorted(manifest.items()))


# -- converting a fixture, and what of its traces must not change between runs --------------------------


def converted_traces(path: Path) -> list[dict[str, Any]]:
    """``path`` converted by orch-otel (in-process), its traces in the order they started."""
    from orch_otel.offline import convert_inputs
    from orch_otel.offline.readers import read_file
    from orch_otel.tracefiles import read_lines

    starts: dict[str, int] = {}
    for chunk in read_file(path):
        for s in chunk.spans:
            starts[s.trace_id] = min(s.start_ns, starts.get(s.trace_id, s.start_ns))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "traces.jsonl"
        convert_inputs([path], out)
        traces = [line.trace for line in read_lines(out)]
    return sorted(traces, key=lambda t: starts.get(t["trace_id"], 0))


EVENT_FIELDS = ("type", "agent", "to", "decision", "tool", "call_id", "options", "targets",
                "reason", "forced", "instance", "implied")


def normalised(traces: list[dict[str, Any]]) -> list[str]:
    """One line per trace and per event: what a run must reproduce (no ids, times or durations).
    Parallel branches (a fan-out) interleave differently from run to run, so events
    are listed per instance, in order within each. The spawns the converter groups
    into one implied decision are those that start close together, which thread
    timing decides, so implied spawn decisions are listed last, one per target.
    Results of tool calls in flight together (consecutive ``tool_result`` events
    of one instance) arrive in the order the calls finish, also thread timing:
    such a run is listed sorted."""
    lines = [f"traces: {len(traces)}"]
    for i, t in enumerate(traces):
        lines.append(f"trace {i}: topology={t.get('topology')}")
        by_instance: dict[str, list[dict[str, Any]]] = {}
        implied_spawns = []
        for e in t["events"]:
            kept = {k: e[k] for k in EVENT_FIELDS if e.get(k) is not None}
            for k in ("options", "targets"):
                if k in kept:
                    kept[k] = sorted(kept[k])
            if kept.get("implied") and kept.get("decision") == "spawn":
                implied_spawns += [json.dumps({**kept, "to": to, "targets": [to]}) for to in kept.get("targets", [])]
            else:
                by_instance.setdefault(kept.get("instance", ""), []).append(kept)
        lines += [f"  {line}" for instance in sorted(by_instance) for line in _results_sorted(by_instance[instance])]
        lines += [f"  {line}" for line in sorted(implied_spawns)]
    return lines


def _results_sorted(events: list[dict[str, Any]]) -> list[str]:
    """``events`` as lines, with each run of consecutive tool results sorted."""
    out: list[str] = []
    run: list[str] = []
    for event in events:
        line = json.dumps(event)
        if event.get("type") == "tool_result":
            run.append(line)
            continue
        out += sorted(run) + [line]
        run = []
    return out + sorted(run)


def check(committed: Path) -> int:
    problems: list[str] = []
    manifest = json.loads((committed / MANIFEST).read_text())
    wanted = {f for name in CASES for f in files_of(name)}
    if set(manifest) != wanted:
        problems.append(f"{MANIFEST} lists {sorted(set(manifest) - wanted)} beyond, and lacks "
                        f"{sorted(wanted - set(manifest))} of, the fixtures this script makes")
    for package, made in sorted({(e["peer_package"], e["peer_version"]) for e in manifest.values()}):
        if version(package) != made:
            problems.append(f"{package}: installed {version(package)}, but the fixtures were made with {made}; "
                            "regenerate them: python -m benchmarks.foreign_fixtures")
    with tempfile.TemporaryDirectory() as tmp:
        fresh = record_all(Path(tmp))
        for f in sorted(set(manifest) & set(fresh)):
            if manifest[f]["app"] != fresh[f]["app"]:
                problems.append(f"{f}: recorded {manifest[f]['app']!r}, its case is now {fresh[f]['app']!r}")
            if not (committed / f).is_file():
                problems.append(f"{f}: in {MANIFEST} but not in {committed}")
                continue
            old = normalised(converted_traces(committed / f))
            new = normalised(converted_traces(Path(tmp) / f))
            if old != new:
                diff = list(difflib.unified_diff(old, new, f"committed/{f}", f"regenerated/{f}", lineterm="", n=2))
                problems.append(f"{f}: its traces differ from a fresh recording's:\n" + "\n".join(diff[:60])
                                + (f"\n  ... {len(diff) - 60} more diff lines" if len(diff) > 60 else ""))
    for name in sorted(PROTOBUF):
        jsonl, pb = (committed / f for f in files_of(name))
        if pb.is_file() and converted_traces(pb) != converted_traces(jsonl):
            problems.append(f"{pb.name} and {jsonl.name} convert to different traces")
    for p in problems:
        print(f"FAIL {p}")
    print(f"foreign fixtures: {len(manifest)} checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--check", action="store_true", help="record again and compare with the fixtures in --out")
    parser.add_argument("--one", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        _record(args.one[0], Path(args.one[1]))
        return 0
    if args.check:
        return check(args.out)
    manifest = record_all(args.out)
    (args.out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    for f in manifest:
        print(f"wrote {args.out / f} ({(args.out / f).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
