"""pytest plugin (``-p host_outcomes``): writes each test's outcome to the
JSON file named by ``$ORCH_HOST_OUTCOMES``, for run.py to compare a plain run
with an instrumented one.

Outcomes: passed, failed, skipped, xfailed, xpassed, error (setup or teardown
failed) and collect-error (a module that could not be collected). A short
reason goes with every outcome but passed, so a difference can be explained.
"""

from __future__ import annotations

import json
import os

# A later phase's outcome replaces an earlier one only if it ranks higher:
# a test that passed its call but failed teardown is an error.
_RANK = {"passed": 0, "skipped": 1, "xfailed": 1, "xpassed": 1, "failed": 2, "error": 3, "collect-error": 4}

_outcomes: dict[str, dict[str, str]] = {}


def _reason(report) -> str:
    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if isinstance(longrepr, tuple):  # a skip: (path, line, message)
        return str(longrepr[2])
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    text = str(longrepr).strip().splitlines()
    return text[-1] if text else ""


def _outcome(report) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when == "call":
        return report.outcome
    if report.failed:
        return "error"
    return "skipped" if report.skipped else "passed"


def _record(nodeid: str, outcome: str, reason: str) -> None:
    previous = _outcomes.get(nodeid)
    if previous is None or _RANK[outcome] > _RANK[previous["outcome"]]:
        _outcomes[nodeid] = {"outcome": outcome, "reason": reason if outcome != "passed" else ""}


def pytest_runtest_logreport(report) -> None:
    _record(report.nodeid, _outcome(report), _reason(report))


def pytest_collectreport(report) -> None:
    if report.failed:
        _record(report.nodeid or "<collection>", "collect-error", _reason(report))


def pytest_sessionfinish(session, exitstatus) -> None:
    path = os.environ.get("ORCH_HOST_OUTCOMES")
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"exitstatus": int(exitstatus), "tests": _outcomes}, out, indent=1, sort_keys=True)
