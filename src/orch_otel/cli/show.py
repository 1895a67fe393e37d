"""``orch-otel show``: a trace as a tree."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..tracefiles import read_lines, trace_files
from .render import summary, tree


def run_show(path: str, trace_id: str | None) -> int:
    console = Console()
    err = Console(stderr=True)
    for file in trace_files([path]):
        if not file.is_file():
            err.print(f"[red]{file}: no such file[/red]")
            return 2
        for line in read_lines(file):
            if line.trace is None:
                print(f"{file}:{line.lineno}: skipped: {line.error}", file=sys.stderr)
                continue
            if trace_id is None or line.trace.get("trace_id") == trace_id:
                console.print(tree(line.trace))
                console.print(summary(line.trace))
                return 0
    err.print(f"[red]no trace{' with id ' + trace_id if trace_id else ''} in {path}[/red]")
    return 1


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a trace as a tree")
    p.add_argument("path", help="a trace file or directory")
    p.add_argument("--trace-id", default=None, help="which trace (default: the first)")


def run(args: argparse.Namespace) -> int:
    return run_show(args.path, args.trace_id)
