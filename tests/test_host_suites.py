"""The host-suites harness (tests/host_suites, docs/host-suites.md) records each
test's outcome faithfully and reports exactly the tests whose outcome differs.
The harness itself runs the frameworks' suites as a CI step, not here."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

HARNESS = Path(__file__).resolve().parent / "host_suites"


def _load_compare():
    spec = importlib.util.spec_from_file_location("host_suites_compare", HARNESS / "compare.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


compare = _load_compare()

SAMPLE_TESTS = """
import pytest

def test_passes():
    pass

def test_fails():
    assert 1 == 2, "one is not two"

def test_skips():
    pytest.skip("not here")

@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False

@pytest.mark.xfail(reason="known")
def test_unexpected_pass():
    pass

@pytest.fixture
def broken_setup():
    raise RuntimeError("setup broke")

def test_setup_error(broken_setup):
    pass

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_teardown_error(broken_teardown):
    pass
"""


def test_outcome_plugin_records_every_kind_of_outcome(tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent(SAMPLE_TESTS))
    (tmp_path / "test_unimportable.py").write_text("import no_such_module_anywhere\n")
    outcomes = tmp_path / "outcomes.json"
    env = {**os.environ, "PYTHONPATH": str(HARNESS / "plugins"), "ORCH_HOST_OUTCOMES": str(outcomes)}
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "host_outcomes", "-q",
                    "--continue-on-collection-errors", "test_sample.py", "test_unimportable.py"],
                   cwd=tmp_path, env=env, capture_output=True, check=False, timeout=120)
    recorded = json.loads(outcomes.read_text())["tests"]
    assert {nodeid: entry["outcome"] for nodeid, entry in recorded.items()} == {
        "test_sample.py::test_passes": "passed",
        "test_sample.py::test_fails": "failed",
        "test_sample.py::test_skips": "skipped",
        "test_sample.py::test_expected_failure": "xfailed",
        "test_sample.py::test_unexpected_pass": "xpassed",
        "test_sample.py::test_setup_error": "error",
        "test_sample.py::test_teardown_error": "error",
        "test_unimportable.py": "collect-error",
    }
    assert "one is not two" in recorded["test_sample.py::test_fails"]["reason"]
    assert recorded["test_sample.py::test_skips"]["reason"] == "Skipped: not here"
    assert recorded["test_sample.py::test_passes"]["reason"] == ""


def _run(mode, **outcomes):
    return compare.RunResult(mode=mode, exitstatus=1,
                             tests={nodeid.replace("__", "::"): {"outcome": o, "reason": ""} for nodeid, o in outcomes.items()})


def test_only_tests_whose_outcome_changed_are_reported():
    plain = _run("plain", a__same_pass="passed", a__same_fail="failed", a__broken="passed", a__only_plain="skipped")
    instrumented = _run("instrumented", a__same_pass="passed", a__same_fail="failed", a__broken="failed", a__only_instr="passed")
    assert compare.differing(plain, instrumented) == ["a::broken", "a::only_instr", "a::only_plain"]


def test_named_tests_must_run_both_ways_and_pass_plain():
    plain = _run("plain", **{"f__ok[1]": "passed", "f__ok[2]": "passed", "f__red": "failed"})
    instrumented = _run("instrumented", **{"f__ok[1]": "passed", "f__ok[2]": "failed", "f__red": "failed"})
    problems = compare.named_problems(("f::ok", "f::red", "f::gone"), plain, instrumented)
    assert problems[0].startswith("named test f::red does not pass without orch-otel: failed")
    assert problems[1:] == ["named test f::gone is not in the plain run", "named test f::gone is not in the instrumented run"]


def test_a_module_the_plain_run_cannot_collect_fails_the_suite():
    plain = _run("plain", t__a="passed", tests_x_py="collect-error")
    instrumented = _run("instrumented", t__a="passed", tests_x_py="collect-error")
    assert compare.run_problem(plain).startswith("could not collect tests_x_py")
    assert compare.run_problem(instrumented) is None
    assert compare.run_problem(compare.RunResult(mode="plain", tests={}, exitstatus=5)) == "pytest exit 5 (no tests collected)"
