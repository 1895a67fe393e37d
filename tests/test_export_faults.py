"""OTLP export under faults, through a real loopback receiver: the collector
down, answering 503, slow; the spool directory removed mid-run or impossible
to make. A real app (orch-otel's decorators, ``instrument()`` with an OTLP
endpoint) runs in a child process the test drives line by line; every span that
ended is counted by id at the receiver after recovery: each arrives once (a
span whose request a slow collector answered after the exporter gave up may
arrive twice: documented at-least-once delivery). ``flush()`` and exit are
bounded (2 s each by default; the checks allow for a loaded machine)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otlp_receiver import OTLPReceiver, free_port
from zero_code_support import assert_zero_code_installed, written_task_ids

from orch_otel import Recorder
from orch_otel.exporters.spool import DurableBatchSpanProcessor, spool_files
from orch_otel.exporters.trace_file import TraceFileExporter

FLUSH_BOUND_S = 5.0  # for the default 2 s
EXIT_BOUND_S = 8.0  # from the app's last line to the process gone, for the default 2 s

# One run: a workflow, its lead agent, one tool call: three spans, ids printed once ended.
APP = r"""
import json, sys, time
import orch_otel
state = orch_otel.instrument()
otlp = state.processors[-1]

def span_id(invocation):
    return format(invocation.span.get_span_context().span_id, "016x")

def runs(tag, count):
    ended = []
    for i in range(int(count)):
        with orch_otel.workflow("research", task_id=f"{tag}-{i}") as flow:
            with orch_otel.agent("lead") as lead:
                with orch_otel.tool("search") as tool:
                    pass
                ended.append(span_id(tool))
            ended.append(span_id(lead))
        ended.append(span_id(flow))
    return ended

print("ready", type(otlp).__name__, getattr(getattr(otlp, "spool", None), "directory", None), flush=True)
for line in sys.stdin:
    command, *args = line.split()
    if command == "run":
        print("ended", *runs(*args), flush=True)
    elif command == "flush":
        start = time.monotonic()
        flushed = orch_otel.flush()
        print("flush", flushed, time.monotonic() - start, flush=True)
    elif command == "losses":
        print("losses", json.dumps(otlp.losses.counts), flush=True)
    elif command == "exit":
        break
