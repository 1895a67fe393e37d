"""Bad input to the batch commands (issue 14, items 10-13): integers wider
than 64 bits, traces the dataset views cannot read, deep nesting, duplicate
traces and byte order marks. Each is reported with its file and line, counted
and kept aside; the rest of the input is written."""

from __future__ import annotations

import json

import orjson
import pytest
from conftest import check_trace
from fixtures.dataset_runs import record, supervisor_run
from offline_support import otlp_line

from orch_otel.cli import main
from orch_otel.datasets import Config, Outcomes, build
from orch_otel.offline import convert_inputs
from orch_otel.spans import SpanRecord, to_dump
from orch_otel.tracefiles import read_lines

T0 = 1_700_000_000_000_000_000
BOM = b"\xef\xbb\xbf"
HUGE = "99999999999999999999999999"  # 87 bits


def run_spans(n: int) -> list[SpanRecord]:
    """Trace ``n``: an agent span and one model call under it, with token counts."""
    trace_id = f"{n + 1:032x}"
    root = SpanRecord(trace_id, f"{2 * n + 1:016x}", None, "invoke_agent lead", T0, T0 + 100,
                      attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "lead"})
    llm = SpanRecord(trace_id, f"{2 * n + 2:016x}", root.span_id, "chat m", T0 + 10, T0 + 20,
                     attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                                 "gen_ai.usage.input_tokens": 11, "gen_ai.usage.output_tokens": 7})
    return [root, llm]


def quarantined(out) -> list[dict]:
    return [orjson.loads(x) for x in (out.parent / (out.name + ".quarantine")).read_bytes().splitlines()]


def written(out) -> list[dict]:
    return [line.trace for line in read_lines(out)]


# -- 10. integers wider than 64 bits ---------------------------------------------------------


def _with_value(line: bytes, key: str, value: str) -> bytes:
    """An OTLP JSON line whose last ``key`` (an int attribute or a span field) holds ``value``, a
    decimal string as the Collector writes int64s."""
    old = b'{"key":"%s","value":{"intValue":"' % key.encode() if key.startswith("gen_ai.") else b'"%s":"' % key.encode()
    start = line.rindex(old) + len(old)
    return line[:start] + value.encode() + line[line.index(b'"', start):]


@pytest.mark.parametrize(("key", "field"), [
    ("gen_ai.usage.input_tokens", "attributes[gen_ai.usage.input_tokens]: intValue: 99999999999999999999999999 is "
                                  "outside the 64-bit integer range (OTLP intValue is an int64)"),
    ("startTimeUnixNano", "startTimeUnixNano: expected a non-negative 64-bit integer, got '99999999999999999999999999'"),
])
def test_convert_quarantines_the_span_with_an_integer_wider_than_64_bits_and_writes_every_trace(tmp_path, capsys, key, field):
    lines = [otlp_line(run_spans(n)) for n in range(20)]
    lines[7] = _with_value(lines[7], key, HUGE)
    src = tmp_path / "in.json"
    src.write_bytes(b"".join(lines))
    out = tmp_path / "out" / "traces.jsonl"
    assert main(["convert", str(src), "-o", str(out)]) == 1  # written, something quarantined
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    where = f"{src}:8"
    reason = "resourceSpans[0].scopeSpans[0].spans[1]: " + field  # the model call: span 1 of the line
    assert captured.err.splitlines() == [f"{where}: {reason}"]
    traces = written(out)
    assert len(traces) == 20  # the bad span's trace is written without it
    for trace in traces:
        check_trace(trace)
    (q,) = quarantined(out)
    assert (q["where"], q["reason"], q["kind"]) == (where, reason, "span")
    assert HUGE in orjson.dumps(q["raw"]).decode()  # the span as read, kept aside


def test_convert_quarantines_a_span_dump_trace_whose_token_count_cannot_be_written(tmp_path, capsys):
    dumps = [to_dump(s) for n in range(20) for s in run_spans(n)]
    dumps[3]["attributes"]["gen_ai.usage.input_tokens"] = HUGE  # trace 1's model call; a digit string is a count
    src = tmp_path / "in.spans"
    src.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in dumps))
    out = tmp_path / "traces.jsonl"
    summary = convert_inputs([src], out)
    assert "Traceback" not in capsys.readouterr().err
    assert (summary.traces, summary.failed_traces, summary.quarantined_spans, summary.exit_code) == (19, 1, 2, 1)
    assert {t["trace_id"] for t in written(out)} == {f"{n + 1:032x}" for n in range(20) if n != 1}
    records = quarantined(out)
    assert [q["where"] for q in records] == [f"trace {2:032x}"] * 2
    assert records[0]["reason"].startswith("trace could not be written: events[")
    assert records[0]["reason"].endswith(f"].input_tokens: {HUGE} is outside the 64-bit integer range")
    assert sorted(q["span"]["span_id"] for q in records) == [f"{3:016x}", f"{4:016x}"]


