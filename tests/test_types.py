"""The code type-checks ([tool.mypy] in pyproject.toml), and an app's type checker sees orch-otel's types.

mypy keeps its cache in the repository's ``.mypy_cache`` (the one a plain ``mypy``
uses; mypy gitignores it): a cold run of src/orch_otel takes about 15-40 s on a
loaded 2-core machine, a warm one a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_NEEDS_MYPY = "mypy comes with the dev extra: pip install -e '.[dev]'"


def _mypy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=600)


def test_mypy_finds_nothing_in_src():
    pytest.importorskip("mypy", reason=_NEEDS_MYPY)
    result = _mypy("--config-file", str(REPO / "pyproject.toml"), cwd=REPO)  # the files are in the config
    assert result.returncode == 0, result.stdout + result.stderr


def test_py_typed_ships_in_the_package():
    assert (REPO / "src" / "orch_otel" / "py.typed").is_file()


def _installed_from_this_repo() -> bool:
    """Whether the interpreter imports this checkout's orch_otel without PYTHONPATH
    (an app's type checker finds orch-otel where it is installed, not on PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run([sys.executable, "-c", "import orch_otel; print(orch_otel.__file__)"], cwd="/",
                           env=env, capture_output=True, text=True, check=False)
    return found.returncode == 0 and Path(found.stdout.strip()) == REPO / "src" / "orch_otel" / "__init__.py"


def test_an_apps_type_checker_sees_the_installed_packages_types(tmp_path: Path):
    pytest.importorskip("mypy", reason=_NEEDS_MYPY)
    if not _installed_from_this_repo():
        pytest.skip("orch-otel is not installed from this checkout (pip install -e .): mypy would check another copy")
    app = tmp_path / "app.py"
    app.write_text("import orch_otel\n\n"
                   "with orch_otel.llm_call('fake-model') as call:\n"
                   "    call.set_response('hi', input_tokens=1, output_tokens=1)\n"
                   "    wrong: int = call\n")
    result = _mypy("--cache-dir", str(tmp_path / "cache"), "--no-error-summary", "app.py", cwd=tmp_path)
    # Without py.typed mypy refuses the import (import-untyped) and takes orch_otel as Any. With
    # it: only the wrong line, and `with llm_call(...)` gives an LLMInvocation (set_response known).
    assert result.stdout.splitlines() == [
        'app.py:5: error: Incompatible types in assignment (expression has type "LLMInvocation", '
        'variable has type "int")  [assignment]'
    ], result.stdout + result.stderr