"""


class App:
    """The app in a child process, driven through its stdin."""

    def __init__(self, tmp_path: Path, receiver: OTLPReceiver, *, cwd: Path | None = None, **env: str) -> None:
        script = tmp_path / "app.py"
        script.write_text(APP)
        self.stderr_path = tmp_path / "app.stderr"
        full_env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
                    "ORCH_OTEL_TRACE_DIR": str(tmp_path / "traces"), "ORCH_OTEL_SPOOL_DIR": str(tmp_path / "spool")}
        full_env.update(env)
        for name in [name for name, value in full_env.items() if value is None]:
            del full_env[name]
        with open(self.stderr_path, "w") as stderr:
            self.proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr, text=True, env=full_env, cwd=cwd or tmp_path)
        self.ready = self._read().split()
        self.ended: list[str] = []

    def _read(self) -> str:
        line = self.proc.stdout.readline()
        assert line, f"the app died: {self.stderr()}"
        return line.strip()

    def ask(self, command: str) -> str:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    def run(self, tag: str, count: int) -> list[str]:
        ended = self.ask(f"run {tag} {count}").split()[1:]
        assert len(ended) == 3 * count
        self.ended += ended
        return ended

    def flush(self) -> tuple[bool, float]:
        _, flushed, seconds = self.ask("flush").split()
        return flushed == "True", float(seconds)

    def flush_until_sent(self, tries: int = 20) -> None:
        """After recovery: the background export catches up within a few bounded flushes."""
        for _ in range(tries):
            if self.flush()[0]:
                return
        raise AssertionError(f"flush never succeeded: {self.stderr()}")

    def losses(self) -> dict[str, int]:
        return json.loads(self.ask("losses").split(" ", 1)[1])

    def exit(self) -> float:
        start = time.monotonic()
        self.proc.stdin.write("exit\n")
        self.proc.stdin.close()
        self.proc.wait(60)
        seconds = time.monotonic() - start
        assert self.proc.returncode == 0, self.stderr()
        return seconds

    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def receiver():
    receiver = OTLPReceiver(free_port())
    yield receiver
    receiver.stop()


@pytest.fixture
def grpc_receiver():
    receiver = OTLPReceiver(free_port(), protocol="grpc")
    yield receiver
    receiver.stop()


@pytest.fixture
def app_factory(tmp_path, receiver):
    apps: list[App] = []

    def make(receiver: OTLPReceiver = receiver, **kwargs) -> App:
        apps.append(App(tmp_path, receiver, **kwargs))
        return apps[-1]

    yield make
    for app in apps:
        app.kill()


def replay(spool: Path, receiver: OTLPReceiver) -> None:
    """What the next process or the user does with what an exit left in the spool."""
    if not spool_files(spool):
        return
    result = subprocess.run([sys.executable, "-m", "orch_otel", "spool", "replay", str(spool),
                             "--endpoint", receiver.base_url, "--protocol", receiver.protocol],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert spool_files(spool) == []


def assert_each_delivered_once(receiver: OTLPReceiver, ended: list[str]) -> None:
    delivered = Counter(receiver.span_ids)
    assert set(delivered) == set(ended), "every span that ended reached the collector, and nothing else"
    assert [span for span, count in delivered.items() if count > 1] == []


def assert_quiet(stderr: str) -> None:
    """orch-otel's own warnings are few, and none carries a traceback."""
    assert "Traceback" not in stderr
    assert sum(1 for line in stderr.splitlines() if line.startswith("orch-otel")) <= 6, stderr


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_collector_down_flush_and_exit_are_bounded_and_every_span_arrives_once(tmp_path, protocol, request):
    receiver = request.getfixturevalue("grpc_receiver" if protocol == "grpc" else "receiver")
    app = request.getfixturevalue("app_factory")(receiver=receiver, OTEL_EXPORTER_OTLP_PROTOCOL=protocol)
    app.run("down", 10)
    flushed, seconds = app.flush()
    assert not flushed and seconds < FLUSH_BOUND_S  # the exporter's own retries take 7 s and more
    receiver.start()
    app.run("up", 10)
    app.flush_until_sent()
    assert_each_delivered_once(receiver, app.ended)  # the spooled spans, and the new ones
    receiver.stop()
    app.run("down-again", 10)  # the app exits while the collector is down
    assert app.exit() < EXIT_BOUND_S
    assert spool_files(tmp_path / "spool"), "what the collector did not take stays in the spool"
    receiver.start()
    replay(tmp_path / "spool", receiver)
    assert_each_delivered_once(receiver, app.ended)
    assert_quiet(app.stderr())


def test_a_collector_answering_503_does_not_stall_flush_and_loses_nothing(app_factory, receiver, tmp_path):
    receiver.status = 503
    receiver.start()
    app = app_factory()
    app.run("refused", 10)
    flushed, seconds = app.flush()
    assert not flushed and seconds < FLUSH_BOUND_S  # 503 is retryable: the exporter backs off for 7 s
    assert receiver.refused > 0 and receiver.span_ids == []
    receiver.status = 200
    app.run("accepted", 10)
    app.flush_until_sent()
    assert app.exit() < EXIT_BOUND_S
    replay(tmp_path / "spool", receiver)
    assert_each_delivered_once(receiver, app.ended)
    assert_quiet(app.stderr())


