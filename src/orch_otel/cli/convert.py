"""``orch-otel convert INPUT... -o OUT.jsonl``: production span logs -> replayable traces.

Exit codes (docs/cli.md): 0 every record converted; 1 some records or spans
were quarantined (see ``OUT.jsonl.quarantine``); 2 a usage error or no usable
input (a missing file, no log file found, no span could be read): then
nothing is written and an existing OUT stays as it was. Errors go to stderr
as ``file:line: reason`` (or ``file@offset: reason`` for length-prefixed
files), the first ``--max-errors`` of them; the quarantine file has all.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from .._inputs import printable
from ..foreign import SOURCES
from ..offline.local import rare_collections
from ..offline.outputs import EXIT_NO_INPUT, ConvertSummary, Options, quarantine_path
from ..offline.pipeline import convert_inputs
from ..offline.ranges import file_size
from ..offline.readers import FORMATS_READ
from ..offline.records import Problem
from .options import at_least


def run_convert(inputs: list[str], out: str, *, engine: str = "local", address: str | None = None,
                quarantine: str | None = None, max_open_traces: int = 10_000, linger: int = 50_000,
                max_spans_per_trace: int = 100_000, check: bool = False, max_errors: int = 100,
                progress: bool | None = None, jobs: int = 1, source: str = "auto",
                capture_content: bool = False) -> int:
    err = Console(stderr=True, highlight=False)
    shown = 0

    def on_problem(problem: Problem) -> None:
        nonlocal shown
        shown += 1
        if max_errors <= 0 or shown <= max_errors:
            print(printable(f"{problem.where}: {problem.reason}"), file=sys.stderr)  # one line each, never wrapped

    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TimeRemainingColumn(),
                   console=err, transient=True, disable=not (err.is_terminal if progress is None else progress))
    done: dict[Path, int] = {}  # bytes read so far, per file
    tasks: list[TaskID] = []  # the bar's one task, once the files are known

    def on_files(files: list[Path]) -> None:
        total = sum(map(file_size, files))
        tasks.append(bar.add_task(f"converting {len(files)} file(s)", total=total or None))

    def on_bytes(path: Path, n: int) -> None:
        done[path] = n
        if tasks:
            bar.update(tasks[0], completed=sum(done.values()))

    options = Options(max_open_traces=max_open_traces, linger=linger, max_spans_per_trace=max_spans_per_trace, check=check,
                      jobs=jobs, source=source, capture_content=capture_content)
    try:
        with bar, rare_collections():  # the command owns its process; the library leaves a host's GC alone
            summary = convert_inputs(inputs, out, engine=engine, address=address, options=options, quarantine=quarantine,
                                     on_problem=on_problem, on_bytes=on_bytes, on_files=on_files)
    except (ImportError, RuntimeError, ValueError, OSError) as exc:  # setup errors (no Ray, bad address, unwritable OUT)
        print(printable(f"orch-otel convert: {exc}"), file=sys.stderr)
        return EXIT_NO_INPUT
    if summary.exit_code == EXIT_NO_INPUT:
        found = (f"no log file found in {', '.join(inputs)} (convert reads {FORMATS_READ})" if not summary.files
                 else f"no span could be read from {', '.join(inputs)}")
        print(printable(f"orch-otel convert: {found}; nothing written ({out} is left as it was)"), file=sys.stderr)
        return EXIT_NO_INPUT
    if max_errors > 0 and shown > max_errors:
        print(f"... {shown - max_errors} more problem(s); all are in the quarantine file", file=sys.stderr)
    for warning in summary.warnings[:max_errors if max_errors > 0 else None]:
        print(f"warning: {printable(warning)}", file=sys.stderr)
    _print_summary(Console(highlight=False), summary, out, quarantine)
    return summary.exit_code


def _print_summary(console: Console, s: ConvertSummary, out: str, quarantine: str | None) -> None:
    q = quarantine or str(quarantine_path(Path(out)))
    by_source = ", ".join(f"{name} {n}" for name, n in sorted(s.sources.items()))
    console.print(
        f"{s.traces} trace(s) ({s.incomplete} incomplete) from {s.spans} span(s) in {s.files} file(s) -> {out}\n"
        f"duplicates dropped: {s.duplicates}; quarantined: {s.quarantined_spans} span(s) "
        f"(late {s.late}, conflicting {s.conflicts}, in {s.failed_traces} unconvertible trace(s)) "
        f"and {s.bad_records} bad record(s)" + (f" -> {q}" if s.quarantined_spans or s.bad_records else "")
        + (f"\ntraces by source: {by_source}" if by_source else "")
        + (f"\nagent or workflow definitions (create_agent / workflow.build only, not runs) not written: {s.definitions} trace(s), "
           f"{s.definition_spans} span(s)" if s.definitions else "")
        + (f"\nnot orchestration (no orch-otel span: HTTP requests, database calls, ...) not written: "
           f"{s.not_orchestration} trace(s), {s.not_orchestration_spans} span(s)" if s.not_orchestration else ""),
        soft_wrap=True, markup=False,
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="convert OTLP log files, span dumps or a spool into replayable traces",
                       description="Convert OTLP JSON lines, length-prefixed OTLP protobuf (zstd or not), span dumps "
                       "and spool segments (*.spool) into replayable traces. Outputs are replaced only when the run "
                       "succeeds. Exit codes: 0 ok, 1 some records quarantined, 2 usage error or no usable input.")
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="files, or directories searched for log files")
    p.add_argument("-o", "--output", required=True, metavar="OUT.jsonl", help="trace file to write (content store beside it)")
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local streaming (default) or Ray tasks (a cluster: --address)")
    p.add_argument("--address", default=None,
                   help="Ray cluster to join: auto, HOST:6379 or ray://HOST:10001 (default: start a local Ray)")
    p.add_argument("--quarantine", default=None, help="where bad records go (default: OUT.jsonl.quarantine)")
    p.add_argument("--max-open-traces", type=at_least(1), default=10_000, metavar="N",
                   help="local engine: traces held open at once (default 10000)")
    p.add_argument("--linger", type=at_least(0), default=50_000, metavar="N",
                   help="local engine: spans to wait after a trace's root before writing it (default 50000)")
    p.add_argument("--max-spans-per-trace", type=at_least(1), default=100_000, metavar="N",
                   help="local engine: spans held per trace (default 100000)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="local engine: convert in N processes, each keeping its share of the traces (0: one per core; "
                   "default 1). Faster with spare cores; problems are printed at the end")
    p.add_argument("--source", choices=SOURCES, default="auto",
                   help="the instrumentation that wrote the spans (default auto: detected per trace by its scopes)")
    p.add_argument("--capture-content", action="store_true",
                   help="keep the message and tool content a foreign log carries, redacted (default: dropped)")
    p.add_argument("--check", action="store_true", help="validate each trace (schema + contract); invalid ones are quarantined")
    p.add_argument("--max-errors", type=at_least(0), default=100, metavar="N",
                   help="problems printed to stderr (0: all; default 100)")


def run(args: argparse.Namespace) -> int:
    return run_convert(args.inputs, args.output, engine=args.engine, address=args.address, quarantine=args.quarantine,
                       max_open_traces=args.max_open_traces, linger=args.linger,
                       max_spans_per_trace=args.max_spans_per_trace, check=args.check, max_errors=args.max_errors,
                       jobs=args.jobs, source=args.source, capture_content=args.capture_content)