# -- 13. a UTF-8 byte order mark -------------------------------------------------------------


@pytest.mark.parametrize("name", ["in.json", "in.spans", "in.json.zst"])
def test_convert_reads_json_lines_that_start_with_a_byte_order_mark(tmp_path, name):
    import zstandard

    spans = [s for n in range(3) for s in run_spans(n)]
    body = (b"".join(otlp_line([s]) for s in spans) if name != "in.spans"
            else b"".join(orjson.dumps(to_dump(s)) + b"\n" for s in spans))
    data = BOM + body
    src = tmp_path / name
    src.write_bytes(zstandard.ZstdCompressor().compress(data) if name.endswith(".zst") else data)
    summary = convert_inputs([src], tmp_path / "out.jsonl")
    assert (summary.spans, summary.traces, summary.bad_records, summary.quarantined_spans) == (6, 3, 0, 0)


@pytest.fixture(scope="module")
def captured_runs(tmp_path_factory):
    """Two real runs with captured content: a trace file and its content store."""
    folder = tmp_path_factory.mktemp("runs") / "traces"
    traces = record(folder, [lambda: supervisor_run("calc-ok", 3), lambda: supervisor_run("calc-budget", 1)],
                    capture=True)
    return folder, traces


def _with_bom(src, dst):
    """A copy of the trace folder ``src`` whose trace and content files start with a byte order mark."""
    for path in src.rglob("*.jsonl"):
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(BOM + path.read_bytes())
    return dst


def test_dataset_and_validate_read_trace_and_content_files_that_start_with_a_byte_order_mark(captured_runs, tmp_path,
                                                                                            capsys):
    src, traces = captured_runs
    folder = _with_bom(src, tmp_path / "bom")
    plain = build([src], tmp_path / "plain", Config(view="chat"))
    summary = build([folder], tmp_path / "out", Config(view="chat"))
    assert (summary.traces_read, summary.rejects, summary.traces_skipped) == (len(traces), 0, 0)
    assert summary.rows_written == plain.rows_written > 0  # the first content record resolves too
    assert (tmp_path / "out" / "chat.jsonl").read_bytes() == (tmp_path / "plain" / "chat.jsonl").read_bytes()
    assert main(["validate", str(folder)]) == 0
    assert f"{len(traces)} trace(s) in 1 file(s): valid" in capsys.readouterr().out


def test_outcomes_csv_from_a_spreadsheet_with_a_byte_order_mark(captured_runs, tmp_path):
    src, traces = captured_runs
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_bytes(BOM + b"task_id,success\ncalc-ok,1\ncalc-budget,0\n")
    build([src], tmp_path / "out", Config(view="decisions", outcomes=Outcomes.load(str(outcomes))))
    rows = [json.loads(x) for x in (tmp_path / "out" / "decisions.jsonl").read_text().splitlines()]
    assert {r["task_id"]: r["outcome_success"] for r in rows} == {"calc-ok": 1.0, "calc-budget": 0.0}


# -- 11. one bad trace never aborts `dataset` ------------------------------------------------


def _nested(depth: int, leaf: str) -> str:
    return "[" * depth + leaf + "]" * depth


def _first(trace: dict, key: str) -> dict:
    return next(e for e in trace["events"] if e.get(key))


def _mutated(trace: dict, case: str) -> bytes:
    """``trace`` as a line with one fault planted (by hand, as a broken producer would write it)."""
    trace = json.loads(json.dumps(trace))
    if case == "options: 7":
        _first(trace, "options")["options"] = 7
    elif case == "integer content_ref":
        _first(trace, "content_ref")["content_ref"] = 12345
    elif case == "200-deep options":
        _first(trace, "options")["options"] = "DEEP"
        return orjson.dumps(trace).replace(b'"DEEP"', _nested(200, "").encode())
    elif case == "800-deep extra field":
        trace["events"][0]["state"] = "DEEP"
        return orjson.dumps(trace).replace(b'"DEEP"', b'{"x":' * 800 + b"1" + b"}" * 800)
    return orjson.dumps(trace)


def _index_of(trace: dict, key: str) -> int:
    return next(k for k, e in enumerate(trace["events"]) if e.get(key))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("view", ["traces", "decisions", "turns"])
