"""The README's quick start stays two commands, and CI runs its test command."""

from __future__ import annotations

import re

from conftest import REPO


def quick_start_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_quick_start_has_exactly_two_commands_demo_and_tests():
    demo, tests = quick_start_commands()
    assert demo.endswith("orch-otel demo") and "\n" not in demo
    assert "pytest" in tests and "\n" not in tests


def test_ci_runs_the_readme_test_command_verbatim():
    _, tests = quick_start_commands()
    assert tests in (REPO / ".ci" / "run").read_text().splitlines()