def test_a_slow_collector_does_not_stall_flush_or_exit(app_factory, receiver, tmp_path):
    receiver.delay_s = 6.0  # answers within the exporter's 10 s timeout, but far past the flush bound
    receiver.start()
    app = app_factory()
    app.run("slow", 10)
    flushed, seconds = app.flush()
    assert not flushed and seconds < FLUSH_BOUND_S
    app.run("slow-exit", 10)
    app.flush()  # sends the second batch: it is in flight when the app exits
    assert app.exit() < EXIT_BOUND_S
    receiver.delay_s = 0.0
    replay(tmp_path / "spool", receiver)
    delivered = Counter(receiver.span_ids)
    assert set(delivered) == set(app.ended)
    twice = {span for span, count in delivered.items() if count > 1}
    assert twice <= receiver.slow_span_ids, "only spans a slow request carried after the exporter gave up repeat"


def test_removing_the_spool_directory_mid_run_does_not_stop_export(app_factory, receiver, tmp_path):
    spool = tmp_path / "spool"
    app = app_factory()
    before = app.run("before-removal", 20)
    assert not app.flush()[0]  # collector down: all of it is in the spool
    shutil.rmtree(spool)
    after = app.run("after-removal", 20)  # ended after the removal: spooled in the directory made again
    assert not app.flush()[0]
    assert spool.is_dir()
    receiver.start()
    recovered = app.run("recovered", 20)
    app.flush_until_sent()
    losses = app.losses()
    assert app.exit() < EXIT_BOUND_S
    delivered = Counter(receiver.span_ids)
    assert all(delivered[span] == 1 for span in after + recovered)
    # a span of `before` is either still delivered (it was in the export queue, in memory)
    # or lost with its segment, and counted under that reason
    assert set(losses) <= {"spool_removed"}
    assert sum(delivered[span] for span in before) + losses.get("spool_removed", 0) == len(before)
    assert set(delivered) <= set(app.ended) and max(delivered.values()) == 1
    assert_quiet(app.stderr())


def test_an_unwritable_spool_directory_falls_back_to_the_temp_directory(app_factory, receiver, tmp_path):
    workdir = tmp_path / "readonly"
    workdir.mkdir()
    (workdir / "orch-spool").write_text("a file where the default spool directory would go")
    workdir.chmod(0o555)  # read-only (not for root, which the file above stops all the same)
    temp = tmp_path / "temp"
    temp.mkdir()
    try:
        app = app_factory(cwd=workdir, ORCH_OTEL_SPOOL_DIR=None, TMPDIR=str(temp))  # the default ./orch-spool
        fallback = temp / f"orch-spool-{os.getuid()}"
        assert app.ready == ["ready", "DurableBatchSpanProcessor", str(fallback)]
        app.run("fallback", 10)  # collector down: spooled in the fallback directory
        assert app.exit() < EXIT_BOUND_S
    finally:
        workdir.chmod(0o755)
    stderr = app.stderr()
    assert stderr.count("spooling in") == 1 and str(fallback) in stderr
    receiver.start()
    replay(fallback, receiver)
    assert_each_delivered_once(receiver, app.ended)
    assert_quiet(stderr)


SECRET = "sk-live-0123456789abcdef"


def test_spool_write_failures_log_no_content_and_are_rate_limited(tmp_path, caplog):
    spool = tmp_path / "spool"
    dead = f"http://127.0.0.1:{free_port()}/v1/traces"
    processor = DurableBatchSpanProcessor(OTLPSpanExporter(endpoint=dead, timeout=1), spool, retry_interval_s=60,
                                          schedule_delay_millis=60_000, component="unwritable")
    provider = TracerProvider()
    provider.add_span_processor(processor)
    recorder = Recorder(tracer_provider=provider)
    spool.rmdir()
    spool.write_text("a file now: every spool write fails")
    with caplog.at_level(logging.WARNING):
        for i in range(200):
            try:  # the app's own exception, holding content, is being handled when the span ends
                raise RuntimeError(f"messages=[{{'content': 'my key is {SECRET}'}}]")
            except RuntimeError:
                with recorder.agent(f"agent{i}"):
                    pass
        processor.force_flush()
        processor.shutdown()
    assert SECRET not in caplog.text
    assert all(record.exc_info is None for record in caplog.records)
    spool_warnings = [r.getMessage() for r in caplog.records if "could not write a span to the spool" in r.getMessage()]
    assert len(spool_warnings) == 1 and "NotADirectoryError" in spool_warnings[0]
    assert processor.losses.counts == {"spool_write_failed": 200}  # exported from memory failed: lost, counted


