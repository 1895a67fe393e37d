"""One spool directory, many processes: replay leaves live writers alone, the
byte bound is the directory's; and host safety at setup and at SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter

import pytest
from deploy_support import RUN, SPANS_PER_RUN, env_for, replay, wait_for, written
from otlp_receiver import OTLPReceiver, free_port

from orch_otel.exporters.spool import spool_files

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="flock and signals: POSIX")

LIVE_WRITER = RUN + r'''
import time
from pathlib import Path
import orch_otel
state = orch_otel.instrument()
for i in range(COUNT):
    run(f"w{i}")
assert not orch_otel.flush()  # collector down: all spooled
Path("spooled").touch()
deadline = time.monotonic() + 60
while not Path("go").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
ok = orch_otel.flush()
Path("result").write_text(f"{ok} {state.processors[-1].losses.counts}")
'''


def test_replay_include_live_leaves_a_live_writers_segments_alone(tmp_path):
    receiver = OTLPReceiver(free_port())
    count = 50
    (tmp_path / "writer.py").write_text(LIVE_WRITER.replace("COUNT", str(count)))
    env = env_for(tmp_path / "traces", tmp_path / "spool", receiver.port, ORCH_OTEL_FLUSH_TIMEOUT_MS="20000")
    writer = subprocess.Popen([sys.executable, "writer.py"], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (tmp_path / "spooled").exists(), what="the writer's spans")
        receiver.start()
        done = subprocess.run([sys.executable, "-m", "orch_otel", "spool", "replay", str(tmp_path / "spool"),
                               "--include-live", "--endpoint", f"http://127.0.0.1:{receiver.port}"],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert "sent 0 span(s)" in done.stdout and spool_files(tmp_path / "spool")  # left to their writer
        (tmp_path / "go").touch()
        assert writer.wait(120) == 0, writer.stderr.read()
    finally:
        if writer.poll() is None:
            writer.kill()
        receiver.stop()
    assert (tmp_path / "result").read_text() == "True {}"  # nothing lost, nothing falsely reported lost
    delivered = Counter(receiver.span_ids)
    assert len(delivered) == count * SPANS_PER_RUN and set(delivered.values()) == {1}
    assert not spool_files(tmp_path / "spool")


FILLER = RUN + r'''
import orch_otel
state = orch_otel.instrument()
for i in range(COUNT):
    run("NAME" + str(i))
orch_otel.flush()  # every export fails (the collector is down): what the spool did not take is lost, counted
print(state.processors[-1].losses.counts.get("spool_full", 0))
import os
os._exit(0)  # leave the segments as they are
'''


def test_the_spool_bound_holds_for_processes_sharing_the_directory(tmp_path):
    bound = 256 * 1024
    count = 400  # 1,200 spans of ~600 bytes each: about 3 bounds per process
    env = env_for(tmp_path / "traces", tmp_path / "spool", free_port(), ORCH_OTEL_SPOOL_MAX_BYTES=str(bound),
                  ORCH_OTEL_FLUSH_TIMEOUT_MS="60000", OTEL_EXPORTER_OTLP_TIMEOUT="0.5")
    procs = []
    for name in "abcd":
        (tmp_path / f"{name}.py").write_text(FILLER.replace("COUNT", str(count)).replace("NAME", name))
        procs.append(subprocess.Popen([sys.executable, f"{name}.py"], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    full = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        full.append(int(out.split()[-1]))
    on_disk = sum(path.stat().st_size for path in spool_files(tmp_path / "spool"))
    assert on_disk <= bound
    assert all(full), f"each process reports spool_full: {full}"
    spooled = sum(1 for path in spool_files(tmp_path / "spool") for _ in open(path, "rb"))
    assert spooled + sum(full) == 4 * count * SPANS_PER_RUN  # every span spooled or counted lost


def test_instrument_without_the_otlp_extra_warns_and_writes_trace_files(run_python, tmp_path):
    code = RUN + r'''
import logging, sys
logging.basicConfig(level=logging.WARNING)
for name in ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"):
    sys.modules[name] = None  # as if the [otlp] extra were not installed: importing it fails
import orch_otel
state = orch_otel.instrument()
run("solo")
print(len(state.processors))
'''
    done = run_python(code, env=env_for(tmp_path / "traces", tmp_path / "spool", free_port()))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]  # trace files only
    assert done.stderr.count("pip install 'orch-otel[otlp]'") == 1
    complete, _, _ = written(tmp_path / "traces")
    assert complete == Counter({"solo": 1})


SIGTERM_APP = RUN + r'''
import os, signal, sys, time
import orch_otel
MODE = sys.argv[1]
theirs = []
if MODE == "theirs":
    signal.signal(signal.SIGTERM, lambda signum, frame: theirs.append(signum))
orch_otel.instrument()
if MODE == "uninstrumented":
    orch_otel.uninstrument()
    print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
for i in range(20):
    run(f"s{i}")
os.kill(os.getpid(), signal.SIGTERM)  # right after the last run: the export queue is still full
deadline = time.monotonic() + 30
while not theirs and time.monotonic() < deadline:
    time.sleep(0.01)
print("handled by the app:", theirs, flush=True)
'''


@pytest.mark.parametrize("mode", ["default", "theirs", "uninstrumented"])
def test_sigterm_sends_the_queue_then_ends_as_before(tmp_path, mode):
    receiver = OTLPReceiver(free_port()).start()
    (tmp_path / "app.py").write_text(SIGTERM_APP)
    env = env_for(tmp_path / "traces", tmp_path / "spool", receiver.port)
    try:
        done = subprocess.run([sys.executable, "app.py", mode], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
    finally:
        receiver.stop()
    if mode == "uninstrumented":  # the handler is gone with orch-otel: the default action at once
        assert done.returncode == -signal.SIGTERM and done.stdout.split() == ["True"]
        return
    complete, _, _ = written(tmp_path / "traces")
    assert complete == Counter({f"s{i}": 1 for i in range(20)})
    if mode == "theirs":  # the app's handler is the app's: it ran, and the process lives on as the app chose
        assert done.returncode == 0 and "handled by the app: [15]" in done.stdout, done.stderr
        return
    assert done.returncode == -signal.SIGTERM, done.stderr  # killed by SIGTERM, as without orch-otel
    assert "handled by the app" not in done.stdout
    assert len(set(receiver.span_ids)) == 20 * SPANS_PER_RUN  # the queue went out before the end
    assert not spool_files(tmp_path / "spool")  # spool closed: nothing for a replay to send again
    assert replay(tmp_path / "spool", free_port()).returncode == 0  # (nothing to send: no collector needed)


def test_a_spool_with_acknowledgements_converts_without_problems(tmp_path):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from orch_otel import Recorder
    from orch_otel.exporters.spool import SpanSpool, acked_in
    from orch_otel.spans import from_readable_span

    seen = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(seen))
    recorder = Recorder(tracer_provider=provider)
    with recorder.agent("lead"):
        with recorder.tool("search", call_id="c1"):
            pass
    spool = SpanSpool(tmp_path / "spool", max_bytes=1 << 20)
    records = [from_readable_span(span) for span in seen.get_finished_spans()]
    for record in records:
        assert spool.append(record)
    spool.ack([records[0].span_id])  # the collector took one; the process then dies (no close)
    [segment] = spool_files(tmp_path / "spool")
    assert acked_in(segment) == {records[0].span_id}
    done = subprocess.run([sys.executable, "-m", "orch_otel", "convert", str(segment), "-o", str(tmp_path / "out.jsonl")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "out.jsonl.quarantine").exists()


HELD_LOCK_APP = r'''
import os, signal, threading, time
import orch_otel
orch_otel.instrument()
print("ready", flush=True)
# SIGTERM lands while this thread holds threading's own bookkeeping lock, as it can when a process is
# stopped at a thread's start or end: the handler must not need that lock to end the process
with threading._active_limbo_lock:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
print("survived", flush=True)
'''


def test_sigterm_while_threadings_lock_is_held_still_ends_the_process(tmp_path):
    (tmp_path / "app.py").write_text(HELD_LOCK_APP)
    env = env_for(tmp_path / "traces")
    done = subprocess.run([sys.executable, "app.py"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["ready"], done.stderr
    assert done.returncode == -signal.SIGTERM, done.stderr  # ended by SIGTERM, as without orch-otel


CHILD_SIGTERM_APP = r'''
import multiprocessing, signal
import orch_otel
orch_otel.instrument()

def action(_):
    return "default" if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else "handled"

if __name__ == "__main__":
    parent = action(None)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        children = set(pool.map(action, range(4)))
    print(parent, *sorted(children))
'''


def test_forked_children_keep_sigterms_default_action(tmp_path):
    """A pool worker blocked in C on its queue's lock would never run a Python
    handler, so Pool.terminate() could wait on it for ever: forked children get
    the default action back (the parent keeps orch-otel's handler)."""
    (tmp_path / "app.py").write_text(CHILD_SIGTERM_APP)
    done = subprocess.run([sys.executable, "app.py"], env=env_for(tmp_path / "traces"), cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["handled", "default"]
