"""Readers: every input format gives the same span records; the fast OTLP JSON
path agrees with google.protobuf.json_format decoding."""

from __future__ import annotations

import base64
import math

import orjson
import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offline_support import collector_json, framed, json_lines, otlp_line, proto_file, record_demo_runs, traces_data, zstd
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status, TracesData
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from orch_otel.exporters.span_dump import SpanDumpExporter
from orch_otel.offline.otlp_json import decode_traces_data
from orch_otel.offline.otlp_proto import decode_message
from orch_otel.offline.readers import input_files, read_file
from orch_otel.offline.records import Chunk, from_dump
from orch_otel.spans import SpanRecord, from_readable_span, to_dump


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return record_demo_runs(tmp_path_factory.mktemp("live"), runs=1)


def spans_of(path) -> list[SpanRecord]:
    out = []
    for chunk in read_file(path):
        assert chunk.problems == []
        out.extend(chunk.spans)
    return out


def key(spans):
    return sorted(spans, key=lambda s: s.span_id)


@pytest.mark.parametrize("fmt", ["json", "json.zst", "proto", "proto.zst", "proto-framed-zstd", "json-framed-zstd", "dump"])
def test_every_format_reads_the_same_records(recorded, tmp_path, fmt):
    _, _, spans = recorded
    expected = key(from_readable_span(s) for s in spans)
    batches = [spans[i:i + 5] for i in range(0, len(spans), 5)]
    path = tmp_path / f"in.{fmt}"
    if fmt == "json":
        path.write_bytes(json_lines(batches))
    elif fmt == "json.zst":
        path.write_bytes(zstd(json_lines(batches)))
    elif fmt == "proto":
        path.write_bytes(proto_file(batches))
    elif fmt == "proto.zst":
        path.write_bytes(zstd(proto_file(batches)))
    elif fmt == "proto-framed-zstd":
        path.write_bytes(proto_file(batches, compress=True))
    elif fmt == "json-framed-zstd":  # Collector format: json + compression: zstd
        path.write_bytes(framed((orjson.dumps(collector_json(traces_data(b))) for b in batches), compress=True))
    else:
        provider = TracerProvider()
        exporter = SpanDumpExporter(tmp_path)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        exporter.export(spans)
        exporter.shutdown()
        path = exporter.path
    got = spans_of(path)
    assert len(got) == len(spans)
    assert key(got) == expected


def test_parent_is_remote_and_resource_survive(recorded, tmp_path):
    _, _, spans = recorded
    path = tmp_path / "in.json"
    path.write_bytes(json_lines([spans]))
    got = {s.span_id: s for s in spans_of(path)}
    for span in spans:
        record = got[format(span.context.span_id, "016x")]
        assert record.resource == dict(span.resource.attributes)
        assert record.parent_is_remote is False


def test_a_live_span_copy_keeps_events_links_status_and_scope_and_a_plain_span_has_none():
    """The live exporter's copy of an SDK span (``from_readable_span``), field by field."""
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("orch_otel", "9.9")
    with tracer.start_as_current_span("plain") as plain:
        pass
    link = otel_trace.Link(plain.get_span_context(), {"why": "follows"})
    with tracer.start_as_current_span("rich", links=[link], kind=otel_trace.SpanKind.CLIENT,
                                      attributes={"k": "v", "n": 2}) as rich:
        rich.add_event("orch.decision", {"orch.decision": "stop"}, timestamp=123)
        rich.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, "boom"))
    by_name = {s.name: from_readable_span(s) for s in memory.get_finished_spans()}
    bare, full = by_name["plain"], by_name["rich"]
    assert (bare.events, bare.links, bare.status, bare.status_message, bare.kind) == ((), (), "unset", "", "internal")
    assert (bare.parent_id, bare.parent_is_remote, bare.scope, bare.scope_version) == (None, False, "orch_otel", "9.9")
    assert full.attributes == {"k": "v", "n": 2} and type(full.attributes) is dict
    assert [(e.name, e.time_ns, dict(e.attributes)) for e in full.events] == [("orch.decision", 123, {"orch.decision": "stop"})]
    assert [(li.trace_id, li.span_id, dict(li.attributes)) for li in full.links] == [(bare.trace_id, bare.span_id, {"why": "follows"})]
    assert (full.status, full.status_message, full.kind) == ("error", "boom", "client")
    assert len(full.trace_id) == 32 and len(full.span_id) == 16 and full.end_ns >= full.start_ns > 0


def test_collector_json_variants_are_accepted(tmp_path):
    """int64 as numbers or strings, enum names, unknown fields, base64 ids, bytesValue."""
    tid, sid = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    line = {"resourceSpans": [{"resource": {"attributes": [], "droppedAttributesCount": 0}, "unknownField": 1,
            "scopeSpans": [{"scope": {"name": "x"}, "spans": [
                {"traceId": tid.upper(), "spanId": sid, "name": "a", "startTimeUnixNano": 5, "endTimeUnixNano": "9",
                 "status": {"code": "STATUS_CODE_ERROR", "message": "boom"}, "kind": "SPAN_KIND_SERVER", "extra": [1],
                 "attributes": [{"key": "b", "value": {"bytesValue": base64.b64encode(b"\x00\xff").decode()}},
                                {"key": "d", "value": {"doubleValue": "NaN"}}, {"key": "i", "value": {"intValue": -3}},
                                {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "z", "value": {"boolValue": True}}]}}},
                                {"key": "empty", "value": {}}]},
                {"traceId": base64.b64encode(bytes.fromhex(tid)).decode(), "spanId": base64.b64encode(bytes.fromhex("1" * 16)).decode(),
                 "parentSpanId": sid, "flags": 0x300, "startTimeUnixNano": "6", "endTimeUnixNano": "7"}]}]}]}
    chunk = Chunk("x:1")
    decode_traces_data(line, chunk)
    assert chunk.problems == []
    a, b = chunk.spans
    assert (a.trace_id, a.span_id, a.start_ns, a.end_ns, a.status, a.status_message) == (tid, sid, 5, 9, "error", "boom")
    assert a.attributes["b"] == "AP8=" and math.isnan(a.attributes["d"]) and a.attributes["i"] == -3
    assert a.attributes["kv"] == {"z": True} and a.attributes["empty"] is None
    assert (b.trace_id, b.span_id, b.parent_id, b.parent_is_remote) == (tid, "1" * 16, sid, True)


