"""``orch-otel show``: a trace as a tree. Exit codes: 0 shown, 1 no trace
shown because the lines read are not valid traces, 2 no such file, or no
trace (with that id) in the input."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..tracefiles import read_lines, trace_files
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from .render import summary, tree


def run_show(path: str, trace_id: str | None) -> int:
    console = Console()
    skipped = 0
    for file in trace_files([path]):
        if not file.is_file():
            print(f"orch-otel show: {file}: no such file", file=sys.stderr)
            return EXIT_USAGE
        for line in read_lines(file):
            if line.trace is None or not isinstance(line.trace.get("events"), list):
                skipped += 1
                print(f"{file}:{line.lineno}: skipped: {line.error or 'not a trace (no events)'}", file=sys.stderr)
                continue
            if trace_id is None or line.trace.get("trace_id") == trace_id:
                try:
                    console.print(tree(line.trace))
                    console.print(summary(line.trace))
                except (KeyError, TypeError, AttributeError) as exc:  # a line that only looks like a trace
                    print(f"{file}:{line.lineno}: not a valid trace ({type(exc).__name__}: {exc}); "
                          "run `orch-otel validate` on it", file=sys.stderr)
                    return EXIT_INVALID
                return EXIT_OK
    print(f"orch-otel show: no trace{' with id ' + trace_id if trace_id else ''} in {path}", file=sys.stderr)
    return EXIT_INVALID if skipped and trace_id is None else EXIT_USAGE


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a trace as a tree",
                       description="Print one trace as a tree of agents and events, and a summary table. Exit codes: "
                       "0 shown, 1 the lines read are not valid traces, 2 no such file or no such trace.")
    p.add_argument("path", help="a trace file or directory")
    p.add_argument("--trace-id", default=None, help="which trace (default: the first)")


def run(args: argparse.Namespace) -> int:
    return run_show(args.path, args.trace_id)
