"""A span the collector refuses for good is set aside and export goes on; replay
keeps unreadable lines and the spans' instrumentation scope.

Through the real OTel OTLP exporters and a loopback receiver that answers 413
(gRPC: RESOURCE_EXHAUSTED) to a request over its size limit."""

from __future__ import annotations

import logging

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OTLPReceiver, free_port

from orch_otel._configure import otlp_exporter
from orch_otel.cli import main
from orch_otel.exporters.durable import DurableBatchSpanProcessor
from orch_otel.exporters.rejections import REJECTED_FILE, UNREADABLE_FILE, Refusal, deliver
from orch_otel.exporters.spool import SpanSpool, spool_files
from orch_otel.spans import from_readable_span

LIMIT = 20_000  # bytes per request the receiver takes
HUGE = "x" * 100_000  # one attribute that alone is over the limit
SCOPE = ("orch_otel.tests", "1.2.3")


def provider_with(processor=None) -> tuple[TracerProvider, InMemorySpanExporter]:
    provider = TracerProvider()
    if processor is not None:
        provider.add_span_processor(processor)
    seen = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(seen))
    return provider, seen


def make_spans(provider: TracerProvider, small: int, *, huge_at: int | None = None, prefix: str = "s") -> None:
    tracer = provider.get_tracer(*SCOPE)
    for i in range(small + (huge_at is not None)):
        if i == huge_at:
            with tracer.start_as_current_span("huge") as span:
                span.set_attribute("blob", HUGE)
        else:
            with tracer.start_as_current_span(f"{prefix}{i}"):
                pass


def hex_ids(spans) -> list[str]:
    return [format(s.context.span_id, "016x") for s in spans]


def set_aside(directory) -> list[dict]:
    path = directory / REJECTED_FILE
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


EXPORTERS = {  # how the app's exporter is built, the receiver's limit, the status the set-aside record can name
    "http-orch-otel": (lambda r: otlp_exporter("http/protobuf", r.endpoint), "http/protobuf", LIMIT, 413),
    "http-plain": (lambda r: HttpExporter(endpoint=r.endpoint, timeout=2), "http/protobuf", LIMIT, None),
    "grpc-orch-otel": (lambda r: otlp_exporter("grpc", r.base_url), "grpc", LIMIT, None),
    "grpc-plain": (lambda r: GrpcExporter(endpoint=r.base_url, insecure=True, timeout=2), "grpc", LIMIT, None),
    "http-max-request-size": (lambda r: HttpExporter(endpoint=r.endpoint, timeout=2, max_request_size=LIMIT),
                              "http/protobuf", None, None),  # the exporter drops it before sending
}


@pytest.mark.parametrize("kind", list(EXPORTERS))
def test_one_huge_span_is_set_aside_live_and_every_other_span_is_delivered(tmp_path, kind, capsys, caplog):
    build, protocol, limit, status = EXPORTERS[kind]
    receiver = OTLPReceiver(free_port(), protocol, reject_over_bytes=limit).start()
    spool = tmp_path / "spool"
    try:
        processor = DurableBatchSpanProcessor(build(receiver), spool, retry_interval_s=0.01, flush_timeout_s=120,  # delivery, not the bound
                                              schedule_delay_millis=60_000, component=f"rejects-{kind}")
        provider, seen = provider_with(processor)
        with caplog.at_level(logging.WARNING):
            make_spans(provider, 40, huge_at=17)  # one batch of 41 spans: refused whole at first
            processor.force_flush()
            make_spans(provider, 5, prefix="later")  # ended after the refusal: not blocked behind it
            assert processor.force_flush()
        ended = seen.get_finished_spans()
        huge_id = next(i for s, i in zip(ended, hex_ids(ended)) if s.name == "huge")
        others = [i for i in hex_ids(ended) if i != huge_id]
        assert sorted(receiver.span_ids) == sorted(others) and len(others) == 45  # all the others, each once
        assert receiver.span_ids.index(others[16]) < receiver.span_ids.index(others[17])  # order kept around it
        assert processor.losses.counts == {"rejected": 1}
        assert processor.sender.failed == set()
        processor.shutdown()
    finally:
        receiver.stop()
    assert spool_files(spool) == []
    [entry] = set_aside(spool)
    assert entry["span_id"] == huge_id and entry["name"] == "huge" and entry["attributes"]["blob"] == HUGE
    assert entry["set_aside"]["http_status"] == status
    assert ("413" in entry["set_aside"]["reason"]) == (status == 413)
    assert "set aside in" in caplog.text and HUGE not in caplog.text
    capsys.readouterr()
    assert main(["spool", "status", str(spool)]) == 1  # something is set aside
    out = capsys.readouterr().out
    assert "set aside: 1 span(s) the collector refused" in out and entry["set_aside"]["reason"] in out.replace("\n", "")


