"""How much of orch-otel's own trace of a run a foreign log (spans another
instrumentation wrote: tests/fixtures/foreign/) gives back once converted.

For each fixture in MANIFEST.json: convert it, run the same fidelity case under
orch-otel's instrumentors, and match their events kind by kind (as multisets,
by type, decision, agent, to, tool and call id): recall = matched / native,
precision = matched / foreign. A foreign log that converts to several traces
counts as their union, in the order they started. Run in ``.venv`` (no peers)::

    .venv/bin/python -m benchmarks.foreign_fidelity [--write FILE | --check FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.foreign_fixtures import FIXTURES, MANIFEST, converted_traces, find_case

START, END = "<!-- fidelity-table:start -->", "<!-- fidelity-table:end -->"
TYPES = ("spawn", "message:agent", "message:llm", "tool_call", "tool_result", "return", "aggregate")
FIRST_DECISIONS = ("delegate", "spawn", "stop")  # then any others, alphabetically


def kind(e: dict[str, Any]) -> str | None:
    if e["type"] == "orchestrator_decision":
        return f"decision:{e.get('decision')}"
    if e["type"] == "message":
        return f"message:{e.get('channel')}"
    return e["type"] if e["type"] in TYPES else None


def key(e: dict[str, Any]) -> tuple:
    return tuple(e.get(k) for k in ("type", "decision", "agent", "to", "tool", "call_id"))


def native_trace(case: Any) -> dict[str, Any]:
    """orch-otel's own trace of one run of ``case``, captured as tests/test_fidelity.py does."""
    from orch_otel import testing

    with testing.capture() as captured:
        case.run()
    return captured.traces()[case.trace]


def _delegations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "orchestrator_decision" and e.get("decision") == "delegate"]


def _stops(events: list[dict[str, Any]]) -> Counter:
    return Counter((e["agent"], e.get("reason"), bool(e.get("forced"))) for e in events
                   if e["type"] == "orchestrator_decision" and e.get("decision") == "stop")


def _same(native: list, foreign: list) -> str:
    return "–" if not native else "yes" if native == foreign else "no"


