"""The ``orch-otel`` command line. Each command is a module here with
``add_parser(subparsers)`` and ``run(args) -> exit code``. Exit codes are one
scheme for every command (docs/cli.md): 0 ok, 1 invalid data found, 2 usage
error or no input."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .._inputs import printable
from .._version import __version__
from .options import EXIT_USAGE

COMMANDS = ("demo", "validate", "show", "view", "convert", "dataset", "replay", "spool", "schema")
# What the [cli] extra installs (pyproject.toml): a bare `pip install orch-otel` has
# none of these, and the command then says which extra to add instead of a traceback.
CLI_EXTRA_MODULES = frozenset({"rich", "pydantic", "pydantic_core", "jsonschema", "jsonschema_rs", "zstandard"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="orch-otel", description="Replayable orchestration traces from multi-agent apps. "
                                     "Exit codes: 0 ok, 1 invalid data found, 2 usage error or no input.")
    parser.add_argument("--version", action="version", version=f"orch-otel {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except ModuleNotFoundError as exc:
        return _needs_cli_extra(exc)
    try:
        return importlib.import_module(f"{__name__}.{args.command}").run(args)
    except ModuleNotFoundError as exc:
        return _needs_cli_extra(exc)
    except OSError as exc:  # a file the user named cannot be read or written: say which, no traceback
        where = f"{printable(str(exc.filename))}: " if exc.filename else ""
        print(f"orch-otel {args.command}: {where}{exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"orch-otel {args.command}: interrupted", file=sys.stderr)
        return 130



def _needs_cli_extra(exc: ModuleNotFoundError) -> int:
    """One line naming the extra to install, for a module of the [cli] extra; any other missing module is raised as before."""
    missing = (exc.name or "").partition(".")[0]
    if missing not in CLI_EXTRA_MODULES:
        raise exc
    print(f"orch-otel: the command needs the [cli] extra ({missing} is not installed): pip install 'orch-otel[cli]'",
          file=sys.stderr)
    return EXIT_USAGE


__all__ = ["build_parser", "main"]