def test_a_trace_that_cannot_be_written_is_logged_without_its_content(tmp_path, caplog):
    exporter = TraceFileExporter(tmp_path / "traces")

    class FailingWriter:  # a write error whose message quotes what it was writing
        def write(self, trace, contents=None):
            raise OSError(f"cannot write {{'content': 'my key is {SECRET}'}}")

        def close(self):
            pass

    exporter.writer = FailingWriter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    recorder = Recorder(tracer_provider=provider)
    with caplog.at_level(logging.WARNING):
        with recorder.agent("lead"):
            pass
    assert exporter.failed_traces == 1
    (record,) = [r for r in caplog.records if "could not write trace" in r.getMessage()]
    assert "OSError" in record.getMessage() and record.exc_info is None
    assert SECRET not in caplog.text


def test_sigkill_mid_run_every_ended_span_is_delivered_after_replay(app_factory, receiver, tmp_path):
    receiver.start()
    app = app_factory()
    app.run("sent", 10)
    app.flush_until_sent()
    app.run("killed", 10)  # ended and spooled; maybe sent, maybe not, when the app dies
    app.proc.kill()
    app.proc.wait(10)
    live = Counter(receiver.span_ids)
    assert max(live.values()) == 1
    replay(tmp_path / "spool", receiver)
    delivered = Counter(receiver.span_ids)
    assert set(delivered) == set(app.ended)
    # documented: a killed process cannot mark what it sent, so replay re-sends its
    # segments whole: a span arrives twice only if it had also arrived before the kill
    assert max(delivered.values()) <= 2
    assert {span for span, count in delivered.items() if count == 2} <= set(live)


OPEN_AT_EXIT = """
import orch_otel
flow = orch_otel.workflow("research")
flow.__enter__()  # never left: the trace is written, incomplete, when the exporters shut down
with orch_otel.agent("lead"):
    pass
print("app done", flush=True)
"""


def test_zero_code_exit_writes_trace_files_before_waiting_for_the_collector(tmp_path, receiver):
    assert_zero_code_installed()
    receiver.delay_s = 60.0  # a collector that takes its time: exit waits the whole shutdown timeout
    receiver.start()
    script = tmp_path / "app.py"
    script.write_text(OPEN_AT_EXIT)
    launcher = shutil.which("opentelemetry-instrument", path=str(Path(sys.executable).parent))
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "orch_otel", "OTEL_METRICS_EXPORTER": "none",
           "OTEL_LOGS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.base_url,
           "OTEL_EXPORTER_OTLP_TIMEOUT": "120", "ORCH_OTEL_SHUTDOWN_TIMEOUT_MS": "60000",
           "ORCH_OTEL_TRACE_DIR": str(tmp_path / "traces"), "ORCH_OTEL_SPOOL_DIR": str(tmp_path / "spool")}
    child = subprocess.Popen([launcher, sys.executable, str(script)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, env=env, cwd=tmp_path)
    try:
        assert child.stdout.readline().strip() == "app done"
        deadline = time.monotonic() + 20  # far less than the 60 s the collector gets at exit
        traces = tmp_path / "traces"
        while time.monotonic() < deadline and not (traces.is_dir() and written_task_ids(traces)):
            time.sleep(0.2)
        assert traces.is_dir() and len(written_task_ids(traces)) == 1  # the open trace, written incomplete
        assert child.poll() is None, "still waiting for the collector, after the trace file was written"
    finally:
        child.kill()
        child.wait(10)