def test_span_dump_round_trip():
    span = SpanRecord("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", None, "n", 1, 2, "ok", "",
                      {"a": ("x", "y"), "b": 1.5, "c": True}, resource={"service.name": "s"})
    assert from_dump(orjson.loads(orjson.dumps(to_dump(span)))) == span


def test_directories_are_searched_for_log_files(tmp_path):
    (tmp_path / "a.json").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.pb.zst").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / ".hidden.json").write_bytes(b"")
    files, missing = input_files([tmp_path, tmp_path / "nope.json"])
    assert [f.relative_to(tmp_path).as_posix() for f in files] == ["a.json", "sub/b.pb.zst"]
    assert missing == [tmp_path / "nope.json"]


# -- the fast JSON path against json_format -----------------------------------------------------

ids8 = st.binary(min_size=8, max_size=8).filter(any)
ids16 = st.binary(min_size=16, max_size=16).filter(any)
scalars = st.one_of(
    st.builds(lambda v: AnyValue(string_value=v), st.text(max_size=8)),
    st.builds(lambda v: AnyValue(int_value=v), st.integers(-(2**63), 2**63 - 1)),
    st.builds(lambda v: AnyValue(double_value=v), st.floats(allow_nan=False)),
    st.builds(lambda v: AnyValue(bool_value=v), st.booleans()),
    st.builds(lambda v: AnyValue(bytes_value=v), st.binary(max_size=6)),
    st.just(AnyValue()),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.builds(lambda vs: AnyValue(array_value=ArrayValue(values=vs)), st.lists(inner, max_size=3)),
    st.builds(lambda kvs: AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key=k, value=v) for k, v in kvs])),
              st.lists(st.tuples(st.text(max_size=3), inner), max_size=3)),
), max_leaves=6)
attrs = st.lists(st.builds(lambda k, v: KeyValue(key=k, value=v), st.text(max_size=6), values), max_size=4)


@st.composite
def otlp_spans(draw):
    start = draw(st.integers(0, 2**62))
    span = Span(trace_id=draw(ids16), span_id=draw(ids8), name=draw(st.text(max_size=8)),
                start_time_unix_nano=start, end_time_unix_nano=start + draw(st.integers(0, 10**12)),
                attributes=draw(attrs), flags=draw(st.sampled_from([0, 0x100, 0x300])), kind=draw(st.integers(0, 5)),
                status=Status(code=draw(st.sampled_from([0, 1, 2])), message=draw(st.text(max_size=5))))
    if draw(st.booleans()):
        span.parent_span_id = draw(ids8)
    for _ in range(draw(st.integers(0, 2))):
        span.events.add(time_unix_nano=draw(st.integers(0, 2**62)), name=draw(st.text(max_size=5)), attributes=draw(attrs))
    for _ in range(draw(st.integers(0, 1))):
        span.links.add(trace_id=draw(ids16), span_id=draw(ids8), attributes=draw(attrs))
    return span


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(otlp_spans(), min_size=1, max_size=4), attrs)
def test_fast_json_path_equals_json_format_decoding(spans, resource_attrs):
    message = TracesData(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    message.resource_spans[0].resource.attributes.extend(resource_attrs)
    text = orjson.dumps(collector_json(message))
    fast = Chunk("f:1")
    decode_traces_data(orjson.loads(text), fast)
    # json_format decoding of the same text (after putting the ids back in proto3's base64)
    obj = orjson.loads(text)
    for rs in obj["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if s.get(k):
                        s[k] = base64.b64encode(bytes.fromhex(s[k])).decode()
                for link in s.get("links", []):
                    for k in ("traceId", "spanId"):
                        link[k] = base64.b64encode(bytes.fromhex(link[k])).decode()
    slow = Chunk("s:1")
    decode_message(json_format.ParseDict(obj, TracesData()).SerializeToString(), slow)
    assert fast.problems == [] and slow.problems == []
    assert fast.spans == slow.spans
    direct = Chunk("d:1")
    decode_message(message.SerializeToString(), direct)
    assert direct.spans == fast.spans


def test_hand_made_otlp_lines_round_trip():
    span = SpanRecord("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "a7ad6b7169203331", "n", 1, 2, "error", "",
                      {"a": ("x", "y"), "n": 3, "f": 1.5, "t": True}, parent_is_remote=True)
    chunk = Chunk("x:1")
    decode_traces_data(orjson.loads(otlp_line([span])), chunk)
    assert chunk.spans == [span]
