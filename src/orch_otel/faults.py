"""Logging orch-otel's own faults without content.

A traceback is content: exception messages quote inputs, chained exceptions
carry the app's own (a LangGraph ``ParentCommand`` repr holds whole message
lists), and frames can show values. So a fault is logged as its type and the
place it was raised, never its message, chain or traceback.
"""

from __future__ import annotations

import logging
import os
import sys


def describe(error: BaseException | None = None) -> str:
    """``TypeName at file.py:line`` of ``error`` (default: the one being handled)."""
    if error is None:
        error = sys.exc_info()[1]
    if error is None:
        return "unknown error"
    tb = error.__traceback__
    where = ""
    while tb is not None:  # the innermost frame is where it was raised
        if tb.tb_next is None:
            where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return f"{type(error).__qualname__}{where}"


def log_fault(log: logging.Logger, level: int, message: str, *args: object, error: BaseException | None = None) -> None:
    """Log ``message % args`` with a content-free description of ``error`` (default: the one being handled)."""
    if log.isEnabledFor(level):
        log.log(level, message + " (%s)", *args, describe(error))
