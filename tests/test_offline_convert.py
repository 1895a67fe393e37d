"""``orch-otel convert``: live = offline, summary, quarantine, exit codes, assembly rules end to end."""

from __future__ import annotations

import base64
import random

import orjson
import pytest
from conftest import check_trace, decisions_of
from offline_support import json_lines, otlp_line, proto_file, record_demo_runs, zstd

from orch_otel.cli import main
from orch_otel.offline import Options, convert_inputs
from orch_otel.spans import EventRecord, SpanRecord
from orch_otel.tracefiles import load_contents, read_lines

T0 = 1_700_000_000_000_000_000
TID = "0af7651916cd43dd8448eb211c80319c"


def written(path) -> list[dict]:
    return sorted((line.trace for line in read_lines(path)), key=lambda t: t["trace_id"])


def test_offline_equals_live_for_shuffled_batches_in_two_files(tmp_path):
    live, live_contents, spans = record_demo_runs(tmp_path / "live", runs=2)
    assert len(live) == 2 and live_contents
    shuffled = list(spans)
    random.Random(11).shuffle(shuffled)
    batches = [shuffled[i:i + 4] for i in range(0, len(shuffled), 4)]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "b.json").write_bytes(json_lines(batches[1::2]))  # read first: sorted by name below
    (tmp_path / "logs" / "a.pb.zst").write_bytes(zstd(proto_file(batches[0::2])))
    out = tmp_path / "offline" / "traces.jsonl"
    summary = convert_inputs([tmp_path / "logs"], out)
    assert (summary.traces, summary.spans, summary.quarantined_spans, summary.bad_records) == (2, len(spans), 0, 0)
    offline = written(out)
    for trace in offline:
        check_trace(trace)
    assert offline == sorted(live, key=lambda t: t["trace_id"])
    assert load_contents(out.parent) == live_contents


