"""``orch-otel validate``: per-file, per-line errors. Exit codes: 0 all valid,
1 some trace invalid, 2 a named file is missing or no trace was found."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from .._validation import trace_errors
from ..tracefiles import SPAN_LOG_LINE, read_lines, trace_files
from .options import EXIT_INVALID, EXIT_OK
from .options import EXIT_USAGE as EXIT_NO_INPUT


def run_validate(paths: list[str]) -> int:
    console = Console(highlight=False)
    files = trace_files(paths)
    missing = [p for p in files if not p.is_file()]
    for path in missing:
        print(f"{path}: no such file", file=sys.stderr)
    traces = bad = 0
    for path in (p for p in files if p.is_file()):
        for line in read_lines(path):
            traces += 1
            if line.error == SPAN_LOG_LINE:  # a whole span log given by mistake: one line for the file, not per span
                bad += 1
                print(f"{path}:{line.lineno}: {line.error}; the rest of this file is not read", file=sys.stderr)
                break
            errors = [line.error] if line.error else trace_errors(line.trace or {})
            if errors:
                bad += 1
                for error in errors:
                    print(f"{path}:{line.lineno}: {error}", file=sys.stderr)  # one line each, never wrapped
    if not files or traces == 0:
        print("no traces found", file=sys.stderr)
        return EXIT_NO_INPUT
    verdict = "[green]valid[/green]" if not bad else f"[red]{bad} invalid[/red]"
    console.print(f"{traces} trace(s) in {len(files) - len(missing)} file(s): {verdict}"
                  + (f" ({len(missing)} missing)" if missing else ""))
    if missing:
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