def test_spans_spooled_during_an_outage_get_past_a_refused_one_when_the_collector_is_back(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")  # the exporter's own retries through the outage
    receiver = OTLPReceiver(free_port(), reject_over_bytes=LIMIT)  # not started yet: the collector is down
    spool = tmp_path / "spool"
    processor = DurableBatchSpanProcessor(otlp_exporter("http/protobuf", receiver.endpoint), spool,
                                          retry_interval_s=0.01, schedule_delay_millis=60_000)
    provider, seen = provider_with(processor)
    make_spans(provider, 20, huge_at=3)
    assert not processor.force_flush()
    assert len(processor.sender.failed) == 21  # all kept through the outage, none set aside
    assert set_aside(spool) == []
    receiver.start()
    try:
        make_spans(provider, 4, prefix="after")
        assert processor.force_flush()
        processor.shutdown()
    finally:
        receiver.stop()
    ended = hex_ids(seen.get_finished_spans())
    huge_id = ended[3]
    assert sorted(receiver.span_ids) == sorted(i for i in ended if i != huge_id)
    assert receiver.span_ids[:20] == [i for i in ended[:21] if i != huge_id]  # the spooled ones first, in order
    assert [entry["span_id"] for entry in set_aside(spool)] == [huge_id]
    assert spool_files(spool) == []


def closed_spool(directory, provider_spans) -> None:
    """A spool a dead process left: every span spooled, none sent."""
    spool = SpanSpool(directory, max_bytes=64 * 1024 * 1024)
    for span in provider_spans:
        assert spool.append(from_readable_span(span))
    spool.close()


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_replay_sets_the_huge_span_aside_and_sends_all_the_rest(tmp_path, protocol, capsys):
    provider, seen = provider_with()
    make_spans(provider, 30, huge_at=5)
    spool = tmp_path / "spool"
    closed_spool(spool, seen.get_finished_spans())
    ended = seen.get_finished_spans()
    huge_id = hex_ids(ended)[5]
    receiver = OTLPReceiver(free_port(), protocol, reject_over_bytes=LIMIT).start()
    try:
        code = main(["spool", "replay", str(spool), "--protocol", protocol, "--endpoint", receiver.base_url])
    finally:
        receiver.stop()
    err = capsys.readouterr().err
    assert code == 1, err  # invalid data found: a span was set aside
    assert sorted(receiver.span_ids) == sorted(i for i in hex_ids(ended) if i != huge_id)
    assert spool_files(spool) == []
    [entry] = set_aside(spool)
    assert entry["span_id"] == huge_id
    assert entry["set_aside"]["http_status"] == (413 if protocol == "http/protobuf" else None)
    assert "set aside 1 span(s) the collector refused" in err
    assert main(["spool", "status", str(spool)]) == 1
    assert "set aside: 1 span(s)" in capsys.readouterr().out


def test_replay_moves_unreadable_lines_aside_naming_segment_and_line_and_exits_non_zero(tmp_path, capsys):
    provider, seen = provider_with()
    make_spans(provider, 4)
    spool = tmp_path / "spool"
    closed_spool(spool, seen.get_finished_spans())
    [segment] = spool_files(spool)
    lines = segment.read_bytes().splitlines(keepends=True)
    segment.write_bytes(b"".join(lines[:2] + [b'{"trace_id": "not a whole\n'] + lines[2:]))
    receiver = OTLPReceiver(free_port()).start()
    try:
        code = main(["spool", "replay", str(spool), "--endpoint", receiver.base_url])
    finally:
        receiver.stop()
    err = capsys.readouterr().err
    assert code == 1, err
    assert sorted(receiver.span_ids) == sorted(hex_ids(seen.get_finished_spans()))  # the good lines are sent
    [moved] = [orjson.loads(line) for line in (spool / UNREADABLE_FILE).read_bytes().splitlines()]
    assert moved["segment"] == segment.name and moved["line"] == 3
    assert moved["raw"] == '{"trace_id": "not a whole' and moved["reason"].startswith("JSONDecodeError")
    assert f"{segment}:3:" in err and "moved 1 unreadable line(s)" in err
    assert spool_files(spool) == []  # the segment's content is all sent or kept aside
    assert main(["spool", "status", str(spool)]) == 1
    assert "1 unreadable line(s)" in capsys.readouterr().out


def test_replayed_spans_keep_their_scope_name_and_version(tmp_path):
    provider, seen = provider_with()
    make_spans(provider, 3)
    spool = tmp_path / "spool"
    closed_spool(spool, seen.get_finished_spans())
    receiver = OTLPReceiver(free_port()).start()
    try:
        assert main(["spool", "replay", str(spool), "--endpoint", receiver.base_url]) == 0
    finally:
        receiver.stop()
    assert receiver.scopes == {i: SCOPE for i in hex_ids(seen.get_finished_spans())}


def test_collector_down_sets_nothing_aside(tmp_path):
    """A guard: an outage is not a refusal (this held before sets-aside existed too)."""
    spool = tmp_path / "spool"
    exporter = HttpExporter(endpoint=f"http://127.0.0.1:{free_port()}/v1/traces", timeout=1)
    processor = DurableBatchSpanProcessor(exporter, spool, retry_interval_s=60, schedule_delay_millis=60_000)
    provider, seen = provider_with(processor)
    make_spans(provider, 6, huge_at=2)
    assert not processor.force_flush()
    assert processor.sender.failed == set(hex_ids(seen.get_finished_spans()))  # all kept for the retry
    processor.shutdown()
    assert set_aside(spool) == [] and processor.losses.total == 0


class Collector(SpanExporter):
    """Takes any batch without a span named "bad"; ``up=False``: refuses everything."""

    def __init__(self, up: bool = True) -> None:
        self.up = up
        self.requests = 0
        self.received: list[str] = []

    def export(self, spans):
        self.requests += 1
        if not self.up or any(s.name == "bad" for s in spans):
            return SpanExportResult.FAILURE
        self.received += [s.name for s in spans]
        return SpanExportResult.SUCCESS


def test_deliver_finds_each_refused_span_in_few_requests_and_keeps_order():
    provider, seen = provider_with()
    tracer = provider.get_tracer(*SCOPE)
    for i in range(512):
        with tracer.start_as_current_span("bad" if i in (100, 101, 400) else f"s{i}"):
            pass
    collector = Collector()
    aside: list[tuple[str, Refusal]] = []
    unsent = deliver(collector.export, seen.get_finished_spans(), set_aside=lambda s, r: aside.append((s.name, r)))
    assert unsent == [] and [name for name, _ in aside] == ["bad", "bad", "bad"]
    assert collector.received == [f"s{i}" for i in range(512) if i not in (100, 101, 400)]
    assert collector.requests < 80  # a halving search per refused span, plus probes; not one request per span


def test_deliver_sets_nothing_aside_when_the_collector_refuses_even_an_empty_request():
    provider, seen = provider_with()
    make_spans(provider, 8)
    aside: list = []
    unsent = deliver(Collector(up=False).export, seen.get_finished_spans(), set_aside=lambda s, r: aside.append(s))
    assert aside == [] and hex_ids(unsent) == hex_ids(seen.get_finished_spans())
