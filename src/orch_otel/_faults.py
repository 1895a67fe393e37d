"""Logging orch-otel's own faults without content.

A traceback is content: exception messages quote inputs, chained exceptions
carry the app's own (a LangGraph ``ParentCommand`` repr holds whole message
lists), and frames can show values. So a fault is logged as its type and the
place it was raised, never its message, chain or traceback.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from . import _env as env

P = ParamSpec("P")
R = TypeVar("R")
_log = logging.getLogger("orch_otel")


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


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


_strict = env.strict()


def set_strict(on: bool) -> bool:
    """Make guarded calls raise instead of logging (for tests); returns the previous setting.
    ``ORCH_OTEL_STRICT=1`` turns it on at import."""
    global _strict
    previous, _strict = _strict, bool(on)
    return previous


def is_strict() -> bool:
    return _strict


def guarded(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Wrap a public entry point so that a wrong argument or an internal fault
    never reaches the app: it is logged once per entry point and kind of fault,
    and the call does nothing (returns None), as the OpenTelemetry API does.
    In strict mode it raises."""
    where = f"{fn.__qualname__}()"

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            if _strict:
                raise
            key = (where, type(error).__qualname__)
            with _warned_lock:
                first = key not in _warned
                _warned.add(key)
            if first:
                log_fault(_log, logging.WARNING, "orch-otel: %s failed; not recorded (logged once; "
                          "ORCH_OTEL_STRICT=1 raises instead)", where, error=error)
            return None

    return wrapper
