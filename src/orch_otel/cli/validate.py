"""``orch-otel validate``: per-file, per-line errors. Exit codes: 0 all valid,
1 some trace invalid, 2 a named file is missing (or no regular file) or no
trace was found. A file found in a directory that cannot be read (a FIFO, a
symlink loop) is reported as ``file: reason`` and the others are read."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from .._inputs import printable
from .._validation import trace_errors
from ..tracefiles import SPAN_LOG_LINE, find_trace_files, read_lines
from .options import EXIT_INVALID, EXIT_OK
from .options import EXIT_USAGE as EXIT_NO_INPUT


def run_validate(paths: list[str]) -> int:
    console = Console(highlight=False)
    files, unread = find_trace_files(paths)
    for problem in unread:  # a missing file, a FIFO, a symlink loop: reported, the other files read
        print(f"{printable(problem.where)}: {problem.reason}", file=sys.stderr)
    named_unread = any(problem.where in {str(Path(p)) for p in paths} for problem in unread)
    traces = bad = read = 0
    for path in files:
        read += 1
        for line in read_lines(path):
            if not line.lineno:  # the file could not be read after all
                read -= 1
                print(f"{line.where}: {line.error}", file=sys.stderr)
                continue
            traces += 1
            if line.error == SPAN_LOG_LINE:  # a whole span log given by mistake: one line for the file, not per span
                bad += 1
                print(f"{path}:{line.lineno}: {line.error}; the rest of this file is not read", file=sys.stderr)
                break
            errors = [line.error] if line.error else trace_errors(line.trace or {})
            if errors:
                bad += 1
                for error in errors:
                    print(f"{line.where}: {printable(error)}", file=sys.stderr)  # one line each, never wrapped
    if traces == 0:
        print("no traces found", file=sys.stderr)
        return EXIT_NO_INPUT
    verdict = "[green]valid[/green]" if not bad else f"[red]{bad} invalid[/red]"
    skipped = len(unread) + len(files) - read
    console.print(f"{traces} trace(s) in {read} file(s): {verdict}" + (f" ({skipped} not read)" if skipped else ""))
    if named_unread:
        return EXIT_NO_INPUT
    return EXIT_INVALID if bad else EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check trace files against the schema and the trace contract",
                       description="Check trace files against the schema and the trace contract; errors are printed "
                       "as file:line: reason. Exit codes: 0 all valid, 1 some trace invalid, 2 a named file is missing "
                       "or no trace was found.")
    p.add_argument("paths", nargs="+", help="trace files (*.jsonl) or directories")


def run(args: argparse.Namespace) -> int:
    return run_validate(args.paths)