@pytest.mark.parametrize("case", ["options: 7", "integer content_ref", "200-deep options", "800-deep extra field"])
def test_dataset_rejects_one_bad_trace_with_its_line_and_field_and_writes_the_rest(captured_runs, tmp_path, case, view,
                                                                                  fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    src, traces = captured_runs
    good, bad = traces
    line = _mutated(bad, case)
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "traces-x.jsonl"
    path.write_bytes(orjson.dumps(good) + b"\n" + line + b"\n" + orjson.dumps(good | {"trace_id": "f" * 32}) + b"\n")
    (folder / "content").mkdir()
    for content in (src / "content").glob("*.jsonl"):
        (folder / "content" / content.name).write_bytes(content.read_bytes())
    summary = build([path], tmp_path / "out", Config(view=view), fmt=fmt)
    assert (summary.traces_read, summary.traces_used, summary.rejects) == (2, 2, 1)  # a rejected line is not a trace read
    (reject,) = [json.loads(x) for x in (tmp_path / "out" / f"{view}.rejects.jsonl").read_text().splitlines()]
    assert reject["where"] == f"{path}:2"
    assert reject["line"] == line.decode()  # kept verbatim
    expected = {
        "options: 7": f"events[{_index_of(bad, 'options')}].options: expected a list of strings, got 7",
        "integer content_ref": f"events[{_index_of(bad, 'content_ref')}].content_ref: expected a string, got 12345",
        "200-deep options": f"events[{_index_of(bad, 'options')}].options[0]: expected a string, got a list",
        "800-deep extra field": "events[0].state: nested more than 100 levels deep (counted from the trace)",
    }[case]
    assert reject["error"] == expected
    written_ids = {r["trace_id"] for r in _read_rows(tmp_path / "out", view, fmt)}
    assert written_ids == {good["trace_id"], "f" * 32}


def _read_rows(folder, view, fmt) -> list[dict]:
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(folder / f"{view}.parquet").to_pylist()
    return [json.loads(x) for x in (folder / f"{view}.jsonl").read_text().splitlines()]


def deep_content_inputs(src, traces, folder) -> tuple[str, str]:
    """A copy of ``src`` where one captured content record of the first run only, which
    its decision rows include as context, is JSON nested 300 levels deep (orjson reads up
    to 1,024 levels but writes only 254). Returns (the ref, the first run's trace line)."""
    plain = build([src], folder.parent / "plain", Config(view="decisions"))
    assert plain.rejects == 0
    rows = [json.loads(x) for x in (folder.parent / "plain" / "decisions.jsonl").read_text().splitlines()]
    other_refs = {item["ref"] for r in rows if r["trace_id"] == traces[1]["trace_id"] for item in r["context"] if item.get("ref")}
    ref = next(item["ref"] for r in rows if r["trace_id"] == traces[0]["trace_id"] for item in r["context"]
               if item.get("content") is not None and item["ref"] not in other_refs)
    folder.mkdir()
    trace_file = next(src.glob("traces-*.jsonl"))
    (folder / trace_file.name).write_bytes(trace_file.read_bytes())
    (folder / "content").mkdir()
    for content in (src / "content").glob("*.jsonl"):
        lines = [orjson.loads(x) for x in content.read_bytes().splitlines()]
        deep = "[" * 300 + "]" * 300
        (folder / "content" / content.name).write_bytes(
            b"".join(orjson.dumps({**x, "text": deep} if x["ref"] == ref else x) + b"\n" for x in lines))
    line = next(x for x in trace_file.read_text().splitlines() if traces[0]["trace_id"] in x)
    return ref, line


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_rows_a_writer_cannot_take_reject_their_trace_alone(captured_runs, tmp_path, fmt):
    """The backstop behind the field checks: captured content nested deeper than can be
    written rejects the trace whose rows hold it, and the other trace is written."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    src, traces = captured_runs
    _, line = deep_content_inputs(src, traces, tmp_path / "in")
    summary = build([tmp_path / "in"], tmp_path / "out", Config(view="decisions"), fmt=fmt)
    assert (summary.traces_read, summary.traces_used, summary.rejects) == (2, 1, 1)
    (reject,) = [json.loads(x) for x in (tmp_path / "out" / "decisions.rejects.jsonl").read_text().splitlines()]
    assert reject["line"] == line
    assert reject["error"] == "cannot write decisions rows: content[0][0][0][0]... (250 levels): nested more than 250 levels deep"
    assert {r["trace_id"] for r in _read_rows(tmp_path / "out", "decisions", fmt)} == {traces[1]["trace_id"]}


def test_validate_reports_deep_nesting_instead_of_crashing(captured_runs, tmp_path, capsys):
    _, traces = captured_runs
    path = tmp_path / "traces-deep.jsonl"
    trace = json.loads(json.dumps(traces[0]))
    trace["events"][0]["options"] = "DEEP"
    path.write_bytes(orjson.dumps(trace).replace(b'"DEEP"', _nested(1000, "").encode()) + b"\n")
    assert main(["validate", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"{path}:1: events[0].options[0][0][0]... (100 levels): nested more than 100 levels deep"]
    with open(path, "ab") as handle:
        handle.write(orjson.dumps(traces[1]) + b"\n")
    summary = build([path], tmp_path / "out", Config(view="decisions", validate=True))  # rejected, no RecursionError
    assert (summary.traces_read, summary.traces_used, summary.rejects) == (1, 1, 1)


# -- 12. duplicate traces ----------------------------------------------------------------------


def duplicated_inputs(src, traces, folder):
    """``src``'s trace file, plus a second file holding a copy of both traces (as a
    converted spool would) and one changed copy of the first, and a bad line first."""
    folder.mkdir()
    first = next(src.glob("traces-*.jsonl"))
    (folder / first.name).write_bytes(first.read_bytes())
    changed = orjson.dumps({**traces[0], "rewards": {"team": 0.25}})
    again = folder / "traces-z-converted.jsonl"
    again.write_bytes(b"not json\n" + first.read_bytes() + changed + b"\n")
    (folder / "content").mkdir()
    for content in (src / "content").glob("*.jsonl"):
        (folder / "content" / content.name).write_bytes(content.read_bytes())
    return folder / first.name, again, changed


def test_dataset_drops_later_copies_of_a_trace_and_keeps_a_changed_copy_aside(captured_runs, tmp_path, capsys):
    src, traces = captured_runs
    first, again, changed = duplicated_inputs(src, traces, tmp_path / "in")
    alone = build([first], tmp_path / "alone", Config(view="decisions"))
    assert main(["dataset", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "--view", "decisions"]) == 1
    out = capsys.readouterr().out
    assert "duplicate traces dropped" in out and "3 (first copy kept)" in out
    summary = json.loads((tmp_path / "out" / "decisions.summary.json").read_text())
    assert (summary["traces_read"], summary["traces_used"], summary["duplicates"], summary["conflicting_duplicates"],
            summary["rejects"]) == (5, 2, 2, 1, 2)
    assert summary["rows_written"] == alone.rows_written  # each trace's rows once
    assert (tmp_path / "out" / "decisions.jsonl").read_bytes() == (tmp_path / "alone" / "decisions.jsonl").read_bytes()
    rejects = [json.loads(x) for x in (tmp_path / "out" / "decisions.rejects.jsonl").read_text().splitlines()]
    assert [r["where"] for r in rejects] == [f"{again}:1", f"{again}:4"]
    assert rejects[0]["error"].startswith("malformed JSON")
    assert rejects[1]["error"] == (f"trace {traces[0]['trace_id']} again, with different content "
                                   f"(the first copy, {first}:1, is kept)")
    assert rejects[1]["line"] == changed.decode()  # the dropped copy, kept aside


def test_a_rejected_first_copy_does_not_hide_a_good_later_one(captured_runs, tmp_path):
    src, traces = captured_runs
    path = tmp_path / "traces-x.jsonl"
    bad = orjson.dumps({**traces[0], "events": [{**traces[0]["events"][0], "options": 7}]})
    path.write_bytes(bad + b"\n" + orjson.dumps(traces[0]) + b"\n")
    summary = build([path], tmp_path / "out", Config(view="traces"))
    assert (summary.traces_used, summary.rejects, summary.duplicates, summary.conflicting_duplicates) == (1, 1, 0, 0)


def test_a_file_named_twice_is_read_once(captured_runs, tmp_path, capsys):
    src, traces = captured_runs
    trace_file = next(src.glob("traces-*.jsonl"))
    summary = build([trace_file, src], tmp_path / "out", Config(view="decisions"))
    assert (summary.traces_read, summary.duplicates, summary.rejects) == (len(traces), 0, 0)
    assert main(["validate", str(trace_file), str(trace_file)]) == 0
    assert f"{len(traces)} trace(s) in 1 file(s): valid" in capsys.readouterr().out


def test_parquet_writer_sets_aside_only_the_trace_whose_rows_do_not_fit_a_column(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    from orch_otel.datasets.writers import open_writer

    cols = [("trace_id", "str"), ("options", "strs"), ("context", "json")]
    writer = open_writer(tmp_path, "decisions", "parquet", cols)
    assert writer.write([{"trace_id": "a", "options": ["x"], "context": [{"k": 1}]}], "a") == []
    assert writer.write([{"trace_id": "b", "options": [7], "context": None}], "b") == []  # found when the batch is written
    assert writer.write([{"trace_id": "c", "options": None, "context": {"k": 2}}] * 2, "c") == []
    ((tag, why),) = writer.finish()
    assert tag == "b" and why.startswith("options: ArrowTypeError: ")
    writer.close()
    assert writer.rows == 3
    table = pq.read_table(tmp_path / "decisions.parquet")
    assert table.column("trace_id").to_pylist() == ["a", "c", "c"]
