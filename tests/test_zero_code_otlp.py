"""Zero-code OTLP export: ``opentelemetry-instrument`` with ``OTEL_TRACES_EXPORTER=orch_otel``
and an OTLP endpoint sends every span once, through the durable spool, to a real
OTLP receiver over OTLP/HTTP (the default) or OTLP/gRPC, and writes trace files too."""

from __future__ import annotations

import subprocess
import sys

import pytest
from otlp_receiver import OTLPReceiver, free_port
from zero_code_support import APP, APP_SPANS, APP_TASK_IDS, assert_zero_code_installed, spooled_names, written_task_ids

from orch_otel.exporters.spool import spool_files


@pytest.fixture(scope="module", autouse=True)
def zero_code_installed():
    assert_zero_code_installed()


@pytest.fixture
def receiver(request):
    started = OTLPReceiver(free_port(), protocol=getattr(request, "param", "http/protobuf")).start()
    yield started
    started.stop()


def run_app(run_zero_code, tmp_path, **env):
    result = run_zero_code(APP, tmp_path / "traces", env={"ORCH_OTEL_SPOOL_DIR": str(tmp_path / "spool"), **env})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "app done"
    return result


def assert_delivered_once(receiver: OTLPReceiver, tmp_path) -> None:
    assert receiver.names() == APP_SPANS
    assert len(set(receiver.span_ids)) == len(receiver.span_ids) == 18  # each span once
    assert written_task_ids(tmp_path / "traces") == APP_TASK_IDS  # trace files as well
    assert spool_files(tmp_path / "spool") == []  # every spooled span was acknowledged


def test_documented_http_recipe_delivers_every_span_once_and_writes_trace_files(run_zero_code, tmp_path, receiver):
    # the recipe: OTEL_TRACES_EXPORTER=orch_otel and the endpoint; no protocol set, so
    # opentelemetry-distro defaults it to grpc in-process, which must not win over OTLP's http/protobuf
    run_app(run_zero_code, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url)
    assert_delivered_once(receiver, tmp_path)


@pytest.mark.parametrize("receiver", ["grpc"], indirect=True)
def test_grpc_recipe_delivers_every_span_once(run_zero_code, tmp_path, receiver):
    run_app(run_zero_code, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url, OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    assert_delivered_once(receiver, tmp_path)


@pytest.mark.parametrize("exporters", ["otlp,orch_otel", "orch_otel,otlp"])
def test_listing_otlp_too_sends_once_through_the_spool_with_a_warning(run_zero_code, tmp_path, receiver, exporters):
    # the README's old recipe: the SDK's own `otlp` exporter (gRPC by the distro's default,
    # to the HTTP port) is retired in favour of orch-otel's spooled export
    result = run_app(run_zero_code, tmp_path, OTEL_TRACES_EXPORTER=exporters, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url)
    assert_delivered_once(receiver, tmp_path)
    assert result.stderr.count("orch-otel sends OTLP itself") == 1
    assert "StatusCode.UNAVAILABLE" not in result.stderr  # no gRPC attempt against the HTTP port


def test_named_grpc_exporter_fixes_the_protocol(run_zero_code, tmp_path):
    receiver = OTLPReceiver(free_port(), protocol="grpc").start()
    try:
        run_app(run_zero_code, tmp_path, OTEL_TRACES_EXPORTER="otlp_proto_grpc,orch_otel",
                OTEL_EXPORTER_OTLP_ENDPOINT=receiver.base_url, OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf")
    finally:
        receiver.stop()
    assert_delivered_once(receiver, tmp_path)


def test_collector_down_keeps_every_span_in_the_spool_for_replay(run_zero_code, tmp_path):
    port = free_port()  # nothing listens there during the run
    result = run_app(run_zero_code, tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}",
                     ORCH_OTEL_SHUTDOWN_TIMEOUT_MS="1000")
    assert written_task_ids(tmp_path / "traces") == APP_TASK_IDS  # trace files do not wait for the collector
    assert spooled_names(tmp_path / "spool") == APP_SPANS
    assert "orch-otel spool replay" in result.stderr
    receiver = OTLPReceiver(port).start()  # the collector comes back
    try:
        replay = subprocess.run([sys.executable, "-m", "orch_otel", "spool", "replay", str(tmp_path / "spool"),
                                 "--endpoint", receiver.base_url], capture_output=True, text=True, timeout=120)
    finally:
        receiver.stop()
    assert replay.returncode == 0, replay.stderr
    assert receiver.names() == APP_SPANS
    assert spool_files(tmp_path / "spool") == []


def test_without_an_endpoint_nothing_is_sent_and_no_spool_is_made(run_zero_code, tmp_path):
    result = run_app(run_zero_code, tmp_path)
    assert written_task_ids(tmp_path / "traces") == APP_TASK_IDS
    assert not (tmp_path / "spool").exists()
    assert "orch-otel" not in result.stderr
