"""``orch-otel demo``: run the bundled offline example and summarise its trace."""

from __future__ import annotations

import asyncio

from rich.console import Console

from .. import configure
from ..demo import run
from ..tracefiles import read_lines
from .render import summary, tree


def run_demo(trace_dir: str | None, *, capture_content: bool = False) -> int:
    console = Console()
    state = configure.instrument(trace_dir=trace_dir, capture_content=capture_content or None)
    if state.trace_exporter is None:
        console.print("[red]a non-SDK tracer provider is set; the demo cannot write trace files[/red]")
        return 1
    asyncio.run(run())
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
