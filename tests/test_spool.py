"""No data loss: counted queue drops, the durable spool, SIGKILL recovery, spool replay."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

import pytest
from opentelemetry import metrics
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OTLPReceiver, free_port

from orch_otel import Recorder
from orch_otel.exporters.batching import AccountedBatchSpanProcessor
from orch_otel.exporters.durable import DurableBatchSpanProcessor
from orch_otel.exporters.spool import read_segment, spool_files

_metric_reader = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def meter_provider():
    metrics.set_meter_provider(MeterProvider(metric_readers=[_metric_reader]))


def lost_metric() -> dict[str, int]:
    found: dict[str, int] = {}
    data = _metric_reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                if metric.name == "orch_otel.spans.lost":
                    for point in metric.data.data_points:
                        key = f"{point.attributes['component']}/{point.attributes['reason']}"
                        found[key] = point.value
    return found


def pipeline(processor) -> tuple[Recorder, InMemorySpanExporter]:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    seen = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(seen))
    return Recorder(tracer_provider=provider), seen


def runs(recorder: Recorder, count: int) -> None:
    for i in range(count):
        with recorder.agent(f"lead{i}"):
            with recorder.agent("worker"):
                with recorder.tool("search", call_id=f"c{i}"):
                    pass


def ids(spans) -> list[str]:
    return [format(s.context.span_id, "016x") for s in spans]


class BlockingExporter(SpanExporter):
    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans):
        self.entered.set()
        self.release.wait(10)
        self.exported += len(spans)
        return SpanExportResult.SUCCESS


def test_queue_drops_are_counted_warned_and_metered(caplog):
    exporter = BlockingExporter()
    processor = AccountedBatchSpanProcessor(exporter, max_queue_size=4, max_export_batch_size=4,
                                            schedule_delay_millis=60_000, component="blocking")
    recorder, _ = pipeline(processor)
    with caplog.at_level(logging.WARNING):
        for i in range(4):
            with recorder.agent(f"a{i}"):
                pass
        assert exporter.entered.wait(5), "the worker takes the first batch and blocks in export"
        for i in range(10):  # the queue holds 4 of these; 6 are dropped
            with recorder.agent(f"b{i}"):
                pass
    assert processor.losses.counts == {"queue_full": 6}
    assert any("6 span(s) lost" in r.getMessage() or "span(s) lost" in r.getMessage() for r in caplog.records)
    exporter.release.set()
    processor.force_flush()
    processor.shutdown()
    assert exporter.exported == 8
    assert lost_metric()["blocking/queue_full"] == 6


def test_collector_down_then_up_loses_nothing_and_keeps_order(tmp_path):
    receiver = OTLPReceiver(free_port())
    processor = DurableBatchSpanProcessor(OTLPSpanExporter(endpoint=receiver.endpoint, timeout=1), tmp_path / "spool",
                                          retry_interval_s=0.01, schedule_delay_millis=60_000)
    recorder, seen = pipeline(processor)
    runs(recorder, 5)  # collector down
    processor.force_flush()
    before = ids(seen.get_finished_spans())
    assert len(before) == 15 and processor.sender.failed == set(before)
    assert sum(1 for path in spool_files(tmp_path / "spool") for _ in read_segment(path)) == 15
    receiver.start()
    try:
        runs(recorder, 5)  # collector back
        assert processor.force_flush()
        after = ids(seen.get_finished_spans())[15:]
        assert sorted(receiver.span_ids) == sorted(before + after)  # all of them, each once
        assert len(receiver.span_ids) == 30
        first_new = min(receiver.span_ids.index(i) for i in after)
        assert max(receiver.span_ids.index(i) for i in before) < first_new  # spool re-sent first, in order
        processor.shutdown()
    finally:
        receiver.stop()
    assert processor.losses.total == 0
    assert spool_files(tmp_path / "spool") == []


def test_full_spool_reports_the_loss_with_a_count(tmp_path, caplog):
    port = free_port()  # nothing listens there
    processor = DurableBatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces", timeout=1),
                                          tmp_path / "spool", max_spool_bytes=3_000, retry_interval_s=60,
                                          schedule_delay_millis=60_000, component="tiny")
    recorder, seen = pipeline(processor)
    with caplog.at_level(logging.WARNING):
        runs(recorder, 7)  # 21 spans, far more than 3 kB of spool
        processor.force_flush()
        processor.shutdown()
    spooled = sum(1 for path in spool_files(tmp_path / "spool") for record, _ in read_segment(path) if record)
    total = len(seen.get_finished_spans())
    assert total == 21 and 0 < spooled < total
    assert processor.losses.counts == {"spool_full": total - spooled}
    assert lost_metric()["tiny/spool_full"] == total - spooled
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "span(s) lost" in messages and "orch-otel spool replay" in messages


CHILD = """
import sys, time
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from orch_otel import Recorder
from orch_otel.exporters.durable import DurableBatchSpanProcessor
provider = TracerProvider()
provider.add_span_processor(DurableBatchSpanProcessor(
    OTLPSpanExporter(endpoint=sys.argv[1], timeout=1), sys.argv[2], schedule_delay_millis=600_000))
