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
from benchmarks.foreign_fixtures import CASES, FIXTURES, MANIFEST, files_of, find_case  # noqa: E402

MANIFEST_ENTRIES = json.loads((FIXTURES / MANIFEST).read_text())


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_fixture_name_picks_the_case_it_was_recorded_from(name: str) -> None:
    _peer, module, prefix = CASES[name]
    if module == "fidelity_cases_maf":
        pytest.importorskip("agent_framework", reason="Agent Framework needs Python >= 3.11")
    case = find_case(module, prefix, prefix=True)  # raises unless exactly one case starts so
    for file in files_of(name):
        assert MANIFEST_ENTRIES[file]["app"] == case.truth.app, file
