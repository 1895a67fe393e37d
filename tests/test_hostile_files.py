"""Hostile input files handed to the commands (issue 31, items 12-17): a symlink
loop, a FIFO, a 10 GB sparse file, one huge line, zstd bombs, names with
control characters. Each is reported as ``file: reason`` (or ``file:line:
reason``), in bounded memory (the peak RSS of the command's own process,
read with ``os.wait4``), and the good traces beside it are still read.

The memory bounds are counts, not timings: with the line limit at 4 MiB, a
command that held the 10 GB line (or the 200 MB one) whole would pass them
many times over. A cap on the address space keeps a regression from eating
the machine: it then fails on the same assertions."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

zstandard = pytest.importorskip("zstandard", reason="the zstd bombs need zstandard, in the cli extra: pip install 'orch-otel[cli]'")

FOREIGN = Path(__file__).parent / "fixtures" / "foreign" / "openinference_langgraph_supervisor.otlp.jsonl"
LIMIT = 4 << 20  # ORCH_OTEL_MAX_LINE_BYTES for these runs
PEAK_KB = 160_000  # a command's peak RSS here: about 55 MB of its own, plus a line buffer of 4 MiB
BIN = Path(sys.executable).parent / "orch-otel"
_NOT_SET = {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER"}


# The command runs under a small launcher that forks it and reports its own peak RSS: measured from this
# (large) pytest process directly, the peak would include the parent's memory, which a forked child holds
# until it execs (Linux keeps that high-water mark across exec).
_LAUNCH = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "with open(sys.argv[1], 'w') as f:\n"
    "    f.write(f'{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}')\n"
)


def run(*args: str, cwd: Path, limit: int = LIMIT) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, peak RSS in KB) of one ``orch-otel`` command, under umask 022."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_SET}
    env["ORCH_OTEL_MAX_LINE_BYTES"] = str(limit)

    def setup() -> None:
        os.umask(0o022)
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a regression fails, it does not eat the machine

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as where:
        report = Path(where) / "exit-and-peak"
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCH, str(report), str(BIN), *args], cwd=cwd, env=env,
                                stdout=out, stderr=err, preexec_fn=setup, start_new_session=True)
        guard = threading.Timer(300, os.killpg, (proc.pid, signal.SIGKILL))  # against a hang, not a measure
        guard.start()
        try:
            proc.wait()
        finally:
            guard.cancel()
        assert report.exists(), f"orch-otel {' '.join(args)} did not finish: it hangs on a hostile file"
        code, peak = (int(word) for word in report.read_text().split())
        assert code != -signal.SIGKILL, f"orch-otel {' '.join(args)} did not finish: it hangs on a hostile file"
        out.seek(0)
        err.seek(0)
        return code, out.read().decode(), err.read().decode(), peak


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A trace directory the demo wrote: one good trace and its content store."""
    where = tmp_path_factory.mktemp("good")
    result = subprocess.run([str(BIN), "demo", "--trace-dir", str(where / "traces"), "--capture-content"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return where / "traces"


def _beside(good: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    shutil.copytree(good, folder)
    return folder


def _commands(folder: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {"validate": ["validate", str(folder)], "show": ["show", str(folder), "--list"],
            "view": ["view", str(folder), "-o", str(tmp_path / "view" / "runs.html")],
            "dataset": ["dataset", str(folder), "-o", str(tmp_path / "ds"), "--view", "decisions"]}


def _good_trace_read(name: str, code: int, out: str, err: str, folder: Path, tmp_path: Path) -> None:
    """The good trace beside the hostile file was read, whatever the command."""
    good_file = next(folder.glob("traces-2*.jsonl"))
    trace_id = good_file.read_text().split('"trace_id":"')[1][:32]
    assert str(good_file) not in err, err
    if name == "validate":
        assert "trace(s) in" in out, out + err
    elif name == "show":
        assert trace_id in out, out + err
    elif name == "view":
        assert code == 0 and "wrote" in out, out + err
    else:
        assert trace_id in (tmp_path / "ds" / "decisions.jsonl").read_text(), err


def test_a_symlink_loop_and_a_fifo_are_reported_and_the_good_trace_beside_them_read(good, tmp_path):
    folder = _beside(good, tmp_path)
    (folder / "loop.jsonl").symlink_to("loop.jsonl")
    (folder / "a.jsonl").symlink_to("b.jsonl")
    (folder / "b.jsonl").symlink_to("a.jsonl")
    os.mkfifo(folder / "traces-x.jsonl")
    for name, args in _commands(folder, tmp_path).items():
        code, out, err, _ = run(*args, cwd=tmp_path)
        assert "Traceback" not in err, err
        assert f"{folder / 'loop.jsonl'}: symlink loop" in err, (name, err)
        assert f"{folder / 'a.jsonl'}: symlink loop" in err, (name, err)
        assert f"{folder / 'traces-x.jsonl'}: a FIFO (named pipe), not a regular file" in err, (name, err)
        assert "no such file" not in err, (name, err)
        _good_trace_read(name, code, out, err, folder, tmp_path)


def test_a_named_fifo_is_refused_at_once_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "traces-x.jsonl")
    for args in (["validate", "traces-x.jsonl"], ["show", "traces-x.jsonl"], ["convert", "traces-x.jsonl", "-o", "o.jsonl"]):
        code, _, err, _ = run(*args, cwd=tmp_path)
        assert code == 2 and "traces-x.jsonl: a FIFO (named pipe), not a regular file" in err, (args, err)


def test_a_10_gb_sparse_file_is_one_over_long_line_read_in_bounded_memory(good, tmp_path):
    folder = _beside(good, tmp_path)
    with open(folder / "traces-sparse.jsonl", "wb") as f:  # a hole: no disk used
        f.truncate(10 << 30)
    for name, args in _commands(folder, tmp_path).items():
        code, out, err, peak = run(*args, cwd=tmp_path)
        assert f"{folder / 'traces-sparse.jsonl'}:1" in err and f"longer than the limit of {LIMIT} bytes" in err, (name, err)
        assert peak < PEAK_KB, f"{name}: peak RSS {peak} KB"
        _good_trace_read(name, code, out, err, folder, tmp_path)


def test_convert_refuses_empty_length_prefixed_messages_instead_of_looping(tmp_path):
    """A 10 GB hole read as length-prefixed protobuf: zero-length messages end the file at once."""
    (tmp_path / "in").mkdir()
    shutil.copy(FOREIGN, tmp_path / "in" / "good.jsonl")
    with open(tmp_path / "in" / "sparse.pb", "wb") as f:
        f.truncate(10 << 30)
    code, out, err, peak = run("convert", "in", "-o", "out/t.jsonl", cwd=tmp_path)
    assert code == 1, err
    assert "in/sparse.pb@0: an empty message: not a length-prefixed OTLP file" in err, err
    assert out.startswith("1 trace(s)"), out
    assert peak < PEAK_KB, peak


@pytest.mark.parametrize("command", ["validate", "dataset", "convert"])
def test_one_200_mb_line_is_a_clear_error_in_memory_near_the_limit(command, good, tmp_path):
    folder = _beside(good, tmp_path) if command != "convert" else tmp_path / "in"
    if command == "convert":
        folder.mkdir()
        shutil.copy(FOREIGN, folder / "good.jsonl")
    huge = folder / "traces-huge.jsonl"
    with open(huge, "wb") as f:
        f.write(b'{"resourceSpans": "' + b"x" * (200 << 20) + b'"}\n')
        f.write(FOREIGN.read_bytes().splitlines(keepends=True)[0] if command == "convert" else b"")
    args = {"validate": ["validate", str(folder)], "dataset": ["dataset", str(folder), "-o", str(tmp_path / "ds"), "--view", "decisions"],
            "convert": ["convert", str(folder), "-o", str(tmp_path / "out" / "t.jsonl")]}[command]
    code, out, err, peak = run(*args, cwd=tmp_path)
    assert f"{huge}:1: line of {(200 << 20) + 22} bytes is longer than the limit of {LIMIT} bytes" in err, err
    assert peak < PEAK_KB, f"peak RSS {peak} KB for a 200 MB line"
    if command == "convert":  # the line after the long one is read on
        assert f"{huge}:2" not in err, err
        assert out.startswith("1 trace(s)"), out + err


def _bomb(path: Path, data_head: bytes, size: int, fill: bytes) -> None:
    """``size`` bytes of ``fill`` after ``data_head``, zstd-compressed in a streaming write (small on disk)."""
    with open(path, "wb") as f, zstandard.ZstdCompressor(level=3).stream_writer(f) as w:
        w.write(data_head)
        block = fill * (1 << 20)
        for _ in range(size >> 20):
            w.write(block)


@pytest.mark.parametrize("fill", [b"x", b"\0"], ids=["one-line", "zeros"])
def test_a_zstd_bomb_stops_at_the_ratio_limit_with_the_file_named(fill, tmp_path):
    (tmp_path / "in").mkdir()
    shutil.copy(FOREIGN, tmp_path / "in" / "good.jsonl")
    bomb = tmp_path / "in" / "bomb.jsonl.zst"
    _bomb(bomb, b'{"resourceSpans": "' if fill == b"x" else b"", 3 << 30, fill)
    assert bomb.stat().st_size < 1 << 20
    code, out, err, peak = run("convert", "in", "-o", "out/t.jsonl", cwd=tmp_path, limit=64 << 20)
    assert code == 1 and out.startswith("1 trace(s)"), out + err
    assert "in/bomb.jsonl.zst" in err, err
    assert ("a decompression bomb" in err) or ("an empty message" in err), err
    assert peak < PEAK_KB + (64 << 10), f"peak RSS {peak} KB"


def test_a_zstd_message_bomb_inside_a_length_prefixed_file(tmp_path):
    (tmp_path / "in").mkdir()
    shutil.copy(FOREIGN, tmp_path / "in" / "good.jsonl")
    message = zstandard.ZstdCompressor().compress(b"{" + b" " * (512 << 20) + b"}")
    (tmp_path / "in" / "bomb.pb").write_bytes(len(message).to_bytes(4, "big") + message)
    code, out, err, peak = run("convert", "in", "-o", "out/t.jsonl", cwd=tmp_path)
    assert "in/bomb.pb@0: zstd message decompresses past" in err and "a decompression bomb" in err, err
    assert out.startswith("1 trace(s)"), out
    assert peak < PEAK_KB, peak


@pytest.mark.parametrize("name", ["evil\nname.jsonl", "evil\rname.jsonl", "evil\x1b[2Kname.jsonl", "evil\u202ename.jsonl"])
def test_control_characters_in_file_names_are_escaped_in_reports(name, good, tmp_path):
    folder = _beside(good, tmp_path)
    (folder / name).write_bytes(b"{not json\n")
    shown = name.encode("unicode_escape").decode().replace("\\x1b", "\\x1b")
    for args in (["validate", str(folder)], ["show", str(folder), "--list"],
                 ["view", str(folder), "-o", str(tmp_path / "v.html")],
                 ["convert", str(folder / name), "-o", str(tmp_path / "o.jsonl")],
                 ["dataset", str(folder), "-o", str(tmp_path / "ds"), "--view", "decisions"]):
        _, _, err, _ = run(*args, cwd=tmp_path)
        assert f"{shown}:1" in err, (args, err)
        for hidden in ("\r", "\x1b", "\u202e"):
            assert hidden not in err, (args, err)
        assert not any(line.startswith("name.jsonl") for line in err.splitlines()), (args, err)
