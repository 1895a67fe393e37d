"""Make the foreign-log fixtures in ``tests/fixtures/foreign/``: the project's
test apps run under the real peer instrumentors (never orch-otel's), and
their spans written as a Collector's file exporter writes OTLP JSON lines.

Run in the benchmark venv, where the peers are installed (they register
``opentelemetry_instrumentor`` entry points, so they never enter ``.venv``)::

    .venv-bench/bin/python -m benchmarks.foreign_fixtures [--out DIR]

Each peer runs in its own process, so one peer's patches never see another's app.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "foreign"
# fixture name -> (peer, app): the peers as their users install them
CASES = {
    "openinference_langgraph_supervisor": ("openinference-langchain", "supervisor"),
    "openllmetry_langgraph_supervisor": ("openllmetry-langchain", "supervisor"),
    "autogen_core_selector": ("autogen-core", "selector_team"),
}


def _record(peer: str, app: str, out: Path) -> None:
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "src")]
    from offline_support import json_lines
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
    else:  # AutoGen's own runtime tracing takes the global provider
        trace.set_tracer_provider(provider)
    if peer.endswith("langchain"):
        import langgraph_apps

        getattr(langgraph_apps, f"build_{app}")().invoke(langgraph_apps.user_input("what is 1+2?"))
    else:
        import autogen_apps

        asyncio.run(getattr(autogen_apps, app)().run(task="go"))
    provider.force_flush()
    out.write_bytes(json_lines([exporter.get_finished_spans()]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--one", nargs=2, metavar=("NAME", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        peer, app = CASES[args.one[0]]
        _record(peer, app, Path(args.one[1]))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        path = args.out / f"{name}.otlp.jsonl"
        subprocess.run([sys.executable, "-m", "benchmarks.foreign_fixtures", "--one", name, str(path)],
                       check=True, cwd=REPO)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
