"""The field types a trace line needs for the dataset views to read it.

An event field that is present (and not null) must have the type the trace
models give it (:class:`orch_otel.models.Event`: the table below is derived
from the model, so the two stay in step), or, for the converter's fields the
model leaves open but the views read (``input_ref``, ``input_tokens``, ...),
the type the converter writes. Nothing may nest more than
:data:`~orch_otel._jsonvalues.MAX_NESTING` levels. Enum values and the trace
contract are ``--validate``'s business; these checks are about types only.
They cost one pass over each event's fields (roughly a tenth of what parsing
and building rows cost); a value they do not cover that still cannot be
written (captured content nested too deep) is caught when its rows are
written, and rejects its trace alone.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, get_args, get_origin

from .._jsonvalues import MAX_NESTING
from ..models import Costs, Event

_WANTS = {
    "str": "a string",
    "bool": "true or false",
    "number": "a number",
    "count": "a whole number >= 0",
    "strs": "a list of strings",
}

_EXTRA_FIELDS = {  # written by the converter, read by the views, not typed by the model
    "input_ref": "str", "tools_ref": "str", "tokens_ref": "str", "model": "str", "provider": "str", "message_type": "str",
    "input_tokens": "count", "output_tokens": "count", "fanout_size": "count", "fanout_index": "count",
    "duration_s": "number", "implied": "bool", "recipients": "strs", "sources": "strs",
}


def _kind_of(annotation: Any) -> str | None:
    """The check for a model field's annotation (optional or not), or None for a type not checked here."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return None
        annotation = args[0]
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) is Literal:
        return "str" if all(isinstance(v, str) for v in get_args(annotation)) else None
    if get_origin(annotation) is list:
        return "strs" if _kind_of(get_args(annotation)[0]) == "str" else None
    return {str: "str", bool: "bool", float: "number", int: "count"}.get(annotation)


def _model_kinds(model: Any) -> dict[str, str]:
    kinds = {}
    for name, info in model.model_fields.items():
        kind = _kind_of(info.annotation)
        if kind is not None:
            kinds[info.alias or name] = kind
    return kinds


EVENT_FIELDS: dict[str, str] = {**_EXTRA_FIELDS, **_model_kinds(Event)}
COST_FIELDS: dict[str, str] = _model_kinds(Costs)


_TYPES = {"str": (str,), "bool": (bool,), "number": (float, int), "count": (int,), "strs": (list,)}
_EVENT_TYPES = {key: _TYPES[kind] for key, kind in EVENT_FIELDS.items()}  # the per-event loop's fast lookup
_NOT_STR = frozenset(key for key, kind in EVENT_FIELDS.items() if kind != "str")


def _fits(kind: str, value: Any) -> bool:
    t = type(value)
    if t not in _TYPES[kind]:
        return False
    if kind == "count":
        return value >= 0
    return kind != "strs" or all(type(v) is str for v in value)


def _nests_deeper(value: Any, limit: int) -> bool:
    """True when ``value`` (a dict or list) holds containers more than ``limit`` levels down."""
    stack = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if depth >= limit:
            return True
        for child in (item.values() if type(item) is dict else item):
            t = type(child)
            if t is dict or t is list:
                push((child, depth + 1))
    return False


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else f"a {'list' if type(value) is list else 'JSON object'}"
    return text if len(text) <= 60 else text[:57] + "..."


def _too_deep(key: str, value: Any, depth: int) -> str | None:
    """``value`` sits ``depth`` levels down in the trace."""
    if not _nests_deeper(value, MAX_NESTING - depth):
        return None
    return f"{key}: nested more than {MAX_NESTING} levels deep (counted from the trace)"


def event_error(event: dict[str, Any]) -> str | None:
    """``field: what is wrong`` for the first field of ``event`` that is not what the views read, else None."""
    types_of = _EVENT_TYPES.get
    for key, value in event.items():
        t = type(value)
        if t is str and key not in _NOT_STR:  # most values: a string where a string belongs
            continue
        want = types_of(key)
        if want is not None and value is not None:
            if t not in want or (t is int and value < 0 and EVENT_FIELDS[key] == "count"):
                return f"{key}: expected {_WANTS[EVENT_FIELDS[key]]}, got {_short(value)}"
            if t is list:
                for i, item in enumerate(value):
                    if type(item) is not str:
                        return f"{key}[{i}]: expected a string, got {_short(item)}"
                continue
        if (t is dict or t is list) and _nests_deeper(value, MAX_NESTING - 2):  # trace -> events -> this value
            return f"{key}: nested more than {MAX_NESTING} levels deep (counted from the trace)"
    return None


_FLAT = frozenset({"events", "edges", "rewards", "metrics", "costs"})


def trace_error(trace: dict[str, Any]) -> str | None:
    """The same for the trace's own fields other than ``events`` (the caller checks those one by one)."""
    for key in ("system", "topology"):
        if trace.get(key) is not None and type(trace[key]) is not str:
            return f"{key}: expected a string, got {_short(trace[key])}"
    for key in ("rewards", "metrics"):
        values = trace.get(key)
        if values is None:
            continue
        if type(values) is not dict:
            return f"{key}: expected a JSON object, got {_short(values)}"
        for name, value in values.items():
            if type(value) not in (int, float, bool):
                return f"{key}.{name}: expected a number, got {_short(value)}"
    costs = trace.get("costs")
    if costs is not None:
        if type(costs) is not dict:
            return f"costs: expected a JSON object, got {_short(costs)}"
        for name, kind in COST_FIELDS.items():
            if costs.get(name) is not None and not _fits(kind, costs[name]):
                return f"costs.{name}: expected {_WANTS[kind]}, got {_short(costs[name])}"
    for key, value in trace.items():  # other fields (edges: flat objects, checked when written)
        if key not in _FLAT and (type(value) is dict or type(value) is list):
            error = _too_deep(key, value, 0)
            if error is not None:
                return error
    return None
