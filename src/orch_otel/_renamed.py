"""Names renamed in this release: keyword arguments (so that a helper and the
recorder method behind it use the same word, the trace format's), which warn
once per name, and the few functions and classes that moved, which warn on each
use. The old names still work for one release, with a ``DeprecationWarning``.

A warnings filter that turns the warning into an error (``-W error``) does not
make the call fail: the app's code runs on and the deprecation is logged
instead (names only), unless strict mode asks orch-otel to raise.
"""

from __future__ import annotations

import logging
import sys
import threading
import warnings
from types import FrameType
from typing import Any

from ._faults import is_strict

_log = logging.getLogger("orch_otel")
_warned: set[tuple[str, str]] = set()
_lock = threading.Lock()


def renamed_keyword(where: str, given: dict[str, Any], old: str, new: str, value: Any) -> Any:
    """The value of keyword ``new`` of ``where()``, which may have come under its
    old name ``old`` in ``given`` (the call's other keywords). The new name wins
    when both are given. Any other keyword in ``given`` is a ``TypeError``, as
    for an ordinary signature."""
    unknown = sorted(set(given) - {old})
    if unknown:
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")
    if old not in given:
        return value
    _warn_once(where, old, new)
    return given[old] if value is None else value


def _warn_once(where: str, old: str, new: str) -> None:
    with _lock:
        if (where, old) in _warned:
            return
        _warned.add((where, old))
    deprecated(f"{where}({old}=) is deprecated and will be removed in the next release; use {new}=")


def deprecated(text: str) -> None:
    """Warn ``text`` (a ``DeprecationWarning``) at the first caller outside
    orch-otel; a filter that makes it an error logs it instead (names only),
    unless strict mode asks orch-otel to raise."""
    try:
        warnings.warn(text, DeprecationWarning, stacklevel=_callers_level())
    except Warning:  # a filter made it an error: the app's call still goes on
        if is_strict():
            raise
        _log.warning("orch-otel: %s", text)


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside orch-otel: the line to change."""
    frame: FrameType | None = sys._getframe(2)  # the frame calling warnings.warn's caller
    level = 2
    while frame is not None and _is_ours(frame.f_globals.get("__name__", "")):
        frame, level = frame.f_back, level + 1
    return level


def _is_ours(module: str) -> bool:
    return module == "orch_otel" or module.startswith("orch_otel.")
