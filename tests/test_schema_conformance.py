"""orch-otel's trace format against the paper's seed schema (read from ../shared)."""

from __future__ import annotations

import asyncio

from conftest import check_trace

from orch_otel import demo, testing
from orch_otel.models import json_schema
from orch_otel.vocabulary import EdgeKind, EventKind, Topology


def test_event_edge_and_topology_kinds_equal_the_seed(seed_schema):
    defs = seed_schema["$defs"]
    assert {k.value for k in EventKind} == set(defs["event"]["properties"]["type"]["enum"])
    assert {k.value for k in EdgeKind} == set(defs["edge"]["properties"]["type"]["enum"])
    assert {k.value for k in Topology} == set(seed_schema["properties"]["topology"]["enum"])


def test_own_schema_is_a_profile_of_the_seed(seed_schema):
    ours = json_schema()
    assert set(ours["properties"]) <= set(seed_schema["properties"]), "top-level keys must be ones the seed allows"
    assert ours["additionalProperties"] is False
    assert set(seed_schema["required"]) <= set(ours["required"])
    seed_event_required = set(seed_schema["$defs"]["event"]["required"])
    assert seed_event_required <= set(ours["$defs"]["Event"]["required"])


def test_demo_trace_validates_against_seed_and_own_schema(seed_schema):
    with testing.capture() as captured:
        asyncio.run(demo.run())
    (trace,) = captured.traces()
    check_trace(trace)
    assert set(trace) <= set(seed_schema["properties"])
