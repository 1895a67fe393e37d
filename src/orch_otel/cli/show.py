"""``orch-otel show``: a trace as a tree, one node per agent instance. Exit
codes: 0 shown, 1 no trace shown because the lines read are not valid traces,
2 no such file, or no trace (with that id) in the input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from .._inputs import printable
from ..tracefiles import Line, find_trace_files, read_lines
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from .render import summary, tree

_LISTED = 20  # trace ids listed when a path holds several


def run_show(path: str, trace_id: str | None, listing: bool = False) -> int:
    console = Console()
    chosen: tuple[Path, int, dict[str, Any]] | None = None
    ids: list[str] = []
    skipped = 0
    files, unread = find_trace_files([path])
    for problem in unread:
        if problem.where == str(Path(path)):
            print(f"orch-otel show: {printable(problem.where)}: {problem.reason}", file=sys.stderr)
            return EXIT_USAGE
        print(f"{printable(problem.where)}: {problem.reason}", file=sys.stderr)  # found in the folder: the rest is read
    for file in files:
        for line in read_lines(file):
            if line.trace is None or not isinstance(line.trace.get("events"), list):
                skipped += 1
                print(f"{line.where}: skipped: {printable(line.error or 'not a trace (no events)')}", file=sys.stderr)
                continue
            this = str(line.trace.get("trace_id"))
            ids.append(this)
            if chosen is None and (trace_id is None or this == trace_id):
                chosen = (file, line.lineno, line.trace)
    if listing:
        return _list(path, skipped)
    if chosen is None:
        where = f"no trace with id {trace_id}" if trace_id else "no trace"
        print(f"orch-otel show: {where} in {path}" + (f"; its traces: {_listing(ids)}" if ids else ""), file=sys.stderr)
        return EXIT_INVALID if skipped and trace_id is None else EXIT_USAGE
    file, lineno, trace = chosen
    if len(ids) > 1:
        how = "" if trace_id else "; pick another with --trace-id ID"
        print(f"{path} holds {len(ids)} traces: {_listing(ids)}", file=sys.stderr)
        print(f"showing {printable(str(trace['trace_id']))} ({Line(file, lineno, None).where}){how}", file=sys.stderr)
    try:
        console.print(tree(trace))
        console.print(summary(trace))
    except (KeyError, TypeError, AttributeError) as exc:  # a line that only looks like a trace
        where = Line(file, lineno, None).where
        print(f"{where}: not a valid trace ({type(exc).__name__}); run `orch-otel validate` on it", file=sys.stderr)
        return EXIT_INVALID
    return EXIT_OK


def _list(path: str, skipped: int) -> int:
    """Every trace in ``path``: one tab-separated line each (id, task, topology, events, stop reason), ids whole."""
    rows = []
    for file in find_trace_files([path])[0]:
        for line in read_lines(file):
            trace = line.trace
            if trace is None or not isinstance(trace.get("events"), list):
                continue
            stops = [e for e in trace["events"] if isinstance(e, dict) and e.get("decision") == "stop"]
            reason = str(stops[-1].get("reason", "?")) if stops else "none recorded"
            rows.append("\t".join((str(trace.get("trace_id")), str(trace.get("task_id")), str(trace.get("topology") or "unknown"),
                                   str(len(trace["events"])), reason)))
    if not rows:
        print(f"orch-otel show: no trace in {path}", file=sys.stderr)
        return EXIT_INVALID if skipped else EXIT_USAGE
    print("\t".join(("trace_id", "task_id", "topology", "events", "stop_reason")))
    print("\n".join(rows))
    return EXIT_OK


def _listing(ids: list[str]) -> str:
    shown = ", ".join(ids[:_LISTED])
    return shown + (f" ... and {len(ids) - _LISTED} more" if len(ids) > _LISTED else "")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show", help="print a trace as a tree (one node per agent instance)",
                       description="Print one trace as a tree of agent instances and events, and a summary table. "
                       "Exit codes: 0 shown, 1 the lines read are not valid traces, 2 no such file or no such trace.")
    p.add_argument("path", help="a trace file or directory")
    p.add_argument("--trace-id", default=None,
                   help="which trace (default: the first; the others' ids are listed)")
    p.add_argument("--list", action="store_true", dest="listing",
                   help="list every trace in PATH, one tab-separated line each "
                   "(id, task, topology, events, stop reason), instead of showing one")


def run(args: argparse.Namespace) -> int:
    return run_show(args.path, args.trace_id, args.listing)
