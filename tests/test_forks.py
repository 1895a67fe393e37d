"""Forked processes after ``instrument()``: bare ``os.fork()`` while a parent
thread records, ``multiprocessing`` fork pools with no flush, children sharing
a spool while the collector is down and back. Counts, not timings: each run
made is written once, complete; each span is delivered once."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import orjson
import pytest
from deploy_support import RUN, SPANS_PER_RUN, env_for, replay, wait_for, written
from otlp_receiver import OTLPReceiver, free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="fork start method: Linux")

FORK_WHILE_RECORDING = RUN + r'''
import os, sys, threading, time
import orch_otel
orch_otel.instrument()
stop = threading.Event()
made = []

def parent_runs():
    i = 0
    while not stop.is_set():
        run(f"p{i}", pause=0.002)  # in flight most of the time, as the forks happen
        made.append(f"p{i}")
        i += 1

recorder = threading.Thread(target=parent_runs)
recorder.start()
hung = 0
for k in range(CHILDREN):
    time.sleep(0.01)
    pid = os.fork()
    if pid == 0:
        run(f"c{k}")
        sys.exit(0)  # a normal exit: atexit writes what is still open
    deadline = time.monotonic() + 30
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            hung += 1
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            break
        time.sleep(0.01)
stop.set()
recorder.join()
print(len(made), hung)
'''


def test_os_fork_while_a_thread_records_writes_every_run_once(run_python, tmp_path):
    children = 30
    done = run_python(FORK_WHILE_RECORDING.replace("CHILDREN", str(children)), env=env_for(tmp_path / "traces"),
                      timeout=300)
    assert done.returncode == 0, done.stderr
    made, hung = map(int, done.stdout.split())
    assert hung == 0, f"{hung} children hung on a lock held across the fork"
    complete, incomplete, files = written(tmp_path / "traces")
    expected = {f"p{i}" for i in range(made)} | {f"c{k}" for k in range(children)}
    assert set(complete) == expected and set(complete.values()) == {1}, "every run written once"
    assert not incomplete, f"{len(incomplete)} parent runs written again, incomplete, by a child"
    assert len(files) == children + 1  # one file per process


POOL = RUN + r'''
import multiprocessing, sys
import orch_otel
orch_otel.instrument()

def task(i):
    run(f"t{i}")
    return i

if __name__ == "__main__":
    pool = multiprocessing.get_context("fork").Pool(4)
    assert sorted(pool.map(task, range(100), chunksize=5)) == list(range(100))
    if sys.argv[1] == "terminate":
        pool.terminate()  # what `with Pool() as pool:` does at its end: SIGTERM to each worker
    else:
        pool.close()
    pool.join()
'''


@pytest.mark.parametrize("end", ["terminate", "close"])
def test_fork_pool_workers_write_every_run_without_a_flush(run_python, tmp_path, end):
    script = tmp_path / "pool_app.py"
    script.write_text(POOL)
    done = subprocess.run([sys.executable, str(script), end], env=env_for(tmp_path / "traces"), capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    complete, incomplete, files = written(tmp_path / "traces")
    assert set(complete) == {f"t{i}" for i in range(100)} and set(complete.values()) == {1}
    assert not incomplete
    assert 2 <= len(files) <= 4  # the workers' own files (the parent made no run)


TWO_CHILDREN = RUN + r'''
import os, sys, time
from pathlib import Path
import orch_otel
state = orch_otel.instrument()
go, a_done = Path("go"), Path("a-done")

def child(name, count):
    for i in range(count):
        run(f"{name}{i}")
    assert not orch_otel.flush()  # the collector is down: not everything is delivered
    Path(f"{name}-ready").touch()
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    if name == "b":
        while not a_done.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    ok = orch_otel.flush()
    losses = state.processors[-1].losses.counts
    Path(f"{name}-result").write_text(f"{ok} {sum(losses.values())}")
    if name == "a":
        orch_otel.uninstrument()  # closes A's spool: must leave B's segments alone
        a_done.touch()
    os._exit(0)

pids = []
for name in ("a", "b"):
    pid = os.fork()
    if pid == 0:
        child(name, COUNT)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
'''


def test_forked_children_sharing_a_spool_deliver_every_span_once(run_python, tmp_path):
    receiver = OTLPReceiver(free_port())
    count = 100
    script = tmp_path / "children.py"
    script.write_text(TWO_CHILDREN.replace("COUNT", str(count)))
    env = env_for(tmp_path / "traces", tmp_path / "spool", receiver.port, ORCH_OTEL_FLUSH_TIMEOUT_MS="20000")
    parent = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (tmp_path / "a-ready").exists() and (tmp_path / "b-ready").exists(), what="both children")
        receiver.start()
        (tmp_path / "go").touch()
        assert parent.wait(120) == 0, parent.stderr.read()
    finally:
        if parent.poll() is None:
            parent.kill()
    try:
        for name in ("a", "b"):
            assert (tmp_path / f"{name}-result").read_text() == "True 0", f"child {name}: flush and losses"
        left = replay(tmp_path / "spool", receiver.port)
    finally:
        receiver.stop()
    assert left.returncode == 0, left.stderr
    delivered = Counter(receiver.span_ids)
    assert len(delivered) == 2 * count * SPANS_PER_RUN and set(delivered.values()) == {1}
    complete, _, _ = written(tmp_path / "traces")
    assert set(complete) == {f"{n}{i}" for n in "ab" for i in range(count)} and set(complete.values()) == {1}


FORK_DURING_FLUSH = RUN + r'''
import os, threading, time
from pathlib import Path
import orch_otel
state = orch_otel.instrument()
for i in range(20):
    run(f"p{i}")
flushing = threading.Thread(target=orch_otel.flush)  # waits on the down collector, holding the exporter
flushing.start()
time.sleep(1.0)
pid = os.fork()
if pid == 0:
    for i in range(COUNT):
        run(f"c{i}")
    deadline = time.monotonic() + 60
    while not Path("go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    ok = orch_otel.flush()
    Path("child-result").write_text(str(ok))
    os._exit(0)
flushing.join()
Path("parent-ready").touch()
os.waitpid(pid, 0)
'''


def test_a_child_forked_during_a_flush_exports_once_the_collector_is_back(run_python, tmp_path):
    receiver = OTLPReceiver(free_port())
    count = 67  # 201 spans
    script = tmp_path / "fork_flush.py"
    script.write_text(FORK_DURING_FLUSH.replace("COUNT", str(count)))
    env = env_for(tmp_path / "traces", tmp_path / "spool", receiver.port, ORCH_OTEL_FLUSH_TIMEOUT_MS="30000")
    parent = subprocess.Popen([sys.executable, str(script)], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(list((tmp_path / "traces").glob("traces-*.jsonl"))) == 2, what="the child's runs")
        receiver.start()
        (tmp_path / "go").touch()
        wait_for(lambda: (tmp_path / "child-result").exists(), timeout_s=90, what="the child's flush")
        assert (tmp_path / "child-result").read_text() == "True"
        assert parent.wait(120) == 0, parent.stderr.read()
    finally:
        if parent.poll() is None:
            parent.kill()
        receiver.stop()
    names = Counter(span.name for span in receiver.spans)
    child_spans = [s for s in receiver.spans if any(a.key == "gen_ai.tool.call.id" and a.value.string_value.startswith("c")
                                                    for a in s.attributes)]
    assert len(child_spans) == count, names  # the child's tool spans: each once
    assert len(set(receiver.span_ids)) == len(receiver.span_ids)


def test_trace_file_lines_of_other_processes_survive_a_failed_write(run_python, tmp_path):
    path = tmp_path / "shared.jsonl"
    code = r"""
import resource, signal
from orch_otel.tracefiles import LineFile
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
mine, theirs = LineFile(PATH, append=True), LineFile(PATH, append=True)  # two writers, one file
mine.write(b'{"w": "mine", "i": 0}\n')
for i in range(20):
    theirs.write(b'{"w": "theirs", "i": %d}\n' % i)
size = PATH.stat().st_size
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, hard))
try:
    mine.write(b'{"w": "mine", "i": 1, "pad": "' + b"x" * 200 + b'"}\n')
except OSError:
    print("failed")
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
theirs.write(b'{"w": "theirs", "i": 20}\n')
""".replace("PATH", f"__import__('pathlib').Path({str(path)!r})")
    done = run_python(code)
    assert done.returncode == 0 and done.stdout.strip() == "failed", done.stderr
    lines = [orjson.loads(raw) for raw in path.read_bytes().splitlines()]
    assert [line["i"] for line in lines if line["w"] == "theirs"] == list(range(21))
    assert [line["i"] for line in lines if line["w"] == "mine"] == [0]
