"""``orch-otel spool status|replay``: the durable OTLP spool of dead processes.

Exit codes: 0 ok (all sent); 1 invalid data: unreadable lines or spans set
aside because the collector refused them (status: some are there; replay: some
were found, the rest was sent), or the collector stopped taking spans (replay:
the rest stays in the spool); 2 no such spool directory, or no collector (none
configured, or nothing listening).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from urllib.parse import urlsplit

from rich.console import Console
from rich.table import Table

from .. import _env as env
from ..exporters.rejections import REJECTED_FILE, UNREADABLE_FILE, summarize
from ..exporters.spool import acked_in, read_segment, spool_files
from ..exporters.spool_replay import replay
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE

EXIT_LEFT = EXIT_INVALID


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
    bad = 0
    for path in spool_files(directory):
        rows = list(read_segment(path))
        acked = acked_in(path)  # the collector has these
        bad += sum(1 for r, _ in rows if r is None)
        table.add_row(path.name, str(sum(1 for r, _ in rows if r is not None and r.span_id not in acked)),
                      str(sum(1 for r, _ in rows if r is None)))
    Console().print(table)
    aside = summarize(directory)  # plain lines (not wrapped): paths and reasons stay greppable
    if aside.rejected:
        print(f"set aside: {aside.rejected} span(s) the collector refused, in {os.path.join(directory, REJECTED_FILE)}")
        for reason, count in sorted((aside.reasons or {}).items(), key=lambda item: -item[1]):
            print(f"  {count} x {reason}")
    if aside.unreadable:
        print(f"set aside: {aside.unreadable} unreadable line(s) of replayed segments, in "
              f"{os.path.join(directory, UNREADABLE_FILE)}")
    return EXIT_INVALID if bad or aside.rejected or aside.unreadable else EXIT_OK


def _collector_address(protocol: str, endpoint: str | None) -> tuple[str, str, int]:
    """(URL, host, port) the exporter will send to: ``endpoint``, else the
    OTEL_EXPORTER_OTLP_* variables, else the OTLP default for ``protocol``."""
    url = (endpoint or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
           or ("http://localhost:4317" if protocol == "grpc" else "http://localhost:4318"))
    parts = urlsplit(url if "://" in url else f"http://{url}")
    default = 443 if parts.scheme == "https" else (4317 if protocol == "grpc" else 80)
    return url, parts.hostname or "localhost", parts.port or default  # .port raises ValueError for a bad port


def _no_collector(host: str, port: int) -> str | None:
    """Why nothing can be sent to ``host:port`` (connection refused, unknown host...), or None."""
    try:
        with socket.create_connection((host, port), timeout=5):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def _replay(directory, args: argparse.Namespace) -> int:
    from .._configure import otlp_exporter

    protocol = args.protocol or env.otlp_protocol() or "http/protobuf"
    endpoint = args.endpoint
    if endpoint and protocol == "http/protobuf" and not endpoint.rstrip("/").endswith("/v1/traces"):
        endpoint = endpoint.rstrip("/") + "/v1/traces"
    if not spool_files(directory):
        Console().print(f"no segments in {directory}: nothing to send")
        return EXIT_OK
    if not endpoint and env.otlp_protocol() is None:
        print("no collector: pass --endpoint or set OTEL_EXPORTER_OTLP_ENDPOINT", file=sys.stderr)
        return EXIT_USAGE
    try:
        url, host, port = _collector_address(protocol, endpoint)
    except ValueError as exc:
        print(f"no collector: the endpoint {endpoint or 'in OTEL_EXPORTER_OTLP_*'} is not a URL ({exc})", file=sys.stderr)
        return EXIT_USAGE
    why = _no_collector(host, port)
    if why is not None:
        left = len(spool_files(directory))
        print(f"no collector listening at {url} ({why}); nothing sent, {left} segment(s) left in {directory}",
              file=sys.stderr)
        return EXIT_USAGE
    exporter = otlp_exporter(protocol, endpoint)
    try:
        result = replay(directory, exporter, include_live=args.include_live)
    finally:
        exporter.shutdown()
    for problem in result.bad_lines:
        print(f"unreadable record: {problem}", file=sys.stderr)
    console = Console()
    console.print(f"sent {result.sent} span(s) from {result.files_done} segment(s)")
    if result.skipped_live:
        console.print(f"skipped {result.skipped_live} segment(s) of running processes")
    if result.quarantined:
        print(f"moved {result.quarantined} unreadable line(s) to {os.path.join(directory, UNREADABLE_FILE)}",
              file=sys.stderr)
    refused = sum(result.set_aside.values())
    if refused:
        print(f"set aside {refused} span(s) the collector refused, in {os.path.join(directory, REJECTED_FILE)}:",
              file=sys.stderr)
        for reason, count in sorted(result.set_aside.items(), key=lambda item: -item[1]):
            print(f"  {count} x {reason}", file=sys.stderr)
    if result.files_left:
        print(f"the collector stopped taking spans; {result.files_left} segment(s) left in {directory}", file=sys.stderr)
        return EXIT_LEFT
    return EXIT_INVALID if result.bad_lines or refused else EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    spool = sub.add_parser("spool", help="inspect or re-send the durable OTLP spool",
                           description="Inspect (status) or re-send (replay) the durable OTLP spool. Exit codes: 0 ok, "
                           "1 unreadable lines or spans the collector refused (set aside in the spool directory), or "
                           "the collector stopped taking spans (replay), 2 no such spool directory or no collector.")
    commands = spool.add_subparsers(dest="spool_command", required=True)
    default = "spool directory (default: $ORCH_OTEL_SPOOL_DIR or ./orch-spool)"
    status = commands.add_parser("status", help="list spool segments and their spans")
    status.add_argument("directory", nargs="?", default=None, help=default)
    replay = commands.add_parser("replay", help="re-send a spool left by a dead process, oldest first")
    replay.add_argument("directory", nargs="?", default=None, help=default)
    replay.add_argument("--endpoint", default=None, help="collector endpoint (default: OTEL_EXPORTER_OTLP_* variables)")
    replay.add_argument("--protocol", choices=["http/protobuf", "grpc"], default=None,
                        help="default: OTEL_EXPORTER_OTLP_PROTOCOL or http/protobuf")
    replay.add_argument("--include-live", action="store_true", help="also send segments whose writer's pid belongs to a running process "
                        "(a reused pid); never those of a live writer holding its lock")
