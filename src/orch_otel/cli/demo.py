"""``orch-otel demo``: run the bundled offline LangGraph app and summarise its trace."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from .. import _configure as configure
from .. import _env as env
from .. import demo as decorator_demo
from ..tracefiles import private_mkdir, read_lines
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from .render import summary, tree


def _demo_app(console: Console):
    """The LangGraph app when LangGraph is installed, else the decorator-based one."""
    try:
        from ..integrations.langgraph.demo import run_demo_app
    except ImportError as exc:
        # [langgraph] without langchain (create_agent, in [examples]) is the common case: say which is missing
        langchain = (exc.name or "").partition(".")[0] == "langchain" and importlib.util.find_spec("langgraph")
        why = "the LangGraph demo needs langchain, which is not installed" if langchain else "LangGraph is not installed"
        # markup=False: rich would take "[langgraph,examples]" for a style tag and drop it
        console.print(f"{why}: pip install 'orch-otel[langgraph,examples]'; running the decorator demo instead",
                      style="yellow", markup=False, highlight=False)
        return decorator_demo.run
    console.print("running the offline LangGraph demo: supervisor -> research team (Send fan-out x3) -> writer")
    return run_demo_app


def _writable(directory: Path) -> str | None:
    """Why traces cannot be written to ``directory``, or None when they can."""
    try:
        private_mkdir(directory)  # it will hold traces, maybe content: private
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def run_demo(trace_dir: str | None, *, capture_content: bool = False) -> int:
    console = Console()
    directory = Path(trace_dir) if trace_dir else env.trace_dir()
    problem = _writable(directory)
    if problem is not None:  # checked first: the exporter would only log it, and the demo would find no trace
        print(f"orch-otel demo: cannot write traces to {directory}: {problem}; pass a writable --trace-dir",
              file=sys.stderr)
        return EXIT_USAGE
    state = configure.instrument(trace_dir=directory, capture_content=capture_content or None)
    if state.trace_exporter is None:
        print("orch-otel demo: a non-SDK tracer provider is set; the demo cannot write trace files", file=sys.stderr)
        return EXIT_USAGE
    asyncio.run(_demo_app(console)())
    configure.flush()
    writer = state.trace_exporter.writer
    traces = [line.trace for line in read_lines(writer.trace_path) if line.trace is not None] \
        if writer.trace_path.is_file() else []
    if not traces:
        print(f"orch-otel demo: the demo ran but no trace was written to {writer.trace_path}", file=sys.stderr)
        return EXIT_INVALID
    trace = traces[-1]
    console.print(tree(trace))
    console.print(summary(trace))
    console.print(f"trace file: [bold]{writer.trace_path}[/bold]")
    if writer.content_path.exists():
        console.print(f"content store: [bold]{writer.content_path}[/bold]")
    console.print(f"next: orch-otel validate {writer.directory}  |  orch-otel show {writer.trace_path}")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the bundled offline multi-agent LangGraph app and write its trace",
                       description="Run the bundled offline multi-agent app (LangGraph when installed) and print its "
                       "trace. Exit codes: 0 ok, 1 no trace was written, 2 the trace directory is not writable.")
    p.add_argument("--trace-dir", default=None, help="where to write traces (default: $ORCH_OTEL_TRACE_DIR or ./orch-traces)")
    p.add_argument("--capture-content", action="store_true", help="also keep message and tool content")


def run(args: argparse.Namespace) -> int:
    return run_demo(args.trace_dir, capture_content=args.capture_content)
