"""The ``orch-otel`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orch-otel", description="Replayable orchestration traces from multi-agent apps.")
    parser.add_argument("--version", action="version", version=f"orch-otel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="run the bundled offline multi-agent example and write its trace")
    demo.add_argument("--trace-dir", default=None, help="where to write traces (default: $ORCH_OTEL_TRACE_DIR or ./orch-traces)")
    demo.add_argument("--capture-content", action="store_true", help="also keep message and tool content")

    validate = sub.add_parser("validate", help="check trace files against the schema and the trace contract")
    validate.add_argument("paths", nargs="+", help="trace files (*.jsonl) or directories")

    show = sub.add_parser("show", help="print a trace as a tree")
    show.add_argument("path", help="a trace file or directory")
    show.add_argument("--trace-id", default=None, help="which trace (default: the first)")

    sub.add_parser("schema", help="print orch-otel's JSON Schema for traces")

    spool = sub.add_parser("spool", help="inspect or re-send the durable OTLP spool")
    spool_sub = spool.add_subparsers(dest="spool_command", required=True)
    status = spool_sub.add_parser("status", help="list spool segments and their spans")
    status.add_argument("directory", nargs="?", default=None, help="spool directory (default: $ORCH_OTEL_SPOOL_DIR or ./orch-spool)")
    replay = spool_sub.add_parser("replay", help="re-send a spool left by a dead process, oldest first")
    replay.add_argument("directory", nargs="?", default=None, help="spool directory (default: $ORCH_OTEL_SPOOL_DIR or ./orch-spool)")
    replay.add_argument("--endpoint", default=None, help="collector endpoint (default: OTEL_EXPORTER_OTLP_* variables)")
    replay.add_argument("--protocol", choices=["http/protobuf", "grpc"], default=None, help="default: OTEL_EXPORTER_OTLP_PROTOCOL or http/protobuf")
    replay.add_argument("--include-live", action="store_true", help="also send segments of processes still running")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(args.trace_dir, capture_content=args.capture_content)
    if args.command == "validate":
        from .validate import run_validate

        return run_validate(args.paths)
    if args.command == "show":
        from .show import run_show

        return run_show(args.path, args.trace_id)
    if args.command == "spool":
        from .spool import run_spool

        return run_spool(args)
    if args.command == "schema":
        import json

        from ..models import json_schema

        sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
        return 0
    return 2  # unreachable: argparse requires a command