def test_cli_reports_and_quarantines_bad_records_and_converts_the_rest(tmp_path, capsys):
    good = [SpanRecord(TID, "1000000000000001", None, "invoke_agent lead", T0, T0 + 10,
                       attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "lead"})]
    line = orjson.loads(otlp_line(good))
    bad_span = dict(line["resourceSpans"][0]["scopeSpans"][0]["spans"][0], spanId="xyz", name="bad")
    line["resourceSpans"][0]["scopeSpans"][0]["spans"].append(bad_span)
    src = tmp_path / "in.json"
    src.write_bytes(orjson.dumps(line) + b"\n" + b'{"resourceSpans": [\n' + b"[1, 2]\n")
    truncated = tmp_path / "in.pb"
    truncated.write_bytes(proto_file([]) + (100).to_bytes(4, "big") + b"\x0a\x02")
    out = tmp_path / "out.jsonl"
    code = main(["convert", str(src), str(truncated), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    assert captured.err.splitlines() == [
        f"{src}:1: resourceSpans[0].scopeSpans[0].spans[1]: spanId: expected 16 hex digits (not all zero), got 'xyz'",
        f"{src}:2: malformed JSON: unexpected end of data: line 2 column 1 (char 20)",
        f"{src}:3: expected a JSON object, got list",
        f"{truncated}@0: truncated message: 2 of 100 bytes",
    ]
    assert captured.out.splitlines() == [
        f"1 trace(s) (0 incomplete) from 2 span(s) in 2 file(s) -> {out}",
        "duplicates dropped: 0; quarantined: 1 span(s) (late 0, conflicting 0, in 0 unconvertible trace(s)) "
        f"and 3 bad record(s) -> {out}.quarantine",
        "traces by source: orch-otel 1",  # the spans have no scope name: read as orch-otel's own
    ]
    (trace,) = written(out)
    check_trace(trace)
    quarantined = [orjson.loads(x) for x in (tmp_path / "out.jsonl.quarantine").read_bytes().splitlines()]
    assert [(q["where"], q["kind"]) for q in quarantined] == [
        (f"{src}:1", "span"), (f"{src}:2", "record"), (f"{src}:3", "record"), (f"{truncated}@0", "record")]
    assert quarantined[0]["raw"] == bad_span
    assert quarantined[1]["raw"] == '{"resourceSpans": ['
    assert quarantined[2]["raw"] == [1, 2]
    assert base64.b64decode(quarantined[3]["raw"]) == b"\x0a\x02"


def test_exit_codes(tmp_path, capsys):
    ok = tmp_path / "ok.json"
    ok.write_bytes(otlp_line([SpanRecord(TID, "1000000000000001", None, "root", T0, T0 + 1)]))
    assert main(["convert", str(ok), "-o", str(tmp_path / "a.jsonl")]) == 0
    assert not (tmp_path / "a.jsonl.quarantine").exists()
    assert main(["convert", str(tmp_path / "missing.json"), "-o", str(tmp_path / "b.jsonl")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["convert", str(empty), "-o", str(tmp_path / "c.jsonl")]) == 2
    junk = tmp_path / "junk.json"
    junk.write_bytes(b"not json\n")
    assert main(["convert", str(junk), "-o", str(tmp_path / "d.jsonl")]) == 2
    assert main(["convert", str(ok), str(junk), "-o", str(tmp_path / "e.jsonl")]) == 1
    capsys.readouterr()


def spans_for(trace_id: str, parent_of: dict[str, str | None]) -> list[SpanRecord]:
    return [SpanRecord(trace_id, sid, parent, f"invoke_agent {sid[-1]}", T0 + i, T0 + 100 - i,
                       attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"a{sid[-1]}"})
            for i, (sid, parent) in enumerate(parent_of.items())]


def test_no_root_orphans_and_cycles_are_written_incomplete(tmp_path):
    no_root = spans_for("1" * 32, {"1000000000000002": "1000000000000001"})
    orphan = spans_for("2" * 32, {"1000000000000001": None, "1000000000000003": "1000000000000009"})
    cycle = spans_for("3" * 32, {"1000000000000001": None, "1000000000000002": "1000000000000003",
                                 "1000000000000003": "1000000000000002"})
    src = tmp_path / "in.json"
    src.write_bytes(otlp_line(no_root + orphan + cycle))
    summary = convert_inputs([src], tmp_path / "out.jsonl")
    traces = written(tmp_path / "out.jsonl")
    assert [t["trace_id"] for t in traces] == ["1" * 32, "2" * 32, "3" * 32]
    for trace in traces:
        check_trace(trace)
        assert [d["reason"] for d in decisions_of(trace, "stop")] == ["incomplete"]
    assert summary.incomplete == 3 and summary.exit_code == 0
    assert summary.warnings == [f"trace {'3' * 32}: parent links form a cycle through span 1000000000000002; written as incomplete"]


def test_duplicates_late_spans_and_conflicts(tmp_path):
    root, child = spans_for(TID, {"1000000000000001": None, "1000000000000002": "1000000000000001"})
    changed = SpanRecord(TID, child.span_id, child.parent_id, "changed", child.start_ns, child.end_ns)
    src = tmp_path / "in.json"
    src.write_bytes(otlp_line([child, child]) + otlp_line([changed]) + otlp_line([root]) + otlp_line([root])
                    + otlp_line([SpanRecord(TID, "1000000000000007", root.span_id, "late", T0, T0 + 1)]))
    summary = convert_inputs([src], tmp_path / "out.jsonl", options=Options(linger=0))
    assert (summary.spans, summary.converted_spans, summary.duplicates, summary.conflicts, summary.late) == (6, 2, 2, 1, 1)
    assert summary.spans == summary.converted_spans + summary.quarantined_spans + summary.duplicates
    reasons = [orjson.loads(x)["reason"] for x in (tmp_path / "out.jsonl.quarantine").read_bytes().splitlines()]
    assert reasons == [f"duplicate span id {child.span_id} with different content (first copy kept)",
                       f"late span: trace {TID} was already written (raise --linger, or use --engine ray for exact grouping)"]


def test_an_unconvertible_trace_is_quarantined_whole(tmp_path, monkeypatch):
    def broken_converter(spans, complete=True):
        raise ValueError("converter bug")

    monkeypatch.setattr("orch_otel.offline.outputs.convert", broken_converter)  # the defensive path only
    span = SpanRecord(TID, "1000000000000001", None, "chat m", T0, T0 + 1, attributes={"gen_ai.operation.name": "chat"})
    src = tmp_path / "in.json"
    src.write_bytes(otlp_line([span]))
    summary = convert_inputs([src], tmp_path / "out.jsonl")
    assert (summary.traces, summary.failed_traces, summary.quarantined_spans, summary.exit_code) == (0, 1, 1, 1)
    (q,) = [orjson.loads(x) for x in (tmp_path / "out.jsonl.quarantine").read_bytes().splitlines()]
    assert q["where"] == f"trace {TID}" and q["reason"] == "trace could not be converted: ValueError: converter bug"
    assert q["span"]["span_id"] == span.span_id


def test_garbage_attribute_values_give_a_valid_trace_and_a_warning(tmp_path):
    odd = SpanRecord(TID, "1000000000000001", None, "chat m", T0, T0 + 1,
                     attributes={"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": "many",
                                 "gen_ai.request.model": 42},
                     events=(EventRecord("orch.decision", T0, {"orch.decision": "dance"}),))
    src = tmp_path / "in.json"
    src.write_bytes(otlp_line([odd]))
    summary = convert_inputs([src], tmp_path / "out.jsonl")
    (trace,) = [orjson.loads(x) for x in (tmp_path / "out.jsonl").read_bytes().splitlines()]
    check_trace(trace)
    (llm,) = [e for e in trace["events"] if e.get("channel") == "llm"]
    assert llm["model"] == "42" and "input_tokens" not in llm
    assert any("unknown decision kind 'dance'" in w for w in summary.warnings)



@pytest.mark.parametrize("check", [False, True])
def test_check_quarantines_traces_that_break_the_contract(tmp_path, monkeypatch, check):
    from orch_otel.converter import convert as real_convert

    def convert_without_stops(spans, complete=True):  # stands in for a converter regression
        conversion = real_convert(spans, complete=complete)
        conversion.trace["events"] = [e for e in conversion.trace["events"] if e.get("decision") != "stop"]
        return conversion

    monkeypatch.setattr("orch_otel.offline.outputs.convert", convert_without_stops)
    root = SpanRecord(TID, "1000000000000002", None, "w", T0, T0 + 2,
                      attributes={"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": "w"})
    child = SpanRecord(TID, "1000000000000001", root.span_id, "invoke_agent x", T0, T0 + 1,
                       attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "x"})
    src = tmp_path / "in.json"
    src.write_bytes(otlp_line([child, root]))
    summary = convert_inputs([src], tmp_path / "out.jsonl", options=Options(check=check))
    assert (summary.traces, summary.quarantined_spans) == ((0, 2) if check else (1, 0))
