"""``convert --jobs N``: N processes give the same traces, contents, quarantine
and counts as one; every problem is reported exactly once."""

from __future__ import annotations

import orjson
import pytest
from offline_support import demo_logs, otlp_line

from orch_otel.cli import main
from orch_otel.offline import Options, convert_inputs
from orch_otel.offline.local import owner
from orch_otel.spans import SpanRecord
from orch_otel.tracefiles import load_contents

T0 = 1_700_000_000_000_000_000
TRACE_OF_JOB = {0: "00000002" + "ab" * 12, 1: "00000001" + "cd" * 12}  # owner(id, 2) is the key


RUN = {"gen_ai.operation.name": "invoke_workflow"}  # orch-otel's: a run (spans with none are not written)


def _trace_lines(path) -> list[bytes]:
    return sorted(path.read_bytes().splitlines())


def _quarantine(path) -> list[bytes]:
    q = path.with_name(path.name + ".quarantine")
    return sorted(q.read_bytes().splitlines()) if q.exists() else []


def _bad_span_line(trace_id: str) -> bytes:
    """One OTLP JSON line with a span whose trace id is fine and whose start time is not."""
    span = {"traceId": trace_id, "spanId": "2000000000000001", "name": "bad", "startTimeUnixNano": "soon"}
    return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + b"\n"


@pytest.fixture
def logs(tmp_path):
    """Demo runs split over JSON and protobuf files, a trace owned by each of
    two jobs, and bad records of every kind."""
    folder = demo_logs(tmp_path, runs=3, seed=7, batch=4)
    with open(folder / "a.json", "ab") as f:
        f.write(b"{broken\n" + _bad_span_line(TRACE_OF_JOB[1]))
    child = SpanRecord(TRACE_OF_JOB[1], "1000000000000002", "1000000000000001", "c", T0, T0 + 1, attributes=RUN)
    changed = SpanRecord(TRACE_OF_JOB[1], "1000000000000002", "1000000000000001", "other", T0, T0 + 1, attributes=RUN)
    whole = [SpanRecord(TRACE_OF_JOB[0], "1000000000000001", None, "root", T0, T0 + 9, attributes=RUN),
             SpanRecord(TRACE_OF_JOB[0], "1000000000000002", "1000000000000001", "c", T0 + 1, T0 + 2, attributes=RUN)]
    (folder / "c.json").write_bytes(otlp_line([child, child, changed, *whole]) + _bad_span_line(TRACE_OF_JOB[0]))
    return folder


@pytest.mark.parametrize("jobs", [2, 3])
def test_jobs_give_the_same_outputs_as_one_process(tmp_path, logs, jobs):
    one = convert_inputs([logs], tmp_path / "one" / "out.jsonl")
    many = convert_inputs([logs], tmp_path / "many" / "out.jsonl", options=Options(jobs=jobs))

    traces = [orjson.loads(line)["trace_id"] for line in _trace_lines(tmp_path / "one" / "out.jsonl")]
    assert len({owner(t, jobs) for t in traces}) > 1, "the test needs traces owned by different jobs"
    assert _trace_lines(tmp_path / "many" / "out.jsonl") == _trace_lines(tmp_path / "one" / "out.jsonl")
    assert load_contents(tmp_path / "many") == load_contents(tmp_path / "one") != {}
    assert many.as_dict() == one.as_dict()
    assert (one.duplicates, one.conflicts, one.bad_records, one.quarantined_spans) == (1, 1, 1, 3)
    assert _quarantine(tmp_path / "many" / "out.jsonl") == _quarantine(tmp_path / "one" / "out.jsonl")


def test_linger_counts_the_spans_other_jobs_keep(tmp_path):
    """A straggler arriving more than ``linger`` spans after its trace's root is
    late whether or not the spans in between belong to this job."""
    mine, other = TRACE_OF_JOB[0], TRACE_OF_JOB[1]
    root = SpanRecord(mine, "1000000000000001", None, "root", T0, T0 + 10, attributes=RUN)
    between = [SpanRecord(other, f"300000000000000{i}", None if i == 1 else "3000000000000001", "x", T0, T0 + 1,
                          attributes=RUN) for i in range(1, 4)]
    straggler = SpanRecord(mine, "1000000000000002", root.span_id, "late", T0 + 1, T0 + 2, attributes=RUN)
    src = tmp_path / "in.json"
    src.write_bytes(b"".join(otlp_line([s]) for s in [root, *between, straggler]))
    for jobs in (1, 2):
        summary = convert_inputs([src], tmp_path / f"j{jobs}" / "out.jsonl", options=Options(linger=2, jobs=jobs))
        assert (summary.late, summary.traces) == (1, 2), f"jobs={jobs}"


def test_cli_jobs(tmp_path, logs, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(logs), "-o", str(out), "--jobs", "2"]) == 1  # something was quarantined
    captured = capsys.readouterr()
    assert "trace(s)" in captured.out and "bad record(s)" in captured.out
    broken = (logs / "a.json").read_bytes().splitlines().index(b"{broken") + 1
    assert f"a.json:{broken}: malformed JSON" in captured.err  # problems are printed once the jobs are done
    assert captured.err.count("startTimeUnixNano") == 2  # each bad span once, from the job that owns its trace
    never = tmp_path / "never.jsonl"
    assert main(["convert", str(logs), "-o", str(never), "--jobs", "-1"]) == 2
    assert "--jobs must be 0 (one per core) or more" in capsys.readouterr().err
    assert not never.exists()  # a setup error is found before any output is opened
    assert main(["convert", str(logs), "-o", str(out), "--jobs", "2", "--engine", "ray"]) == 2
    assert "--jobs is for the local engine" in capsys.readouterr().err
