"""Fuzzing ``convert`` with hypothesis: malformed JSON, wrong types, bad ids,
truncated protobuf, parent cycles and duplicate span ids give clean errors,
never a crash, and nothing is silently lost:
spans read == spans converted + spans quarantined + duplicates dropped."""

from __future__ import annotations

import orjson
import pytest
from conftest import check_trace
from fuzz_strategies import lines, span_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offline_support import framed, otlp_span

from orch_otel.offline import Options, convert_inputs
from orch_otel.offline.otlp_proto import _traces_data_type
from orch_otel.tracefiles import read_lines

pytestmark = pytest.mark.usefixtures("columnar_everywhere")  # the fuzz corpus runs through the columnar reader too
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def check_outputs(out, summary, spans_in: int) -> None:
    assert summary.spans == spans_in
    assert summary.spans == summary.converted_spans + summary.quarantined_spans + summary.duplicates
    traces = [line.trace for line in read_lines(out)] if out.exists() else []
    assert len(traces) == summary.traces
    for trace in traces:
        check_trace(trace)
    quarantined = out.with_name(out.name + ".quarantine")
    if spans_in == 0:  # nothing usable: exit 2, and nothing is written (no earlier output gets replaced)
        assert summary.exit_code == 2 and not out.exists() and not quarantined.exists()
        return
    rows = [orjson.loads(x) for x in quarantined.read_bytes().splitlines()] if quarantined.exists() else []
    assert sum(r["kind"] == "span" for r in rows) == summary.quarantined_spans
    assert sum(r["kind"] == "record" for r in rows) == summary.bad_records
    assert summary.exit_code == (1 if rows else 0)


@FUZZ
@given(st.lists(lines(), min_size=1, max_size=8), st.sampled_from([0, 3, 10_000]), st.integers(1, 3))
def test_fuzzed_otlp_json_never_crashes_or_loses_spans(tmp_path_factory, data, linger, max_open):
    tmp = tmp_path_factory.mktemp("fuzz")
    src = tmp / "in.json"
    src.write_bytes(b"".join(line for line, _, _ in data))
    out = tmp / "out.jsonl"
    summary = convert_inputs([src], out, options=Options(linger=linger, max_open_traces=max_open, check=True))
    check_outputs(out, summary, sum(n for _, n, _ in data))
    assert summary.bad_records == sum(bad for _, _, bad in data)


@FUZZ
@given(st.lists(st.lists(span_records(), min_size=1, max_size=4), min_size=1, max_size=4), st.data())
def test_fuzzed_protobuf_truncation_and_corruption(tmp_path_factory, batches, data):
    tmp = tmp_path_factory.mktemp("fuzzpb")
    TracesData = _traces_data_type()
    from google.protobuf import json_format

    payloads = []
    for batch in batches:
        obj = {"resourceSpans": [{"scopeSpans": [{"spans": [otlp_span(s) for s in batch]}]}]}
        for rs in obj["resourceSpans"]:
            for s in rs["scopeSpans"][0]["spans"]:
                import base64

                for k in ("traceId", "spanId", "parentSpanId"):
                    if k in s:
                        s[k] = base64.b64encode(bytes.fromhex(s[k])).decode()
        payloads.append(json_format.ParseDict(obj, TracesData()).SerializeToString())
    blob = framed(payloads)
    cut = data.draw(st.integers(0, len(blob)))
    flip = data.draw(st.one_of(st.none(), st.integers(0, max(0, cut - 1))))
    corrupted = bytearray(blob[:cut])
    if flip is not None and corrupted:
        corrupted[flip] ^= 0xFF
    src = tmp / "in.pb"
    src.write_bytes(bytes(corrupted))
    out = tmp / "out.jsonl"
    summary = convert_inputs([src], out, options=Options(check=True))
    spans_in = summary.spans  # unknowable up front once bytes are flipped; the balance must still hold
    check_outputs(out, summary, spans_in)
    if flip is None:  # clean truncation: every whole message is read, the cut one reported
        whole = 0
        offset = 0
        for payload, batch in zip(payloads, batches):
            offset += 4 + len(payload)
            if offset <= cut:
                whole += len(batch)
        assert summary.spans == whole
        assert summary.bad_records == (0 if cut == len(blob) or cut in _boundaries(payloads) else 1)


def _boundaries(payloads: list[bytes]) -> set[int]:
    out, offset = {0}, 0
    for payload in payloads:
        offset += 4 + len(payload)
        out.add(offset)
    return out
