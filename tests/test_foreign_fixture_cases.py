"""``benchmarks/foreign_fixtures.py`` names each fixture's fidelity case by
the start of its truth's ``app``; ``--check`` (run by CI in the benchmark venv)
records every fixture again from those names. Each name must still pick out
exactly one case, the one the committed MANIFEST.json says the fixture was
recorded from, or the check cannot run (it failed this way once a second
langgraph-supervisor case was added)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.foreign_fixtures import CASES, FIXTURES, MANIFEST, files_of, find_case, normalised  # noqa: E402

MANIFEST_ENTRIES = json.loads((FIXTURES / MANIFEST).read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_fixture_name_picks_the_case_it_was_recorded_from(name: str) -> None:
    _peer, module, prefix = CASES[name]
    if module == "fidelity_cases_maf":
        pytest.importorskip("agent_framework", reason="Agent Framework needs Python >= 3.11")
    case = find_case(module, prefix, prefix=True)  # raises unless exactly one case starts so
    for file in files_of(name):
        assert MANIFEST_ENTRIES[file]["app"] == case.truth.app, file


def test_the_check_lists_parallel_tool_results_sorted_and_everything_else_in_order() -> None:
    """Two calls in flight together finish in thread-timing order: their results are listed sorted;
    the events around them keep their order, per instance."""
    def event(type_: str, **fields) -> dict:
        return {"id": "x", "t": 0.0, "type": type_, "agent": "a", "instance": "a#1", **fields}

    trace = {"trace_id": "t", "topology": "centralized", "events": [
        event("tool_call", tool="sum", call_id="c1"), event("tool_call", tool="avg", call_id="c2"),
        event("tool_result", tool="sum", call_id="c1"), event("tool_result", tool="avg", call_id="c2"),
        event("message", to="b"),
        event("tool_result", tool="sum", call_id="c3"),
    ]}
    assert normalised([trace]) == [
        "traces: 1", "trace 0: topology=centralized",
        '  {"type": "tool_call", "agent": "a", "tool": "sum", "call_id": "c1", "instance": "a#1"}',
        '  {"type": "tool_call", "agent": "a", "tool": "avg", "call_id": "c2", "instance": "a#1"}',
        '  {"type": "tool_result", "agent": "a", "tool": "avg", "call_id": "c2", "instance": "a#1"}',
        '  {"type": "tool_result", "agent": "a", "tool": "sum", "call_id": "c1", "instance": "a#1"}',
        '  {"type": "message", "agent": "a", "to": "b", "instance": "a#1"}',
        '  {"type": "tool_result", "agent": "a", "tool": "sum", "call_id": "c3", "instance": "a#1"}',
    ]
