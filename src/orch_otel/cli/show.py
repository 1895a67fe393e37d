"""``orch-otel show``: a trace as a tree, one node per agent instance."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from ..tracefiles import read_lines, trace_files
from .render import summary, tree

_LISTED = 20  # trace ids listed when a path holds several


def run_show(path: str, trace_id: str | None) -> int:
    console = Console()
    err = Console(stderr=True)
    chosen: tuple[Path, int, dict[str, Any]] | None = None
    ids: list[str] = []
    files = trace_files([path])
    for file in files:
        if not file.is_file():
            err.print(f"[red]{file}: no such file[/red]")
            return 2
        for line in read_lines(file):
            if line.trace is None:
                print(f"{file}:{line.lineno}: skipped: {line.error}", file=sys.stderr)
                continue
            this = str(line.trace.get("trace_id"))
            ids.append(this)
            if chosen is None and (trace_id is None or this == trace_id):
                chosen = (file, line.lineno, line.trace)
    if chosen is None:
        where = f"no trace with id {trace_id}" if trace_id else "no trace"
        print(f"{where} in {path}" + (f"; its traces: {_listing(ids)}" if ids else ""), file=sys.stderr)
        return 1
    file, lineno, trace = chosen
    if len(ids) > 1:
        how = "" if trace_id else "; pick another with --trace-id ID"
        print(f"{path} holds {len(ids)} traces: {_listing(ids)}", file=sys.stderr)
        print(f"showing {trace['trace_id']} ({file}:{lineno}){how}", file=sys.stderr)
    console.print(tree(trace))
    console.print(summary(trace))
    return 0


def _listing(ids: list[str]) -> str:
    shown = ", ".join(ids[:_LISTED])
    return shown + (f" ... and {len(ids) - _LISTED} more" if len(ids) > _LISTED else "")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a trace as a tree (one node per agent instance)")
    p.add_argument("path", help="a trace file or directory")
    p.add_argument("--trace-id", default=None,
                   help="which trace (default: the first; the others' ids are listed)")


def run(args: argparse.Namespace) -> int:
    return run_show(args.path, args.trace_id)
