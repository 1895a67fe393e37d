"""The columnar reader (:mod:`orch_otel.offline.columnar`) and the row-by-row
reader give the same chunks, spans and problems on every input: canonical OTLP
JSON read in Arrow, and anything else handed back to the row path. Random span
forests, valid or not, split across files and shuffled, convert to the same
traces, quarantine and counts either way."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys

import orjson
import pytest
from fuzz_strategies import lines as fuzzed_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offline_support import demo_logs

from orch_otel.offline import Options, convert_inputs, read_file
from orch_otel.offline.columnar import decode_block
from orch_otel.tracefiles import BOM

pytest.importorskip("pyarrow", reason="the columnar reader needs pyarrow (the datasets or ray extra)")
pytestmark = pytest.mark.usefixtures("columnar_everywhere")

T0 = 1_700_000_000_000_000_000
TRACES = [f"{n:032x}" for n in range(1, 5)]
SPANS = [f"{n:016x}" for n in range(1, 9)]
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.builds(lambda s: {"stringValue": s}, st.text(max_size=12)),
    st.builds(lambda i: {"intValue": str(i)}, st.integers(-2**63, 2**63 - 1)),
    st.builds(lambda b: {"boolValue": b}, st.booleans()),
    st.builds(lambda f: {"doubleValue": f}, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda b: {"bytesValue": base64.b64encode(b).decode()}, st.binary(max_size=6)),
)
values = st.one_of(
    scalars,
    st.builds(lambda xs: {"arrayValue": {"values": xs}}, st.lists(scalars, max_size=3)),
    st.builds(lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}},
              st.lists(st.tuples(st.sampled_from("abc"), scalars), max_size=3)),
)
attributes = st.lists(st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from(
    ["gen_ai.operation.name", "gen_ai.agent.name", "orch.targets", "k", ""]), values), max_size=4)


@st.composite
def canonical_spans(draw) -> dict:
    """A span as exporters write it: the shape the columnar path reads."""
    start = T0 + draw(st.integers(0, 10**9))
    span = {"traceId": draw(st.sampled_from(TRACES)), "spanId": draw(st.sampled_from(SPANS)),
            "name": draw(st.text(max_size=8)), "kind": draw(st.integers(0, 5)),
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + draw(st.integers(0, 10**6))),
            "attributes": draw(attributes), "flags": draw(st.sampled_from([0, 0x100, 0x300]))}
    if draw(st.booleans()):
        span["parentSpanId"] = draw(st.sampled_from([*SPANS, ""]))
    if draw(st.booleans()):
        span["status"] = draw(st.sampled_from([{}, {"code": 1}, {"code": 2, "message": "boom"}]))
    if draw(st.booleans()):
        span["events"] = [{"timeUnixNano": str(start), "name": draw(st.sampled_from(["orch.decision", "x"])),
                           "attributes": draw(attributes)}]
    if draw(st.integers(0, 5)) == 0:
        span["links"] = [{"traceId": draw(st.sampled_from(TRACES)), "spanId": draw(st.sampled_from(SPANS)),
                          "attributes": draw(attributes)}]
    return span


# Shapes the row path reads (or refuses) and the columnar path hands back to it
ODD = [
    lambda s: s.update(traceId=s["traceId"].upper()),
    lambda s: s.update(spanId=base64.b64encode(bytes.fromhex(s["spanId"])).decode()),
    lambda s: s.update(startTimeUnixNano=int(s["startTimeUnixNano"])),
    lambda s: s.update(kind="SPAN_KIND_SERVER"),
    lambda s: s.update(name=None),
    lambda s: s.update(attributes=[{"key": "k", "value": {"intValue": 7}}]),
    lambda s: s.update(attributes=[{"key": "k", "value": {"stringValue": "a", "intValue": "1"}}]),
    lambda s: s.update(attributes=[{"key": "k", "value": {}}]),
    lambda s: s.update(attributes=[{"key": "k", "value": {"arrayValue": {"values": [{"arrayValue": {}}]}}}]),
    lambda s: s.update(droppedAttributesCount=2, unknownField={"x": [1]}),
    lambda s: s.pop("startTimeUnixNano"),
    lambda s: s.update(endTimeUnixNano="1"),
    lambda s: s.update(status={"code": 7}),
    lambda s: s.update(traceId="0" * 32),
]


@st.composite
def log_lines(draw) -> list[bytes]:
    """Lines of OTLP JSON: half the logs all canonical; in the others some spans odd, some lines broken."""
    out = []
    odd = draw(st.booleans())
    for _ in range(draw(st.integers(1, 6))):
        spans = draw(st.lists(canonical_spans(), min_size=1, max_size=4))
        for span in spans:
            if odd and draw(st.integers(0, 6)) == 0:
                draw(st.sampled_from(ODD))(span)
        data = {"resourceSpans": [{"resource": {"attributes": draw(attributes)},
                                   "scopeSpans": [{"scope": {"name": "s", "version": "1"}, "spans": spans}]}]}
        text = orjson.dumps(data) if draw(st.booleans()) else json.dumps(data).encode()  # raw UTF-8, or \u escapes
        roll = draw(st.integers(0, 12)) if odd else 99
        if roll == 0:
            text = text[: draw(st.integers(1, len(text) - 1))].replace(b"\n", b" ")
        elif roll == 1:
            text += b" " + text  # two objects on one line
        out.append(text + b"\n")
        if draw(st.integers(0, 8)) == 0:
            out.append(b"\n")
    return out


def _chunks(path, **kwargs) -> list[tuple]:
    return [(c.where, c.spans, [(p.where, p.reason, p.raw, p.span, p.is_span, p.trace_id) for p in c.problems],
             c.skipped, [s.scope_version for s in c.spans]) for c in read_file(path, **kwargs)]


def test_canonical_lines_are_read_in_arrow_as_the_row_path_reads_them(tmp_path):
    spans = [{"traceId": TRACES[0], "spanId": SPANS[i], "parentSpanId": SPANS[0] if i else "", "name": f"s{i}",
              "kind": 1, "startTimeUnixNano": str(T0 + i), "endTimeUnixNano": str(T0 + 10 + i), "flags": 0x300,
              "status": {"code": 2, "message": "bad"} if i == 2 else {},
              "attributes": [{"key": "str", "value": {"stringValue": "é\"\\"}}, {"key": "int", "value": {"intValue": "-3"}},
                             {"key": "bool", "value": {"boolValue": True}}, {"key": "float", "value": {"doubleValue": 2}},
                             {"key": "list", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "1"}]}}},
                             {"key": "map", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}},
                             {"key": "bytes", "value": {"bytesValue": "AQI"}}, {"key": "str", "value": {"stringValue": "last"}}],
              "events": [{"timeUnixNano": str(T0 + 5), "name": "orch.decision",
                          "attributes": [{"key": "orch.decision", "value": {"stringValue": "stop"}}]}] if i == 1 else [],
              "links": [{"traceId": TRACES[1], "spanId": SPANS[3]}] if i == 3 else []} for i in range(4)]
    lines = [orjson.dumps({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "x"}}]},
                                              "scopeSpans": [{"scope": {"name": "orch_otel", "version": "0.1"}, "spans": spans[:2]},
                                                             {"scope": {"name": "other"}, "spans": spans[2:]}]}]}),
             json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans[1:2]}]}]}).encode()]
    path = tmp_path / "in.json"
    path.write_bytes(b"\n".join(lines) + b"\n")
    chunks = decode_block(str(path), [1, 2], path.read_bytes())
    assert chunks is not None, "canonical lines must not fall back to the row path"
    assert [(c.where, c.spans, c.problems) for c in chunks] == [(w, s, p) for w, s, p, _, _ in _chunks(path, columnar=False)]
    first = chunks[0].spans
    assert first[0].attributes == {"str": "last", "int": -3, "bool": True, "float": 2.0, "list": ("a", 1),
                                   "map": {"k": False}, "bytes": "AQI="}
    assert [s.parent_id for s in first] == [None, SPANS[0], SPANS[0], SPANS[0]] and first[1].parent_is_remote
    assert [(s.scope, s.scope_version) for c in chunks for s in c.spans] == [
        ("orch_otel", "0.1"), ("orch_otel", "0.1"), ("other", ""), ("other", ""), ("", "")]
    assert chunks[0].spans[2].status == "error" and chunks[0].spans[3].links[0].span_id == SPANS[3]


@pytest.mark.parametrize("line", [
    b'{"resourceSpans": null}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "%s", "spanId": "%s", "name": null}]}]}]}' % (
        TRACES[0].encode(), SPANS[0].encode()),
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "%s", "spanId": "%s", "attributes": '
    b'[{"key": "k", "value": {"doubleValue": NaN}}]}]}]}]}' % (TRACES[0].encode(), SPANS[0].encode()),
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "%s", "spanId": "%s", "name": "\\ud800"}]}]}]}' % (
        TRACES[0].encode(), SPANS[0].encode()),
    b'{"resourceSpans": [], "resourceSpans": []}',
    b'{"resourceSpans": [{"instrumentationLibrarySpans": []}]}',
    BOM + b'{"resourceSpans": []}',
    b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "%s", "spanId": "%s", "x": %s}]}]}]}' % (
        TRACES[0].encode(), SPANS[0].encode(), b"[" * 200_000 + b"]" * 200_000),
])
def test_shapes_arrow_reads_unlike_orjson_go_to_the_row_path(tmp_path, line):
    """Each of these Arrow would read differently (a null as absent, NaN, a lone
    surrogate, a repeated key), or slowly and then crash (deep nesting): the row path reads them."""
    good = orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": TRACES[1], "spanId": SPANS[1],
                                                                       "startTimeUnixNano": str(T0)}]}]}]})
    path = tmp_path / "in.json"
    path.write_bytes(good + b"\n" + good + b"\n" + line + b"\n")
    assert decode_block(str(path), [2, 3], good + b"\n" + line + b"\n") is None
    assert _chunks(path) == _chunks(path, columnar=False)


@PROPERTY
@given(log_lines(), st.booleans())
def test_columnar_and_row_paths_give_the_same_chunks(tmp_path_factory, lines, shard):
    path = tmp_path_factory.mktemp("col") / "in.json"
    path.write_bytes(b"".join(lines))
    keep = (lambda trace_id: trace_id in TRACES[:2]) if shard else None
    assert _chunks(path, keep=keep) == _chunks(path, keep=keep, columnar=False)


@PROPERTY
@given(st.lists(st.one_of(log_lines(), st.builds(lambda xs: [x[0] for x in xs], st.lists(fuzzed_lines(), max_size=3))),
                min_size=1, max_size=4), st.integers(1, 3), st.randoms(use_true_random=False))
def test_random_forests_split_across_files_convert_the_same_either_way(tmp_path_factory, groups, files, rng: random.Random):
    tmp = tmp_path_factory.mktemp("forest")
    lines = [line for group in groups for line in group]
    rng.shuffle(lines)
    inputs = []
    for k in range(files):
        part = tmp / "in" / f"{k}.json"
        part.parent.mkdir(exist_ok=True)
        part.write_bytes(b"".join(lines[k::files]))
        inputs.append(part)
    outs = {}
    for columnar in (True, False):
        out = tmp / str(columnar) / "out.jsonl"
        summary = convert_inputs(inputs, out, options=Options(columnar=columnar, linger=3, max_open_traces=2))
        quarantine = out.with_name("out.jsonl.quarantine")
        outs[columnar] = (summary.as_dict(), out.read_bytes() if out.exists() else None,
                          quarantine.read_bytes() if quarantine.exists() else None)
    assert outs[True] == outs[False]


def test_recorded_demo_runs_are_read_in_arrow_and_convert_the_same(tmp_path):
    """The demo's real spans, as the Collector writes them, take the columnar path
    (no block falls back) and give the row path's traces byte for byte."""
    logs = demo_logs(tmp_path, runs=3, seed=11, batch=4)
    src = logs / "a.json"
    lines = src.read_bytes().splitlines(keepends=True)
    assert decode_block(str(src), list(range(2, len(lines) + 1)), b"".join(lines[1:])) is not None
    outs = {}
    for columnar in (True, False):
        out = tmp_path / str(columnar) / "out.jsonl"
        summary = convert_inputs([logs], out, options=Options(columnar=columnar))
        outs[columnar] = (summary.as_dict(), out.read_bytes())
    assert outs[True] == outs[False] and outs[True][0]["traces"] == 3


def test_a_small_file_is_read_line_by_line_without_importing_pyarrow(tmp_path):
    """pyarrow's import (about 0.2 s and 60 MiB) is paid back only by large files."""
    src = tmp_path / "in.json"
    src.write_bytes(orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": TRACES[0], "spanId": SPANS[0], "startTimeUnixNano": str(T0),
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_workflow"}}]}]}]}]}) + b"\n")
    code = ("import sys; from orch_otel.offline import convert_inputs; "
            f"s = convert_inputs([{str(src)!r}], {str(tmp_path / 'out.jsonl')!r}); "
            "print(s.traces, 'pyarrow' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["1", "False"]
