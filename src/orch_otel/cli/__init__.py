"""The ``orch-otel`` command line. Each command is a module here with
``add_parser(subparsers)`` and ``run(args) -> exit code``."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from .._version import __version__

COMMANDS = ("demo", "validate", "show", "convert", "dataset", "spool", "schema")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orch-otel", description="Replayable orchestration traces from multi-agent apps.")
    parser.add_argument("--version", action="version", version=f"orch-otel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return importlib.import_module(f"{__name__}.{args.command}").run(args)


__all__ = ["build_parser", "main"]
