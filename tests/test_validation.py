"""The schema check's two validators: jsonschema-rs accepts, jsonschema explains.
The fast path is only sound if both give the same verdict on every trace."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orch_otel import demo, testing
from orch_otel._validation import _fast_validator, _validator, contract_errors, schema_errors, trace_errors


@pytest.fixture(scope="module")
def demo_trace() -> dict:
    with testing.capture() as captured:
        asyncio.run(demo.run())
    (trace,) = captured.traces()
    return trace


def _paths(value, prefix=()):
    """Every (container path, key) in a JSON value."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield prefix, key
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield prefix, i
            yield from _paths(child, (*prefix, i))


def _at(value, path):
    for part in path:
        value = value[part]
    return value


REPLACEMENTS = st.sampled_from([None, -1, -0.5, 0, 2.5, "", "x", "nope", True, [], {}, ["a"], {"k": 1}])
MUTATION = st.tuples(st.sampled_from(["replace", "delete", "add"]), st.integers(min_value=0), REPLACEMENTS)


def _mutated(trace: dict, mutations) -> dict:
    """A deep copy of `trace` with each (action, pick, replacement) applied in turn.
    Hypothesis hands out the same sampled list or dict object every time it is drawn, so
    each insertion is a fresh copy: otherwise a second mutation could append a list into
    itself (the walker then recurses forever) or change the strategy's own constants."""
    trace = copy.deepcopy(trace)
    for action, pick, replacement in mutations:
        paths = list(_paths(trace))
        if not paths:
            break
        parent_path, key = paths[pick % len(paths)]
        parent = _at(trace, parent_path)
        value = copy.deepcopy(replacement)
        if action == "replace":
            parent[key] = value
        elif action == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent["extra_field"] = value
        else:
            parent.append(value)
    return trace


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(MUTATION, min_size=1, max_size=3))
def test_fast_and_full_validators_agree_on_mutated_traces(demo_trace, mutations):
    trace = _mutated(demo_trace, mutations)
    full_ok = not list(_validator().iter_errors(trace))
    assert _fast_validator().is_valid(trace) == full_ok, f"validators disagree on {mutations}"


def test_one_replacement_object_drawn_twice_cannot_nest_in_itself(demo_trace):
    # What hypothesis did: the same ["a"] object replaces the first field (trace_id), then
    # is drawn again and appended to the list it is now the parent of.
    drawn = ["a"]
    first_field_then_its_child = [("replace", 0, drawn), ("add", 1, drawn)]
    trace = _mutated(demo_trace, first_field_then_its_child)
    assert trace["trace_id"] == ["a", ["a"]]
    json.dumps(trace)  # raises ValueError on a circular reference
    assert drawn == ["a"]  # the strategy's own object is untouched for the next example


def test_valid_trace_passes_both(demo_trace):
    assert _fast_validator().is_valid(demo_trace)
    assert not list(_validator().iter_errors(demo_trace))
    assert trace_errors(demo_trace) == []


def test_rejected_trace_gets_messages_naming_each_field(demo_trace):
    trace = copy.deepcopy(demo_trace)
    trace["events"][0]["t"] = -1
    trace["events"][1]["type"] = "nope"
    del trace["costs"]
    errors = schema_errors(trace)
    assert "(top level): 'costs' is a required property" in errors
    assert "events[0].t: -1 is less than the minimum of 0" in errors
    assert any(e.startswith("events[1].type: 'nope' is not one of") for e in errors)


def test_value_json_cannot_hold_is_reported_not_raised(demo_trace):
    trace = copy.deepcopy(demo_trace)
    trace["task_id"] = b"bytes"
    assert schema_errors(trace) == ["task_id: b'bytes' is not of type 'string'"]


def _first(trace: dict, **match) -> tuple[int, dict]:
    return next((k, e) for k, e in enumerate(trace["events"]) if all(e.get(f) == v for f, v in match.items()))


def test_each_contract_rule_names_the_event_or_edge_at_fault(demo_trace):
    trace = copy.deepcopy(demo_trace)
    assert contract_errors(trace) == []
    events = trace["events"]
    _, llm_call = _first(trace, type="message", channel="llm")
    events.append(dict(llm_call))  # the same id twice
    trace["edges"].append({"src": "e999", "dst": events[2]["id"], "type": "causal"})
    spawn_k, spawn = _first(trace, type="spawn")
    del spawn["to"]
    decision_k, decision = _first(trace, type="orchestrator_decision", decision="delegate")
    decision["to"] = ""
    stop_k, stop = _first(trace, decision="stop")
    stop["reason"] = ""
    _, result = _first(trace, type="tool_result")
    result["type"] = "message"
    result["from"] = result["to"] = "x"
    call = next(e for e in events if e["type"] == "tool_call")
    errors = contract_errors(trace)
    assert errors == [
        f"events: id {llm_call['id']!r} is used 2 times",
        f"edges[{len(trace['edges']) - 1}].src: no event has id 'e999'",
        f"events[{spawn_k}].to: a spawn event needs 'to'",
        f"events[{decision_k}].to: a delegate decision needs its target in 'to'",
        f"events[{stop_k}].reason: a stop decision needs a non-empty reason",
        f"events: tool call {call.get('call_id') or call['span_id']!r} has no tool_result",
    ]


def test_contract_wants_a_stop_decision_and_honest_tool_counts(demo_trace):
    trace = copy.deepcopy(demo_trace)
    k, stop = _first(trace, decision="stop")
    del stop["decision"]
    trace["costs"]["tool_calls"] += 1
    calls = sum(e["type"] == "tool_call" for e in trace["events"])
    assert contract_errors(trace) == [
        f"events[{k}].decision: an orchestrator_decision needs a decision kind",
        "events: no stop decision (every run records why it stopped)",
        f"costs.tool_calls: is {calls + 1} but there are {calls} tool_call events",
    ]
