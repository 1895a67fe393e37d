"""``python -m benchmarks --render RESULTS --update``: one suite's fresh
figures go into an existing BENCHMARKS.md, and nothing else in it changes.
The reports here are written by hand, shaped as benchmarks/report.py writes them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.update import update_report  # noqa: E402 - the repository's benchmarks/ package

OLD = """# orch-otel benchmarks

- Command: `python -m benchmarks` (from the repository root)
- Date: 2026-12-04 21:10 UTC; wall time 25.3 min
- Load average (1, 5, 15 min) before: 0.65; after: 1.30
- Packages: orch-otel 0.1.0, autogen-core 0.7.5

**Noisy.**

## Summary against the targets

| what | target | measured (medians) | met |
|---|---|---|---|
| LangGraph supervisor: ratio | ≤ 0.25 | 0.05 | yes |
| AutoGen swarm: added | ≤ built-in | 0.6 vs 2.1 | yes |
| Recorder span ÷ bare SDK span | ≤ 3x | 2.4x | yes |
| LangGraph supervisor: orch-otel added µs per recorded span ÷ bare SDK span | ≤ 3x | 2.2x | yes |

## Capture overhead: LangGraph

lg table

## Capture overhead: AutoGen

ag table

## Floor: orch-otel's cost per span against a bare SDK span

floor table
"""

NEW = """# orch-otel benchmarks

- Command: `python -m benchmarks --only agent_framework` (from the repository root)
- Date: 2026-12-05 02:30 UTC; wall time 1.0 min
- Load average (1, 5, 15 min) before: 3.00; after: 3.10
- Packages: orch-otel 0.1.0, autogen-core 0.7.5, agent-framework-core 1.26.0

**Noisy.**

## Summary against the targets

| what | target | measured (medians) | met |
|---|---|---|---|
| Agent Framework sequential: added | ≤ built-in | 0.9 vs 1.0 | yes |

## Capture overhead: Agent Framework

af table {n}
"""


def test_a_new_suite_goes_after_the_one_before_it() -> None:
    merged = update_report(OLD, NEW.format(n=1), ["agent_framework"])
    lines = merged.splitlines()
    assert lines[lines.index("| AutoGen swarm: added | ≤ built-in | 0.6 vs 2.1 | yes |") + 1] == \
        "| Agent Framework sequential: added | ≤ built-in | 0.9 vs 1.0 | yes |"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings == ["## Summary against the targets", "## Capture overhead: LangGraph",
                        "## Capture overhead: AutoGen", "## Capture overhead: Agent Framework",
                        "## Floor: orch-otel's cost per span against a bare SDK span"]
    assert "af table 1" in merged and "lg table" in merged and "floor table" in merged
    (updated,) = [line for line in lines if line.startswith("- Updated: ")]
    assert "`python -m benchmarks --only agent_framework`" in updated and "2026-12-05 02:30 UTC" in updated
    assert updated.endswith("packages: agent-framework-core 1.26.0")  # only what the old header lacked
    assert "- Date: 2026-12-04 21:10 UTC; wall time 25.3 min" in lines  # the rest of the header is the old run's


def test_updating_again_replaces_rather_than_adds() -> None:
    once = update_report(OLD, NEW.format(n=1), ["agent_framework"])
    twice = update_report(once, NEW.format(n=2).replace("0.9 vs 1.0", "0.8 vs 1.1"), ["agent_framework"])
    assert "af table 2" in twice and "af table 1" not in twice
    assert twice.count("| Agent Framework sequential:") == 1 and "0.8 vs 1.1" in twice
    assert twice.count("- Updated: ") == 1
    assert twice.replace("af table 2", "af table 1").replace("0.8 vs 1.1", "0.9 vs 1.0") == once


def test_only_suites_measured_against_built_in_tracing_can_be_updated_alone() -> None:
    with pytest.raises(ValueError, match="cannot update langgraph alone"):
        update_report(OLD, NEW, ["langgraph"])
    with pytest.raises(ValueError, match="no '## Capture overhead: AutoGen'"):
        update_report(OLD, NEW, ["autogen"])


def test_a_second_suites_update_names_only_its_own_new_packages_and_a_different_machine() -> None:
    """The figures of an update may come from another machine than the full run's: the line says so."""
    old = OLD.replace("- Packages:", "- Machine: 2 CPU core(s), Intel Xeon\n- Packages:")
    af = update_report(old, NEW.format(n=1).replace("- Packages:", "- Machine: 2 CPU core(s), Intel Xeon\n- Packages:"),
                       ["agent_framework"])
    oa_new = (NEW.format(n=1).replace("agent_framework", "openai_agents")
              .replace("- Packages:", "- Machine: 2 CPU core(s), AMD EPYC\n- Packages:")
              .replace("agent-framework-core 1.26.0", "agent-framework-core 1.26.0, openai-agents 0.24.0")
              .replace("Agent Framework sequential", "OpenAI Agents SDK handoffs")
              .replace("## Capture overhead: Agent Framework", "## Capture overhead: OpenAI Agents SDK"))
    merged = update_report(af, oa_new, ["openai_agents"])
    af_line, oa_line = [line for line in merged.splitlines() if line.startswith("- Updated: ")]
    assert "machine" not in af_line  # the same machine as the full run
    assert oa_line.startswith("- Updated: the OpenAI Agents SDK section")
    assert "; machine: 2 CPU core(s), AMD EPYC; " in oa_line
    assert oa_line.endswith("packages: openai-agents 0.24.0")  # agent-framework-core: named by the line before
    headings = [line for line in merged.splitlines() if line.startswith("## ")]
    assert headings[-2:] == ["## Capture overhead: OpenAI Agents SDK",
                             "## Floor: orch-otel's cost per span against a bare SDK span"]