def _spawns_per_target(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A spawn decision naming several targets as one per target: which spawns the
    converter groups into one decision depends on how close their starts are, a
    matter of timing, not of what the log records."""
    out = []
    for e in events:
        if e["type"] == "orchestrator_decision" and e.get("decision") == "spawn" and len(e.get("targets") or []) > 1:
            out += [{**e, "to": to, "targets": [to]} for to in e["targets"]]
        else:
            out.append(e)
    return out


def compare(native: list[dict[str, Any]], foreign: list[dict[str, Any]]) -> dict[str, Any]:
    native, foreign = _spawns_per_target(native), _spawns_per_target(foreign)
    kinds: dict[str, dict[str, Any]] = {}
    for k in sorted({kind(e) for e in native + foreign} - {None}):
        n = Counter(key(e) for e in native if kind(e) == k)
        f = Counter(key(e) for e in foreign if kind(e) == k)
        matched = sum((n & f).values())
        kinds[k] = {"native": sum(n.values()), "foreign": sum(f.values()), "matched": matched,
                    "recall": matched / sum(n.values()) if n else None,
                    "precision": matched / sum(f.values()) if f else None}
    nd, fd = _delegations(native), _delegations(foreign)
    want, got = _stops(native), _stops(foreign)
    if not want:
        stop = "–"
    elif want <= got:
        stop = "yes"
    elif Counter(s[:2] for s in want.elements()) <= Counter(s[:2] for s in got.elements()):
        stop = "forced differs"
    else:
        stop = "no"
    return {"kinds": kinds,
            "targets": _same([e.get("targets") or [e.get("to")] for e in nd], [e.get("targets") or [e.get("to")] for e in fd]),
            "options": _same([sorted(e.get("options") or []) for e in nd], [sorted(e.get("options") or []) for e in fd]),
            "stop": stop}


def measure(fixtures: Path = FIXTURES) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the manifest, one row per fixture)."""
    from orch_otel import testing
    from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor
    from orch_otel.integrations.autogen import AutoGenInstrumentor
    from orch_otel.integrations.langgraph import LangGraphInstrumentor
    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    manifest = json.loads((fixtures / MANIFEST).read_text())
    testing.ensure_sdk_provider()
    instrumentors = [LangGraphInstrumentor(), AutoGenInstrumentor(), AgentFrameworkInstrumentor(), OpenAIAgentsInstrumentor()]
    for i in instrumentors:
        i.instrument()
    natives: dict[tuple[str, str], dict[str, Any]] = {}
    rows = []
    try:
        for name, entry in manifest.items():
            case_key = (entry["cases"], entry["app"])
            if case_key not in natives:
                natives[case_key] = native_trace(find_case(*case_key))
            traces = converted_traces(fixtures / name)
            foreign = [e for t in traces for e in t["events"]]
            rows.append({"fixture": name, "source": entry["peer"], "app": entry["app"], "traces": len(traces),
                         **compare(natives[case_key]["events"], foreign)})
    finally:
        for i in reversed(instrumentors):
            i.uninstrument()
    return manifest, rows


def _cell(k: dict[str, Any] | None) -> str:
    if k is None or not k["native"] and not k["foreign"]:
        return "–"
    r, p = (("–" if v is None else f"{v:.2f}") for v in (k["recall"], k["precision"]))
    return f"{r} / {p}"


def markdown(manifest: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    decisions = {k.split(":", 1)[1] for r in rows for k in r["kinds"] if k.startswith("decision:")}
    order = [d for d in FIRST_DECISIONS if d in decisions] + sorted(decisions - set(FIRST_DECISIONS))
    kinds = [f"decision:{d}" for d in order] + list(TYPES)
    versions = sorted({(e["peer_package"], e["peer_version"]) for e in manifest.values()})
    lines = [
        "Fixtures recorded with " + ", ".join(f"{p} {v}" for p, v in versions) + f" (tests/fixtures/foreign/{MANIFEST}). "
        "Each kind's cell is recall / precision (matched / native, matched / foreign); "
        "– where neither trace has that kind, or for the side that has none of it. "
        "targets, options: whether the delegations' targets (and their candidates) are orch-otel's own, in order; "
        "stop: whether the same agent stopped for the same reason.",
        "",
        "| fixture | traces | " + " | ".join(k.replace(":", " ") for k in kinds) + " | targets | options | stop |",
        "|" + "---|" * (len(kinds) + 5),
    ]
    for r in rows:
        cells = [r["fixture"].replace(".otlp.jsonl", "").replace(".otlp.pb", " (protobuf)"), str(r["traces"]),
                 *(_cell(r["kinds"].get(k)) for k in kinds), r["targets"], r["options"], r["stop"]]
        lines.append("| " + " | ".join(cells) + " |")
    recorded: dict[str, list[str]] = {}
    for r in rows:
        stem = r["fixture"].split(".otlp.")[0]
        if stem not in recorded.setdefault(r["app"], []):
            recorded[r["app"]].append(stem)
    lines += ["", "The apps (their cases in tests/fidelity_cases_*.py), and the fixtures recorded from each:", ""]
    lines += [f"- {', '.join(stems)}: {app}" for app, stems in recorded.items()]
    return "\n".join(lines)


def _between_markers(text: str) -> str | None:
    lines = text.splitlines()
    if START not in lines or END not in lines:
        return None
    return "\n".join(lines[lines.index(START) + 1:lines.index(END)]).strip("\n")


def write(path: Path, table: str) -> None:
    text = path.read_text() if path.exists() else f"# Foreign logs\n\n{START}\n{END}\n"
    if _between_markers(text) is None:
        raise SystemExit(f"{path}: no {START} / {END} lines to write between")
    head, rest = text.split(START + "\n", 1)
    tail = rest[rest.index(END):]
    path.write_text(f"{head}{START}\n{table}\n{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help=argparse.SUPPRESS)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", type=Path, metavar="FILE", help="put the table between the markers in FILE")
    group.add_argument("--check", type=Path, metavar="FILE", help="exit 1 when FILE's table is not the current one")
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON instead of the table")
    args = parser.parse_args(argv)
    manifest, rows = measure(args.fixtures)
    table = markdown(manifest, rows)
    print(json.dumps(rows, indent=2) if args.json else table)
    if args.write:
        write(args.write, table)
    if args.check:
        current = _between_markers(args.check.read_text()) if args.check.exists() else None
        if current != table:
            print(f"{args.check}: its fidelity table is not the current one; run "
                  f"python -m benchmarks.foreign_fidelity --write {args.check}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
