"""One span-dump writer: the line the spool and the span dump exporter write
(``dump_line``) is the JSON of ``to_dump``, byte for byte, for any attribute
values, and the spool keeps a span whose attributes hold bytes."""

from __future__ import annotations

import base64
from types import MappingProxyType

import orjson

from orch_otel.exporters.spool import SpanSpool, read_segment, spool_files
from orch_otel.offline.records import from_dump
from orch_otel.spans import EventRecord, LinkRecord, SpanRecord, dump_line, to_dump

TRACE, SPAN, PARENT = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", "00f067aa0ba902b7"


def _record(**attributes) -> SpanRecord:
    return SpanRecord(TRACE, SPAN, PARENT, "invoke_agent a", 10, 20, "error", "boom",
                      attributes=attributes,
                      events=(EventRecord("orch.decision", 15, {"raw": b"\x00\x01", "n": 2}),),
                      links=(LinkRecord(TRACE, PARENT, {"why": ("x", b"y")}),),
                      resource={"service.name": "s"}, kind="client", scope="orch_otel", scope_version="1")


def test_dump_line_is_the_json_of_to_dump_for_every_kind_of_value():
    record = _record(text="t", number=1.5, flag=True, none=None, array=("a", "b"), nested={"k": [1, {"z": b"\xff"}]},
                     blob=b"\x00\xff", proxy=MappingProxyType({"p": 1}), numbered={7: "seven"})
    line = dump_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line == orjson.dumps(to_dump(record)) + b"\n"
    data = orjson.loads(line)
    assert data["attributes"]["blob"] == base64.b64encode(b"\x00\xff").decode()  # bytes as base64 text
    assert data["attributes"]["numbered"] == {"7": "seven"}  # keys as text
    assert data["events"] == [["orch.decision", 15, {"raw": "AAE=", "n": 2}]]
    assert data["links"] == [[TRACE, PARENT, {"why": ["x", "eQ=="]}]]


def test_a_dump_line_reads_back_as_the_same_record():
    record = SpanRecord(TRACE, SPAN, PARENT, "chat m", 10, 20, attributes={"array": ("a", "b"), "number": 3},
                        events=(EventRecord("e", 15, {"n": 2}),), links=(LinkRecord(TRACE, PARENT, {}),),
                        resource={"service.name": "s"}, scope="orch_otel", scope_version="1")
    assert from_dump(orjson.loads(dump_line(record))) == record


def test_the_spool_keeps_a_span_whose_attributes_hold_bytes(tmp_path):
    spool = SpanSpool(tmp_path, max_bytes=1 << 20)
    assert spool.append(_record(blob=b"\x00\xff", text="t"))
    spool.close()
    ((record, problem),) = [row for path in spool_files(tmp_path) for row in read_segment(path)]
    assert problem is None
    assert record.span_id == SPAN and record.attributes == {"blob": "AP8=", "text": "t"}
