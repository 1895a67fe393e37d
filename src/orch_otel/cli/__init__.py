"""The ``orch-otel`` command line. Each command is a module here with
``add_parser(subparsers)`` and ``run(args) -> exit code``. Exit codes are one
scheme for every command (docs/cli.md): 0 ok, 1 invalid data found, 2 usage
error or no input."""

from __future__ import annotations

import argparse
import difflib
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
        parser = build_parser()
        argv = list(sys.argv[1:] if argv is None else argv)
        _refuse_unknown_options(parser, argv)
        args = parser.parse_args(argv)
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



def _refuse_unknown_options(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A misspelt option is named, with the command's own usage and the nearest option, before argparse
    would report a required option as missing (``--veiw``) or print the top-level usage (``--choose-eech``)."""
    command, rest = parser, argv
    while True:  # down to the innermost command named (``spool replay``)
        commands = next((a.choices for a in command._actions if isinstance(a, argparse._SubParsersAction)), {})
        at = next((i for i, word in enumerate(rest) if word in commands), None)
        if at is None:
            break
        command, rest = commands[rest[at]], rest[at + 1:]
    if command is parser:
        return
    known = list(command._option_string_actions)
    for word in rest:
        if word == "--":
            return
        name = word.partition("=")[0]
        if not name.startswith("--") or name in known or sum(k.startswith(name) for k in known) == 1:
            continue  # a value, a known option, or a unique abbreviation (argparse accepts those)
        nearest = difflib.get_close_matches(name, known, n=1)
        command.error(f"unknown option {name}" + (f" (did you mean {nearest[0]}?)" if nearest else ""))


def _needs_cli_extra(exc: ModuleNotFoundError) -> int:
    """One line naming the extra to install, for a module of the [cli] extra; any other missing module is raised as before."""
    missing = (exc.name or "").partition(".")[0]
    if missing not in CLI_EXTRA_MODULES:
        raise exc
    print(f"orch-otel: the command needs the [cli] extra ({missing} is not installed): pip install 'orch-otel[cli]'",
          file=sys.stderr)
    return EXIT_USAGE


__all__ = ["build_parser", "main"]
