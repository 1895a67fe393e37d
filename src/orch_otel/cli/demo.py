"""``orch-otel demo``: run the bundled offline LangGraph app and summarise its trace."""

from __future__ import annotations

import argparse
import asyncio

from rich.console import Console

from .. import configure
from .. import demo as decorator_demo
from ..tracefiles import read_lines
from .render import summary, tree


def _demo_app(console: Console):
    """The LangGraph app when LangGraph is installed, else the decorator-based one."""
    try:
        from ..integrations.langgraph.demo import run_demo_app
    except ImportError:
        console.print("[yellow]LangGraph is not installed ('orch-otel[langgraph]'): running the decorator demo[/yellow]")
        return decorator_demo.run
    console.print("running the offline LangGraph demo: supervisor -> research team (Send fan-out x3) -> writer")
    return run_demo_app


def run_demo(trace_dir: str | None, *, capture_content: bool = False) -> int:
    console = Console()
    state = configure.instrument(trace_dir=trace_dir, capture_content=capture_content or None)
    if state.trace_exporter is None:
        console.print("[red]a non-SDK tracer provider is set; the demo cannot write trace files[/red]")
        return 1
    asyncio.run(_demo_app(console)())
    configure.flush()
    writer = state.trace_exporter.writer
    traces = [line.trace for line in read_lines(writer.trace_path) if line.trace is not None]
    if not traces:
        console.print("[red]the demo ran but no trace was written[/red]")
        return 1
    trace = traces[-1]
    console.print(tree(trace))
    console.print(summary(trace))
    console.print(f"trace file: [bold]{writer.trace_path}[/bold]")
    if writer.content_path.exists():
        console.print(f"content store: [bold]{writer.content_path}[/bold]")
    console.print(f"next: orch-otel validate {writer.directory}  |  orch-otel show {writer.trace_path}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the bundled offline multi-agent LangGraph app and write its trace")
    p.add_argument("--trace-dir", default=None, help="where to write traces (default: $ORCH_OTEL_TRACE_DIR or ./orch-traces)")
    p.add_argument("--capture-content", action="store_true", help="also keep message and tool content")


def run(args: argparse.Namespace) -> int:
    return run_demo(args.trace_dir, capture_content=args.capture_content)
