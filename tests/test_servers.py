"""Real servers, stopped the way platforms stop them: gunicorn with uvicorn
workers (with and without ``--preload``), uvicorn alone, a Celery prefork
worker, each sent SIGTERM right after its last answered request, with the
loopback OTLP receiver down for the first part of the traffic. Counts: every
run answered is in the trace files once, complete; after ``spool replay``
every one of its spans reached the collector, none twice."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from deploy_support import RUN, SPANS_PER_RUN, env_for, replay, wait_for, written
from otlp_receiver import OTLPReceiver, free_port

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX servers and signals")

APP = RUN + r'''
import os
import orch_otel
orch_otel.instrument()


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    label = scope["query_string"].decode()
    run(label)  # ended before the answer goes out
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": str(os.getpid()).encode()})
'''


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[dev]')")


def _serve(cmd: list[str], tmp_path: Path, receiver: OTLPReceiver, runs: int) -> tuple[Counter, int]:
    """Start the server, answer ``runs`` requests (the collector comes up half
    way), SIGTERM it after the last answer; returns (pids that answered, exit status)."""
    (tmp_path / "asgi_app.py").write_text(APP)
    server_port = free_port()
    cmd = [part.replace("PORT", str(server_port)) for part in cmd]
    env = env_for(tmp_path / "traces", tmp_path / "spool", receiver.port, ORCH_OTEL_FLUSH_TIMEOUT_MS="500")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    server = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    pids: Counter = Counter()
    try:
        def up() -> bool:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{server_port}/?warmup", timeout=2).read()
                return True
            except OSError:
                assert server.poll() is None, server.stderr.read()
                return False

        wait_for(up, timeout_s=60, what="the server")
        for i in range(runs):
            if i == runs // 2:
                receiver.start()
            with urllib.request.urlopen(f"http://127.0.0.1:{server_port}/?r{i}", timeout=30) as answer:
                pids[answer.read().decode()] += 1
        server.send_signal(signal.SIGTERM)
        status = server.wait(60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return pids, status


def _check(tmp_path: Path, receiver: OTLPReceiver, runs: int) -> Counter:
    complete, incomplete, files = written(tmp_path / "traces")
    wanted = {f"r{i}" for i in range(runs)}
    assert {label for label in complete if label in wanted} == wanted, "every answered run is written"
    assert all(complete[label] == 1 for label in wanted) and not (set(incomplete) & wanted), "once, complete"
    result = replay(tmp_path / "spool", receiver.port)
    assert result.returncode == 0, result.stderr
    delivered = Counter(receiver.span_ids)
    duplicates = sum(n - 1 for n in delivered.values())
    assert duplicates == 0, f"{duplicates} spans sent twice (after replay)"
    assert len(delivered) == (runs + len(complete) - len(wanted)) * SPANS_PER_RUN, "every span delivered"
    return complete


@pytest.mark.parametrize("preload", [False, True], ids=["fork-then-import", "preload"])
def test_gunicorn_uvicorn_workers_lose_nothing_at_sigterm(tmp_path, preload):
    _needs("gunicorn")
    _needs("uvicorn_worker")
    receiver = OTLPReceiver(free_port())
    runs = 60
    cmd = [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "uvicorn_worker.UvicornWorker",
           "--bind", "127.0.0.1:PORT", "--graceful-timeout", "20", *(["--preload"] if preload else []), "asgi_app:app"]
    try:
        pids, status = _serve(cmd, tmp_path, receiver, runs)
        assert status == 0, status
        _check(tmp_path, receiver, runs)
    finally:
        receiver.stop()
    _, _, files = written(tmp_path / "traces")
    owners = {path.name.split("-")[3] for path in files if path.stat().st_size}
    assert set(pids) <= owners, "each worker writes a file of its own"


@pytest.mark.parametrize("launch", ["cli", "uvicorn.run"])
def test_uvicorn_loses_nothing_at_sigterm(tmp_path, launch):
    _needs("uvicorn")
    receiver = OTLPReceiver(free_port())
    runs = 60
    if launch == "cli":
        cmd = [sys.executable, "-m", "uvicorn", "--port", "PORT", "--host", "127.0.0.1", "asgi_app:app"]
    else:  # the app module instruments before uvicorn takes the signals: orch-otel's handler runs last
        (tmp_path / "serve.py").write_text("import sys, uvicorn, asgi_app\n"
                                           "uvicorn.run(asgi_app.app, host='127.0.0.1', port=int(sys.argv[1]))\n")
        cmd = [sys.executable, "serve.py", "PORT"]
    try:
        _, status = _serve(cmd, tmp_path, receiver, runs)
        assert status == -signal.SIGTERM, status  # uvicorn re-raises SIGTERM: the default action, as before
        if launch == "uvicorn.run":  # the handler sent the queue and closed the spool: nothing left to replay
            assert not list((tmp_path / "spool").glob("wal-*.spool"))
        _check(tmp_path, receiver, runs)
    finally:
        receiver.stop()


TASKS = RUN + r'''
import os
from pathlib import Path
from celery import Celery
import orch_otel
orch_otel.instrument()

base = Path(os.environ["BROKER_DIR"])
app = Celery("tasks", broker="filesystem://")
app.conf.broker_transport_options = {"data_folder_in": str(base), "data_folder_out": str(base),
                                     "processed_folder": str(base / "processed"), "store_processed": False}
app.conf.worker_hijack_root_logger = False


@app.task
def record(label):
    run(label)
    (base.parent / "done" / label).touch()  # after the run ended
'''


def test_celery_prefork_worker_loses_nothing_at_sigterm(tmp_path):
    _needs("celery")
    receiver = OTLPReceiver(free_port())
    (tmp_path / "tasks.py").write_text(TASKS)
    for folder in ("broker", "done", "broker/processed"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    env = env_for(tmp_path / "traces", tmp_path / "spool", receiver.port, BROKER_DIR=str(tmp_path / "broker"),
                  ORCH_OTEL_FLUSH_TIMEOUT_MS="500")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    runs = 40
    send = subprocess.run([sys.executable, "-c", "import tasks\n"
                           f"for i in range({runs}): tasks.record.delay(f'r{{i}}')"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert send.returncode == 0, send.stderr
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "tasks", "worker", "--pool", "prefork",
                               "--concurrency", "2", "--without-mingle", "--without-gossip", "--without-heartbeat",
                               "--loglevel", "WARNING"], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(list((tmp_path / "done").iterdir())) >= runs // 2, timeout_s=120, what="half the tasks")
        receiver.start()
        wait_for(lambda: len(list((tmp_path / "done").iterdir())) == runs, timeout_s=120, what="every task")
        worker.send_signal(signal.SIGTERM)  # warm shutdown
        status = worker.wait(60)
        assert status == 0, worker.stderr.read()
        _check(tmp_path, receiver, runs)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        receiver.stop()
