"""Files that can hold captured content are private to the user (issue 31,
item 18): 0600 files in 0700 folders orch-otel creates, under the usual umask
022 (which would make them 0644 and 0755, world-readable)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from orch_otel.exporters.rejections import Refusal, SetAside, quarantine_lines
from orch_otel.exporters.spool import SpanSpool
from orch_otel.spans import SpanRecord

BIN = Path(sys.executable).parent / "orch-otel"
FOREIGN = Path(__file__).parent / "fixtures" / "foreign" / "openinference_langgraph_supervisor.otlp.jsonl"


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _modes(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` that orch-otel wrote, with its permission bits."""
    return {str(p.relative_to(root)): oct(stat.S_IMODE(p.lstat().st_mode)) for p in [root, *root.rglob("*")]}


def _private(modes: dict[str, str], root: Path) -> None:
    for name, mode in modes.items():
        is_dir = (root / name).is_dir() if name != "." else True
        assert mode == ("0o700" if is_dir else "0o600"), f"{name}: {mode}"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0o022))


def test_the_commands_write_private_files_whatever_the_umask(tmp_path):
    assert _cli("demo", "--trace-dir", "out/traces", "--capture-content", cwd=tmp_path).returncode == 0
    logs = tmp_path / "logs.jsonl"
    logs.write_bytes(FOREIGN.read_bytes() + b"{not json\n")
    assert _cli("convert", str(logs), "-o", "out/converted/t.jsonl", "--capture-content", cwd=tmp_path).returncode == 1
    traces = tmp_path / "out" / "traces"
    (traces / "traces-bad.jsonl").write_bytes(b"{not json\n")
    os.chmod(traces / "traces-bad.jsonl", 0o600)
    for fmt in ("jsonl", "parquet"):
        assert _cli("dataset", "out/traces", "-o", f"out/ds-{fmt}", "--view", "traces", "--format", fmt,
                    cwd=tmp_path).returncode == 1
    assert _cli("view", "out/traces", "-o", "out/pages/run.html", cwd=tmp_path).returncode == 0
    modes = _modes(tmp_path / "out")
    assert {"traces/content", "converted/t.jsonl.quarantine", "converted/content", "ds-jsonl/traces.jsonl",
            "ds-jsonl/traces.rejects.jsonl", "ds-parquet/traces.parquet", "pages/run.html"} <= set(modes), modes
    _private(_modes(tmp_path / "out"), tmp_path / "out")


def test_the_spool_and_what_it_sets_aside_are_private(tmp_path, umask_022):
    spool = SpanSpool(tmp_path / "spool", max_bytes=1 << 20)
    span = SpanRecord("ab" * 16, "cd" * 8, None, "secret", 1, 2, attributes={"gen_ai.input.messages": "sk-123"})
    assert spool.append(span)
    spool.close()
    SetAside(tmp_path / "spool").add(span, Refusal("400 bad request", 400))
    quarantine_lines(tmp_path / "spool", "wal-x.spool", [(1, b"{half a line", "malformed JSON")])
    modes = _modes(tmp_path / "spool")
    assert {"rejected.aside", "unreadable.aside"} <= set(modes) and any(n.endswith(".spool") for n in modes), modes
    _private(modes, tmp_path / "spool")
    assert orjson.loads((tmp_path / "spool" / "unreadable.aside").read_bytes())["segment"] == "wal-x.spool"
