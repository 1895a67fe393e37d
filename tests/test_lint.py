"""The code passes the project's lint rules ([tool.ruff] in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff comes with the dev extra: pip install -e '.[dev]'")
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "src", "tests", "benchmarks", "examples"],
                            cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
