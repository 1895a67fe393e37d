"""Does a change to the converter (or the live span copy) leave its output
byte for byte as it was? For performance work, where the output must not move.

    .venv/bin/python -m benchmarks.same_output --against /work/main/src

Records the spans of real runs once (the fidelity suite's apps and the capture
benchmark's apps, as span-dump lines), then converts them twice, in two fresh
interpreters: one with this checkout's ``src`` first on the path, one with the
``--against`` sources. Each conversion goes both ways the spans can reach the
converter: the offline path (span-dump records) and the live path
(``from_readable_span`` of SDK spans rebuilt from the records). The trace
lines, the contents and the problems of every trace must be equal as bytes.
Nothing here is expected output: the two versions are compared with each other.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH_APPS = {"openai_agents": ("handoffs", "as_tools"), "langgraph": ("supervisor", "fanout8"),
              "autogen": ("round_robin", "swarm")}


def record_fidelity(out: Path) -> int:
    """The fidelity suite's apps, each run once, their spans as span-dump lines."""
    sys.path.insert(0, str(REPO / "tests"))
    import fidelity_cases_autogen
    import fidelity_cases_custom
    import fidelity_cases_langgraph
    import fidelity_cases_openai_agents

    from orch_otel import testing
    from orch_otel.integrations.autogen import AutoGenInstrumentor
    from orch_otel.integrations.langgraph import LangGraphInstrumentor
    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor
    from orch_otel.spans import dump_line

    cases = (fidelity_cases_langgraph.CASES + fidelity_cases_autogen.CASES + fidelity_cases_openai_agents.CASES
             + fidelity_cases_custom.CASES)
    testing.ensure_sdk_provider()
    for cls in (LangGraphInstrumentor, AutoGenInstrumentor, OpenAIAgentsInstrumentor):
        cls().instrument()
    spans = 0
    with out.open("wb") as handle:
        for case in cases:
            with testing.capture() as captured:
                case.run()
            for record in captured.spans:
                handle.write(dump_line(record))
                spans += 1
    return spans


def record_bench(suite: str, out: Path, runs: int = 3) -> int:
    """A capture-benchmark suite's apps, ``runs`` runs each, through ``instrument()``'s provider."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from benchmarks._worker import Worker
    from orch_otel.spans import dump_line, from_readable_span

    worker = Worker(suite, "orch_otel")
    memory = InMemorySpanExporter()
    worker.config.provider.add_span_processor(SimpleSpanProcessor(memory))
    for app in BENCH_APPS[suite]:
        worker.loop.run_until_complete(worker._prepared(app, runs)())
    worker.config.flush()
    spans = memory.get_finished_spans()
    with out.open("wb") as handle:
        for span in spans:
            handle.write(dump_line(from_readable_span(span)))
    return len(spans)


def convert_all(dumps: list[Path], out: Path) -> None:
    """Every trace of the dumps, converted offline and live, as lines of bytes in a stable order."""
    from collections import defaultdict

    import orjson

    from orch_otel.converter import NotOrchestration, convert
    from orch_otel.spans import from_readable_span, record_from_dict, to_readable_span

    with out.open("wb") as handle:
        for dump in dumps:
            traces = defaultdict(list)
            for line in dump.read_bytes().splitlines():
                record = record_from_dict(orjson.loads(line))
                traces[record.trace_id].append(record)
            for trace_id, records in traces.items():
                complete = any(r.is_local_root for r in records)
                live = [from_readable_span(to_readable_span(r)) for r in records]
                for way, spans in (("offline", records), ("live", live)):
                    try:
                        result = convert(spans, complete=complete)
                    except NotOrchestration:
                        handle.write(f"{dump.name} {trace_id} {way}: not orchestration\n".encode())
                        continue
                    handle.write(f"{dump.name} {trace_id} {way}\n".encode())
                    handle.write(orjson.dumps(result.trace) + b"\n")
                    handle.write(orjson.dumps(result.contents, option=orjson.OPT_SORT_KEYS) + b"\n")
                    handle.write(orjson.dumps([result.orphans, result.problems, result.incomplete]) + b"\n")


def _run(args: list[str], src: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(REPO)])}
    subprocess.run([sys.executable, "-m", "benchmarks.same_output", *args], cwd=REPO, env=env, check=True, timeout=1200)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.same_output", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="the other version's src folder (e.g. main's)")
    parser.add_argument("--record", nargs=2, metavar=("SOURCE", "OUT"), help=argparse.SUPPRESS)
    parser.add_argument("--convert", nargs="+", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record:
        source, out = args.record
        count = record_fidelity(Path(out)) if source == "fidelity" else record_bench(source, Path(out))
        print(f"{source}: {count} spans", file=sys.stderr)
        return 0
    if args.convert:
        *dumps, out = args.convert
        convert_all([Path(p) for p in dumps], Path(out))
        return 0
    if args.against is None:
        parser.error("--against SRC is needed")
    here = REPO / "src"
    with tempfile.TemporaryDirectory(prefix="orch-same-output-") as tmp:
        work = Path(tmp)
        dumps = []
        for source in ("fidelity", *BENCH_APPS):
            dumps.append(work / f"{source}.spans.jsonl")
            _run(["--record", source, str(dumps[-1])], here)
        outputs = {}
        for name, src in (("this", here), ("against", args.against.resolve())):
            outputs[name] = work / f"{name}.out"
            _run(["--convert", *map(str, dumps), str(outputs[name])], src)
        this, other = outputs["this"].read_bytes(), outputs["against"].read_bytes()
        traces = this.count(b" offline\n")
        if this != other:
            a, b = this.splitlines(), other.splitlines()
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            print(f"DIFFERENT at output line {first + 1}:\n  this:    {a[first][:300] if first < len(a) else '<end>'}\n"
                  f"  against: {b[first][:300] if first < len(b) else '<end>'}", file=sys.stderr)
            return 1
        print(f"same output: {traces} traces, converted offline and live ({len(this)} bytes, "
              f"sha256 {hashlib.sha256(this).hexdigest()[:16]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
