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
    uncollected = [nodeid for nodeid in run.tests if run.outcome(nodeid) == "collect-error"]
    if run.mode.startswith("plain") and uncollected:
        # the hosts venv lacks something: those tests would silently not run
        return "could not collect " + "; ".join(f"{nodeid} ({run.reason(nodeid)[:200]})" for nodeid in uncollected)
    return None


def differing(plain: RunResult, instrumented: RunResult) -> list[str]:
    """Node ids whose outcome is not the same in both runs."""
    nodeids = sorted(set(plain.tests) | set(instrumented.tests))
    return [nodeid for nodeid in nodeids if plain.outcome(nodeid) != instrumented.outcome(nodeid)]


def named_problems(named: tuple[str, ...], plain: RunResult, instrumented: RunResult) -> list[str]:
    """Named tests that a run did not collect, or that do not pass without
    orch-otel (then they prove nothing). A test id without parameters stands
    for all its parametrized cases."""
    problems = []
    for nodeid in named:
        for run in (plain, instrumented):
            cases = [got for got in run.tests if got == nodeid or got.startswith(nodeid + "[")]
            if not cases:
                problems.append(f"named test {nodeid} is not in the {run.mode} run")
            elif run is plain and any(plain.outcome(case) != "passed" for case in cases):
                first = cases[0]
                problems.append(f"named test {nodeid} does not pass without orch-otel: {plain.outcome(first)} {plain.reason(first)[:200]}")
    return problems


def not_passing(run: RunResult) -> list[str]:
    """Failed and errored tests, with their reasons (they are fine if the other
    run has them too, but the report shows them)."""
    return [f"{nodeid}: {run.outcome(nodeid)} {run.reason(nodeid)[:160]}"
            for nodeid in sorted(run.tests) if run.outcome(nodeid) in ("failed", "error", "collect-error")]


def describe_difference(nodeid: str, plain: RunResult, instrumented: RunResult) -> str:
    line = f"{nodeid}: plain {plain.outcome(nodeid)}, instrumented {instrumented.outcome(nodeid)}"
    reasons = []
    for run in (plain, instrumented):
        reason = run.reason(nodeid)
        if reason:
            reasons.append(f"      {run.mode}: {reason[:300]}")
    return "\n".join([line, *reasons])
