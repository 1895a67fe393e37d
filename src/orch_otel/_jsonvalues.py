"""JSON values read from input files, and what orjson cannot write back.

orjson refuses integers outside ``[-2**63, 2**64 - 1]`` and nesting deeper
than 254 levels, with a ``TypeError``. Input can hold both (an OTLP
``intValue`` of any width, a trace line nested 1,000 levels deep), so the batch
commands check for them: :func:`unwritable` says where, :func:`json_bytes`
writes such a value anyway (for quarantine and reject records), and
:func:`too_deep` bounds nesting. The walks are iterative: deep input never
raises ``RecursionError``.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

INT64_MIN, INT64_MAX, UINT64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
MAX_NESTING = 100  # levels a trace or record may nest: real ones use under 10; orjson writes up to 254
_TOO_DEEP = "(nested too deep to write)"
_PATH_PARTS = 6  # path components shown in a message (a deep path is cut short)


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list, tuple)) else type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _path(parts: list[Any]) -> str:
    shown = parts[:_PATH_PARTS]
    out = ""
    for part in shown:
        out += f"[{part}]" if type(part) is int else (f".{part}" if out else str(part))
    if len(parts) > len(shown):
        out += f"... ({len(parts)} levels)"
    return out or "(top level)"


def _walk(value: Any, limit: int, ints: bool) -> str | None:
    """The first place in ``value`` nested more than ``limit`` levels deep (or,
    with ``ints``, holding an integer orjson cannot write), as ``path: why``."""
    stack: list[tuple[Any, list[Any]]] = [(value, [])]
    while stack:
        item, parts = stack.pop()
        t = type(item)
        if t is int:
            if ints and not INT64_MIN <= item <= UINT64_MAX:
                return f"{_path(parts)}: {_short(item)} is outside the 64-bit integer range"
        elif t is dict or t is list or t is tuple or isinstance(item, (dict, list, tuple)):
            if len(parts) >= limit:
                return f"{_path(parts)}: nested more than {limit} levels deep"
            children = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((child, [*parts, key]) for key, child in reversed(list(children)))
    return None


def too_deep(value: Any, limit: int = MAX_NESTING) -> str | None:
    """``path: nested more than LIMIT levels deep`` for the first such place in ``value``, else None."""
    return _walk(value, limit, ints=False)


def unwritable(value: Any) -> str | None:
    """Where orjson would fail on ``value`` (an integer beyond 64 bits,
    nesting too deep), as ``path: why``; None when it can be written."""
    return _walk(value, 250, ints=True)


def json_bytes(value: Any) -> bytes:
    """``value`` as JSON (no newline), for records made of input. Never
    raises: what orjson cannot write is written as text instead (integers
    beyond 64 bits as decimal strings, too-deep parts as their JSON text)."""
    try:
        return orjson.dumps(value, default=_fallback)
    except TypeError:
        pass
    try:
        return orjson.dumps(_writable(value), default=_fallback)
    except RecursionError:  # called deep in a stack already: give up on this value, not on the record
        return orjson.dumps(_TOO_DEEP)


def _fallback(value: Any) -> Any:
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return repr(value)


def _writable(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` orjson can write (recursion bounded by the depth cut)."""
    if type(value) is int:
        return value if INT64_MIN <= value <= UINT64_MAX else str(value)
    if isinstance(value, (dict, list, tuple)):
        if depth >= MAX_NESTING:
            return _deep_text(value)
        if isinstance(value, dict):
            return {str(k): _writable(v, depth + 1) for k, v in value.items()}
        return [_writable(v, depth + 1) for v in value]
    return value


def _deep_text(value: Any) -> str:
    import json

    try:
        return json.dumps(value, default=_fallback)
    except (RecursionError, ValueError, TypeError):
        return _TOO_DEEP
