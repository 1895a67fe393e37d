"""``orch-otel spool status|replay``: the durable OTLP spool of dead processes."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console
from rich.table import Table

from .. import env
from ..exporters.spool import read_segment, replay, spool_files

EXIT_OK, EXIT_LEFT, EXIT_USAGE = 0, 1, 2


def run(args: argparse.Namespace) -> int:
    directory = args.directory or env.spool_dir()
    if not os.path.isdir(directory):
        print(f"{directory}: no such spool directory", file=sys.stderr)
        return EXIT_USAGE
    if args.spool_command == "status":
        return _status(directory)
    return _replay(directory, args)


def _status(directory) -> int:
    table = Table(title=f"spool {directory}")
    table.add_column("segment")
    table.add_column("spans", justify="right")
    table.add_column("bad lines", justify="right")
    for path in spool_files(directory):
        rows = list(read_segment(path))
        table.add_row(path.name, str(sum(1 for r, _ in rows if r is not None)), str(sum(1 for r, _ in rows if r is None)))
    Console().print(table)
    return EXIT_OK


def _replay(directory, args: argparse.Namespace) -> int:
    from ..configure import otlp_exporter

    protocol = args.protocol or env.otlp_protocol() or "http/protobuf"
    endpoint = args.endpoint
    if endpoint and protocol == "http/protobuf" and not endpoint.rstrip("/").endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    if not endpoint and env.otlp_protocol() is None:
        print("no collector: pass --endpoint or set OTEL_EXPORTER_OTLP_ENDPOINT", file=sys.stderr)
        return EXIT_USAGE
    exporter = otlp_exporter(protocol, endpoint)
    try:
        result = replay(directory, exporter, include_live=args.include_live)
    finally:
        exporter.shutdown()
    for problem in result.bad_lines:
        print(f"skipped unreadable record: {problem}", file=sys.stderr)
    console = Console()
    console.print(f"sent {result.sent} span(s) from {result.files_done} segment(s)")
    if result.skipped_live:
        console.print(f"skipped {result.skipped_live} segment(s) of running processes (use --include-live)")
    if result.files_left:
        print(f"the collector refused a batch; {result.files_left} segment(s) left in {directory}", file=sys.stderr)
        return EXIT_LEFT
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    spool = sub.add_parser("spool", help="inspect or re-send the durable OTLP spool")
    commands = spool.add_subparsers(dest="spool_command", required=True)
    default = "spool directory (default: $ORCH_OTEL_SPOOL_DIR or ./orch-spool)"
    status = commands.add_parser("status", help="list spool segments and their spans")
    status.add_argument("directory", nargs="?", default=None, help=default)
    replay = commands.add_parser("replay", help="re-send a spool left by a dead process, oldest first")
    replay.add_argument("directory", nargs="?", default=None, help=default)
    replay.add_argument("--endpoint", default=None, help="collector endpoint (default: OTEL_EXPORTER_OTLP_* variables)")
    replay.add_argument("--protocol", choices=["http/protobuf", "grpc"], default=None,
                        help="default: OTEL_EXPORTER_OTLP_PROTOCOL or http/protobuf")
    replay.add_argument("--include-live", action="store_true", help="also send segments of processes still running")
