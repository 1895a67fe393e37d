"""Shared pieces of the commands: option types and the exit codes (docs/cli.md)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2  # ok; invalid data found; usage error or no input


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= ``minimum`` (errors name the option, via argparse)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value

    parse.__name__ = f"number >= {minimum}"
    return parse
