"""Comparing a plain run's per-test outcomes with an instrumented run's."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunResult:
    """One pytest run of a suite, read from host_outcomes' JSON file."""

    mode: str
    tests: dict[str, dict[str, str]] = field(default_factory=dict)
    exitstatus: int | None = None
    # why the run itself did not complete (timeout, crash, no outcomes file)
    broken: str | None = None
    traces: int | None = None

    @classmethod
    def load(cls, mode: str, path: Path, broken: str | None = None) -> RunResult:
        if broken is None and not path.exists():
            broken = "pytest wrote no outcomes (crashed before the session ended)"
        if broken is not None:
            return cls(mode=mode, broken=broken)
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(mode=mode, tests=data["tests"], exitstatus=data["exitstatus"])

    def counts(self) -> str:
        if self.broken:
            return f"BROKEN: {self.broken}"
        tally = Counter(entry["outcome"] for entry in self.tests.values())
        return ", ".join(f"{n} {outcome}" for outcome, n in sorted(tally.items())) or "no tests"

    def outcome(self, nodeid: str) -> str:
        entry = self.tests.get(nodeid)
        return entry["outcome"] if entry else "absent"

    def reason(self, nodeid: str) -> str:
        entry = self.tests.get(nodeid)
        return entry.get("reason", "") if entry else ""


# pytest exit codes that mean the session itself went wrong: interrupted,
# internal error, usage error, no tests collected
BAD_EXIT = {2: "interrupted", 3: "internal error", 4: "usage error", 5: "no tests collected"}


def run_problem(run: RunResult) -> str | None:
    """Why this run cannot be compared, or None."""
    if run.broken:
        return run.broken
    if run.exitstatus in BAD_EXIT:
        return f"pytest exit {run.exitstatus} ({BAD_EXIT[run.exitstatus]})"
    if not run.tests:
        return "no test ran"
    return None


def differing(plain: RunResult, instrumented: RunResult) -> list[str]:
    """Node ids whose outcome is not the same in both runs."""
    nodeids = sorted(set(plain.tests) | set(instrumented.tests))
    return [nodeid for nodeid in nodeids if plain.outcome(nodeid) != instrumented.outcome(nodeid)]


def missing_named(named: tuple[str, ...], *runs: RunResult) -> list[str]:
    """Named tests that some run did not collect (a test id with parameters
    counts as collected when any of its parametrized cases ran)."""
    missing = []
    for nodeid in named:
        for run in runs:
            if not any(got == nodeid or got.startswith(nodeid + "[") for got in run.tests):
                missing.append(f"{nodeid} (not in the {run.mode} run)")
                break
    return missing


def describe_difference(nodeid: str, plain: RunResult, instrumented: RunResult) -> str:
    line = f"{nodeid}: plain {plain.outcome(nodeid)}, instrumented {instrumented.outcome(nodeid)}"
    reasons = []
    for run in (plain, instrumented):
        reason = run.reason(nodeid)
        if reason:
            reasons.append(f"      {run.mode}: {reason[:300]}")
    return "\n".join([line, *reasons])
