"""Checks a trace against orch-otel's JSON Schema and the trace contract
(docs/trace-format.md): unique ids, edges between existing events, actors and
targets named, stop reasons given, tool calls paired with results, one
instance per agent invocation.

Two validators share the schema check. ``jsonschema-rs`` (compiled) accepts a
valid trace in about 25 µs, some 200x faster than ``jsonschema``; a trace it
rejects is checked again by ``jsonschema``, whose messages name each field at
fault. ``tests/test_validation.py`` checks that the two agree."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator

from ._jsonvalues import MAX_NESTING, too_deep
from .models import json_schema
from .vocabulary import DecisionKind, EventKind


@lru_cache(maxsize=1)
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json_schema())


@lru_cache(maxsize=1)
def _fast_validator() -> jsonschema_rs.Draft202012Validator:
    return jsonschema_rs.Draft202012Validator(json_schema())


def _where(path: Any) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def schema_errors(trace: dict[str, Any]) -> list[str]:
    try:
        if _fast_validator().is_valid(trace):
            return []
    except ValueError:  # a value JSON has no type for (bytes, non-string keys): the full check reports it
        pass
    try:
        errors = sorted(_validator().iter_errors(trace), key=lambda e: list(map(str, e.absolute_path)))
        return [f"{_where(e.absolute_path)}: {e.message}" for e in errors]
    except RecursionError:  # jsonschema recurses into the value to describe it: say where it is too deep instead
        return [too_deep(trace) or f"nested more than {MAX_NESTING} levels deep"]


_NEEDS = {
    EventKind.SPAWN.value: ("to",),
    EventKind.MESSAGE.value: ("from", "to"),
    EventKind.RETURN.value: ("from", "to"),
    EventKind.TOOL_CALL.value: ("tool",),
    EventKind.TOOL_RESULT.value: ("tool",),
}


# Plain strings: an enum's .value is a descriptor call, and this loop runs per event.
_DECISION_EVENT = EventKind.ORCHESTRATOR_DECISION.value
_TOOL_CALL, _TOOL_RESULT = EventKind.TOOL_CALL.value, EventKind.TOOL_RESULT.value
_STOP, _DELEGATE = DecisionKind.STOP.value, DecisionKind.DELEGATE.value


_INSTANCE_OF_TO = frozenset({EventKind.SPAWN.value, EventKind.RETURN.value})  # their to_instance is an instance of "to"


def _name_of(instance: str) -> str:
    return instance.rsplit("#", 1)[0]


def contract_errors(trace: dict[str, Any]) -> list[str]:
    """Contract rules the schema cannot express. Assumes the schema passed."""
    events = trace["events"]
    errors: list[str] = []
    ids = Counter(e["id"] for e in events)
    if len(ids) < len(events):
        errors += [f"events: id {i!r} is used {n} times" for i, n in ids.items() if n > 1]
    for k, edge in enumerate(trace["edges"]):
        src, dst = edge["src"], edge["dst"]
        if src not in ids:
            errors.append(f"edges[{k}].src: no event has id {src!r}")
        if dst not in ids:
            errors.append(f"edges[{k}].dst: no event has id {dst!r}")
    stops = 0
    scope_of: dict[str, str] = {}  # instance -> its agent_span_id
    calls: Counter[str] = Counter()
    results: Counter[str] = Counter()
    for k, event in enumerate(events):
        kind = event["type"]
        for f in _NEEDS.get(kind, ()):
            if not event.get(f):
                errors.append(f"events[{k}].{f}: a {kind} event needs {f!r}")
        decision = event.get("decision")
        if decision is None:
            if kind == _DECISION_EVENT:
                errors.append(f"events[{k}].decision: an orchestrator_decision needs a decision kind")
        elif decision == _STOP:
            stops += 1
            if not event.get("reason"):
                errors.append(f"events[{k}].reason: a stop decision needs a non-empty reason")
        elif decision == _DELEGATE and not event.get("to"):
            errors.append(f"events[{k}].to: a delegate decision needs its target in 'to'")
        instance = event.get("instance")
        if instance is not None:
            scope = event.get("agent_span_id")
            if scope is not None and scope_of.setdefault(instance, scope) != scope:
                errors.append(f"events[{k}].instance: {instance!r} is also the instance of span {scope_of[instance]!r}, "
                              f"not {scope!r} (one instance per agent_span_id)")
        if "to_instance" in event and kind in _INSTANCE_OF_TO and event.get("to") \
                and _name_of(event["to_instance"]) != event["to"]:
            errors.append(f"events[{k}].to_instance: {event['to_instance']!r} is not an instance of {event.get('to')!r}")
        if "source_instances" in event and len(event["source_instances"]) != len(event.get("sources") or ()):
            errors.append(f"events[{k}].source_instances: {len(event['source_instances'])} instance(s) for "
                          f"{len(event.get('sources') or ())} source(s) (one per source)")
        if kind == _TOOL_CALL:
            calls[event.get("call_id") or event["span_id"]] += 1
        elif kind == _TOOL_RESULT:
            results[event.get("call_id") or event["span_id"]] += 1
    if stops == 0:
        errors.append("events: no stop decision (every run records why it stopped)")
    for call_id in calls - results:
        errors.append(f"events: tool call {call_id!r} has no tool_result")
    n_calls = sum(calls.values())
    if trace["costs"].get("tool_calls", n_calls) != n_calls:
        errors.append(f"costs.tool_calls: is {trace['costs']['tool_calls']} but there are {n_calls} tool_call events")
    return errors


def trace_errors(trace: dict[str, Any]) -> list[str]:
    errors = schema_errors(trace)
    return errors or contract_errors(trace)
