"""The README's quick start stays two commands, CI runs its test command, and
every code block the README (and the docs pages named in ``RUNNABLE_PAGES``)
says runs does run, offline, as written.

Runnable blocks: every ```python block, and every ```bash block whose
nearest non-blank line above is the marker ``<!-- runs -->``. Blocks that need
a collector, the network or a new venv (the quick start, pip) are not marked.
Each runs in a fresh interpreter (bash: ``bash -euo pipefail``, so any failing
line fails the block) in an empty temporary folder, with no OTEL_* or
ORCH_OTEL_* variables set, as a newcomer's shell would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

RUNS_MARKER = "<!-- runs -->"
BLOCK_TIMEOUT_S = 300


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


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    marked: bool  # the nearest non-blank line above is RUNS_MARKER


@dataclass(frozen=True)
class PageBlock:
    page: str  # README.md or docs/NAME.md
    block: Block


def code_blocks(text: str) -> list[Block]:
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = re.fullmatch(r"```(\S*)\s*", lines[i])
        if fence is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
        assert end is not None, f"line {i + 1}: code block never closed"
        above = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        blocks.append(Block(i + 1, fence.group(1), "\n".join(lines[i + 1:end]) + "\n", above == RUNS_MARKER))
        i = end + 1
    return blocks


def runnable(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.lang == "python" or (b.lang == "bash" and b.marked)]


README_BLOCKS = code_blocks((REPO / "README.md").read_text())
# Pages whose blocks run like the README's: what moved out of the README keeps being run.
RUNNABLE_PAGES = ("README.md", "docs/ids-and-rewards.md")
PAGE_BLOCKS = [PageBlock(page, b) for page in RUNNABLE_PAGES for b in runnable(code_blocks((REPO / page).read_text()))]


def run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ORCH_OTEL_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # orch-otel
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    if block.lang == "python":
        script, command = cwd / "block.py", [sys.executable, "block.py"]
    else:
        script, command = cwd / "block.sh", ["bash", "-euo", "pipefail", "block.sh"]
    script.write_text(block.code)
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)


def _failure(block: Block, done: subprocess.CompletedProcess, page: str = "README.md") -> str:
    return (f"{page}:{block.line}: the {block.lang} block exited {done.returncode}\n"
            f"--- stdout (end)\n{done.stdout[-3000:]}\n--- stderr (end)\n{done.stderr[-3000:]}")


@pytest.mark.parametrize("item", PAGE_BLOCKS, ids=lambda pb: f"{pb.page}-{pb.block.lang}-line{pb.block.line}")
def test_readme_block_runs_as_written(item: PageBlock, tmp_path: Path):
    done = run_block(item.block, tmp_path)
    assert done.returncode == 0, _failure(item.block, done, item.page)


def test_a_pages_blocks_run_one_after_the_other_in_one_folder(tmp_path: Path):
    # a reader runs the page top to bottom in one folder: a block must not assume it wrote the only trace there
    for item in [pb for pb in PAGE_BLOCKS if pb.page == "docs/ids-and-rewards.md"]:
        done = run_block(item.block, tmp_path)
        assert done.returncode == 0, _failure(item.block, done, item.page)


def test_outcomes_walkthrough_gives_each_decision_row_the_outcome(tmp_path: Path):
    # What the README says follows: every decision row has outcome_success 1.0 and reward 1.0.
    (block,) = [pb.block for pb in PAGE_BLOCKS if pb.block.marked and "--outcomes outcomes.csv" in pb.block.code]
    done = run_block(block, tmp_path)
    assert done.returncode == 0, _failure(block, done, "docs/ids-and-rewards.md")
    rows = [json.loads(line) for line in (tmp_path / "data" / "decisions.jsonl").read_text().splitlines()]
    assert rows, "the demo has decisions"
    assert {(r["task_id"], r["outcome_success"], r["reward"]) for r in rows} == {("demo-task-1", 1.0, 1.0)}


def test_readme_marks_its_runnable_blocks_and_not_the_quick_start():
    # The README: the one-line setup and the hand-written agents are python. docs/ids-and-rewards.md: the
    # LangGraph and AutoGen id examples are python, the outcomes walk-through a marked bash block.
    assert sum(b.lang == "python" for b in README_BLOCKS) >= 2
    moved = [pb.block for pb in PAGE_BLOCKS if pb.page != "README.md"]
    assert sum(b.lang == "python" for b in moved) >= 2 and sum(b.lang == "bash" and b.marked for b in moved) >= 1
    assert all(pb.block.lang == "bash" for pb in PAGE_BLOCKS if pb.block.marked), "the marker is only for bash blocks"
    quick_start = [b for b in README_BLOCKS if "python3 -m venv .venv" in b.code]
    assert len(quick_start) == 2 and not any(b.marked for b in quick_start)


def test_code_blocks_finds_the_marker_over_blank_lines_only():
    text = "\n".join([
        "<!-- runs -->", "", "```bash", "echo one", "```",
        "<!-- runs -->", "some words", "```bash", "echo two", "```",
        "```python", "print(3)", "```",
    ])
    assert code_blocks(text) == [
        Block(3, "bash", "echo one\n", True),
        Block(8, "bash", "echo two\n", False),
        Block(11, "python", "print(3)\n", False),
    ]


@pytest.mark.parametrize("block", [
    Block(1, "python", "print('first')\nraise SystemExit(3)\n", False),
    Block(1, "bash", "false\necho 'still going'\n", True),
    Block(1, "bash", "false | cat\n", True),
], ids=["python-raises", "bash-first-line-fails", "bash-pipe-fails"])
def test_a_failing_block_fails(block: Block, tmp_path: Path):
    assert run_block(block, tmp_path).returncode != 0