recorder = Recorder(tracer_provider=provider)
i = 0
while True:
    with recorder.agent(f"agent{i}") as run:
        pass
    print(format(run.span.get_span_context().span_id, "016x"), flush=True)  # printed only after it ended
    i += 1
    time.sleep(0.002)
"""


def test_sigkill_mid_run_every_ended_span_is_recovered_by_replay(tmp_path):
    receiver = OTLPReceiver(free_port())
    spool = tmp_path / "spool"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    child = subprocess.Popen([sys.executable, str(script), receiver.endpoint, str(spool)],
                             stdout=subprocess.PIPE, text=True)
    ended = [child.stdout.readline().strip() for _ in range(50)]
    os.kill(child.pid, signal.SIGKILL)
    ended += [line.strip() for line in child.stdout.read().splitlines() if line.strip()]
    child.wait(10)
    assert child.returncode == -signal.SIGKILL
    receiver.start()
    try:
        result = subprocess.run([sys.executable, "-m", "orch_otel", "spool", "replay", str(spool),
                                 "--endpoint", f"http://127.0.0.1:{receiver.port}"],
                                capture_output=True, text=True, timeout=120)
    finally:
        receiver.stop()
    assert result.returncode == 0, result.stderr
    assert set(ended) <= set(receiver.span_ids), "every span that ended before the kill reached the collector"
    assert spool_files(spool) == []
    assert f"sent {len(receiver.span_ids)} span(s)" in result.stdout


def test_replay_leaves_the_spool_when_the_collector_is_still_down(tmp_path):
    spool = tmp_path / "spool"
    processor = DurableBatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{free_port()}/v1/traces", timeout=1),
                                          spool, retry_interval_s=60, schedule_delay_millis=60_000)
    recorder, _ = pipeline(processor)
    runs(recorder, 1)
    processor.shutdown()
    assert len(spool_files(spool)) == 1
    result = subprocess.run([sys.executable, "-m", "orch_otel", "spool", "replay", str(spool),
                             "--endpoint", f"http://127.0.0.1:{free_port()}"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "no collector listening" in result.stderr and "1 segment(s) left" in result.stderr
    assert len(spool_files(spool)) == 1


class SlowCollectorExporter(SpanExporter):
    """A collector that answers only after a minute. ``honours_shutdown``: like the
    OTLP exporters between retries, shutdown() ends the wait (the batch fails);
    otherwise the request hangs on regardless (a blackholed network)."""

    def __init__(self, honours_shutdown: bool) -> None:
        self.honours_shutdown = honours_shutdown
        self.answer = threading.Event()
        self.shut_down = False

    def export(self, spans):
        if self.answer.wait(60):
            return SpanExportResult.FAILURE  # stopped before the collector answered
        return SpanExportResult.SUCCESS

    def shutdown(self):
        self.shut_down = True
        if self.honours_shutdown:
            self.answer.set()


@pytest.mark.parametrize("honours_shutdown", [True, False], ids=["retrying", "hanging"])
def test_exit_stops_waiting_for_a_slow_collector_and_the_spans_stay_spooled(tmp_path, caplog, honours_shutdown):
    exporter = SlowCollectorExporter(honours_shutdown)
    processor = DurableBatchSpanProcessor(exporter, tmp_path / "spool", shutdown_timeout_s=0.2,
                                          schedule_delay_millis=60_000)
    recorder, seen = pipeline(processor)
    runs(recorder, 2)  # 6 spans, all still queued when the app exits
    try:
        with caplog.at_level(logging.WARNING):
            processor.shutdown()
        assert exporter.shut_down  # told to give up, long before the collector would have answered
        spooled = [record.span_id for path in spool_files(tmp_path / "spool") for record, _ in read_segment(path)]
        assert sorted(spooled) == sorted(ids(seen.get_finished_spans())) and len(spooled) == 6
        assert processor.losses.total == 0
        assert "orch-otel spool replay" in caplog.text
    finally:
        exporter.answer.set()  # let the abandoned export thread end
