"""Commands that must never lose data (issue 13): a failed or empty run leaves
the previous outputs byte for byte; no input and all-rejected input are
errors; unknown --reward names are errors; convert reads the spool and says
what a wrong file is; no traceback for a user error; one exit-code scheme;
reward(unit=, target=) is honoured or refused out loud."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from fixtures.dataset_runs import record
from offline_support import json_lines, record_demo_runs

import orch_otel as oo
from orch_otel.cli import main
from orch_otel.datasets import Config, build
from orch_otel.exporters.spool import SpanSpool
from orch_otel.offline import Options, convert_inputs
from orch_otel.spans import dump_line, from_readable_span

RUNS = 3


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "orch_otel", *args], capture_output=True, text=True, timeout=300,
                            cwd=cwd)
    assert "Traceback" not in result.stderr, result.stderr  # never, for any of these user errors
    return result


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) -> its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """RUNS demo runs with content captured: span logs (one bad line among
    them) and the live trace directory (traces + content store)."""
    base = tmp_path_factory.mktemp("recorded")
    traces, contents, spans = record_demo_runs(base / "live", runs=RUNS)
    assert len(traces) == RUNS and contents
    logs = base / "logs"
    logs.mkdir()
    (logs / "a.json").write_bytes(json_lines([spans[i:i + 7] for i in range(0, len(spans), 7)]) + b"{broken\n")
    return base / "live", logs, spans


@pytest.fixture()
def converted(recorded, tmp_path):
    """A good convert output: traces, content store and a quarantine (the bad line)."""
    _, logs, _ = recorded
    out = tmp_path / "out" / "good.jsonl"
    assert main(["convert", str(logs), "-o", str(out)]) == 1  # the broken line is quarantined
    before = snapshot(out.parent)
    assert {"good.jsonl", "good.jsonl.quarantine", "content/content-good.jsonl"} == set(before)
    assert len(before["good.jsonl"].splitlines()) == RUNS
    return out, before


# -- 9. every command writes to a temporary file, moved into place only on success


def test_convert_of_a_missing_input_leaves_the_previous_outputs_byte_for_byte(converted, tmp_path):
    out, before = converted
    result = cli("convert", str(tmp_path / "MISSING"), "-o", str(out))
    assert result.returncode == 2
    assert f"{tmp_path / 'MISSING'}: no such file or directory" in result.stderr
    assert snapshot(out.parent) == before  # traces, content store and quarantine untouched, no partial files left


def test_convert_of_a_mistyped_input_among_good_ones_writes_nothing(converted, recorded, tmp_path):
    out, before = converted
    _, logs, _ = recorded
    result = cli("convert", str(logs / "a.json"), str(tmp_path / "b.json"), "-o", str(out))
    assert result.returncode == 2 and "b.json: no such file or directory" in result.stderr
    assert snapshot(out.parent) == before


def test_convert_with_no_usable_input_leaves_the_previous_outputs(converted, recorded, tmp_path):
    out, before = converted
    empty = tmp_path / "empty"
    empty.mkdir()
    junk = tmp_path / "junk.json"
    junk.write_text("not json at all\n")
    for source in (empty, junk):
        result = cli("convert", str(source), "-o", str(out))
        assert result.returncode == 2, result.stderr
        assert "nothing written" in result.stderr and str(out) in result.stderr
        assert snapshot(out.parent) == before
    clean = tmp_path / "clean.json"  # then a good run replaces all three
    clean.write_bytes((recorded[1] / "a.json").read_bytes().replace(b"{broken\n", b""))
    assert main(["convert", str(clean), "-o", str(out)]) == 0
    after = snapshot(out.parent)
    assert set(after) == {"good.jsonl", "content/content-good.jsonl"}  # the old quarantine described another run
    assert len(after["good.jsonl"].splitlines()) == RUNS


def test_convert_that_fails_midway_leaves_the_previous_outputs(converted, recorded):
    out, before = converted
    _, logs, _ = recorded

    def fail(problem):
        raise RuntimeError("stopped by the test")

    with pytest.raises(RuntimeError, match="stopped by the test"):
        convert_inputs([logs], out, options=Options(), on_problem=fail)  # fails at the broken line, after the traces
    assert snapshot(out.parent) == before


@pytest.fixture()
def dataset_dir(recorded, tmp_path):
    def make(fmt: str) -> tuple[Path, dict[str, bytes]]:
        live, _, _ = recorded
        out = tmp_path / f"ds-{fmt}"
        assert main(["dataset", str(live), "-o", str(out), "--view", "traces", "--format", fmt]) == 0
        before = snapshot(out)
        assert before and "content/content-traces.jsonl" in before
        return out, before

    return make


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "hf"])
def test_dataset_failures_leave_the_previous_dataset_byte_for_byte(dataset_dir, recorded, tmp_path, fmt):
    pytest.importorskip("pyarrow", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    if fmt == "hf":
        pytest.importorskip("datasets", reason="Hugging Face datasets is in the optional extra: pip install 'orch-otel[datasets]'")
    out, before = dataset_dir(fmt)
    live, _, _ = recorded
    empty = tmp_path / "emptydir"
    empty.mkdir()
    rejected = tmp_path / "bad" / "traces-bad.jsonl"
    rejected.parent.mkdir()
    rejected.write_text('{"trace_id": "x"}\n[1]\n')
    unknown = tmp_path / "outcomes.jsonl"
    unknown.write_text(json.dumps({"task_id": "no-such-task", "success": 1}) + "\n")
    failures = [
        ([str(empty)], [], 2),  # no input
        ([str(tmp_path / "missing")], [], 2),  # no such input
        ([str(rejected)], [], 1),  # every line rejected
        ([str(live)], ["--reward", "sucess=1"], 2),  # unknown reward name, found after reading everything
        ([str(live)], ["--outcomes", str(tmp_path / "none.jsonl")], 2),  # no outcomes file
        ([str(live)], ["--outcomes", str(unknown)], 1),  # outcome rows matching no trace, found at the end
    ]
    for inputs, extra, code in failures:
        result = cli("dataset", *inputs, "-o", str(out), "--view", "traces", "--format", fmt, *extra)
        assert result.returncode == code, (inputs, extra, result.stderr)
        assert snapshot(out) == before, (inputs, extra)


# -- 10. no input, or every line rejected, is an error; rejected lines are not traces read


def test_dataset_of_an_empty_folder_is_an_error(tmp_path):
    empty = tmp_path / "emptydir"
    empty.mkdir()
    result = cli("dataset", str(empty), "-o", str(tmp_path / "out"), "--view", "decisions")
    assert result.returncode == 2
    assert f"no trace found in {empty}" in result.stderr
    assert not (tmp_path / "out").exists()


def test_dataset_where_every_line_is_rejected_is_an_error(tmp_path):
    bad = tmp_path / "traces-bad.jsonl"
    bad.write_text('{"trace_id": "x", "task_id": "t", "events": []}\nnot json\n')
    result = cli("dataset", str(bad), "-o", str(tmp_path / "out"), "--view", "decisions")
    assert result.returncode == 1
    assert f"{bad}:1: events: missing or empty" in result.stderr and f"{bad}:2: malformed JSON" in result.stderr
    assert "all 2 line(s) read were rejected" in result.stderr
    assert not (tmp_path / "out").exists()


def test_rejected_lines_are_not_counted_as_traces_read(recorded, tmp_path):
    live, _, _ = recorded
    (trace_file,) = live.glob("traces-*.jsonl")
    mixed = tmp_path / "in" / "traces-mixed.jsonl"
    mixed.parent.mkdir()
    mixed.write_bytes(trace_file.read_bytes() + b"not json\n[1, 2]\n")
    summary = build([mixed], tmp_path / "out", Config(view="decisions"))
    assert (summary.traces_read, summary.traces_used, summary.rejects) == (RUNS, RUNS, 2)
    result = cli("dataset", str(mixed), "-o", str(tmp_path / "out2"), "--view", "decisions")
    assert result.returncode == 1  # written, but invalid lines were found
    (line,) = [line for line in result.stdout.splitlines() if "traces read" in line]
    assert [cell.strip() for cell in line.split("│")[1:3]] == ["traces read", str(RUNS)]


# -- 11. unknown --reward names


def test_a_mistyped_reward_name_is_an_error_listing_the_known_names(recorded, tmp_path):
    live, _, _ = recorded
    result = cli("dataset", str(live), "-o", str(tmp_path / "out"), "--view", "decisions", "--reward", "sucess=1")
    assert result.returncode == 2
    err = " ".join(result.stderr.split())
    assert "unknown name(s) 'sucess'" in err
    assert "team" in err  # the demo's own reward
    for metric in ("task_success", "tool_success_rate", "total_steps"):
        assert metric in err
    assert not (tmp_path / "out").exists()
    # names that exist are accepted: a reward of the traces, and a metric
    assert main(["dataset", str(live), "-o", str(tmp_path), "--view", "traces", "--reward", "team=1,total_steps=0"]) == 0
    rows = [json.loads(x) for x in (tmp_path / "traces.jsonl").read_text().splitlines()]
    assert [r["rewards"]["reward"] for r in rows] == [1.0] * RUNS  # the demo's critic approves: team = 1


# -- 12. convert reads the spool


def test_convert_reads_a_spool_directory(recorded, tmp_path):
    _, _, spans = recorded
    spool_dir = tmp_path / "orch-spool"
    spool = SpanSpool(spool_dir, max_bytes=1 << 30, segment_records=10)
    for span in spans:
        spool.append(from_readable_span(span))
    spool.close()  # nothing acknowledged: every segment stays, marked closed
    assert len(list(spool_dir.glob("*.spool"))) > 1
    out = tmp_path / "from-spool.jsonl"
    result = cli("convert", str(spool_dir), "-o", str(out))
    assert result.returncode == 0, result.stderr
    traces = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(t["task_id"] for t in traces) == [f"task-{i}" for i in range(RUNS)]


# -- 14. no tracebacks; one exit-code scheme


def test_demo_with_an_unwritable_trace_dir_says_so(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = cli("demo", "--trace-dir", str(blocker / "x"))
    assert result.returncode == 2
    assert f"cannot write traces to {blocker / 'x'}" in result.stderr and "--trace-dir" in result.stderr


def test_spool_replay_with_nothing_listening_says_no_collector(recorded, tmp_path):
    import socket

    _, _, spans = recorded
    spool = SpanSpool(tmp_path / "spool", max_bytes=1 << 30)
    spool.append(from_readable_span(spans[0]))
    spool.close()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = cli("spool", "replay", str(tmp_path / "spool"), "--endpoint", f"http://127.0.0.1:{port}")
    assert result.returncode == 2
    assert "no collector listening" in result.stderr and "1 segment(s) left" in result.stderr
    assert len(list((tmp_path / "spool").glob("*.spool"))) == 1


def _exit_code_cases(recorded, tmp_path: Path) -> list[tuple[list[str], int]]:
    live, logs, spans = recorded
    (trace_file,) = live.glob("traces-*.jsonl")
    first = orjson.loads(trace_file.read_bytes().splitlines()[0])
    invalid = tmp_path / "invalid.jsonl"
    invalid.write_text(json.dumps({**first, "colour": "blue"}) + "\n")
    not_traces = tmp_path / "not-traces.jsonl"
    not_traces.write_text("not json\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    mixed = tmp_path / "mixed" / "traces-m.jsonl"
    mixed.parent.mkdir()
    mixed.write_bytes(trace_file.read_bytes() + b"not json\n")
    clean = tmp_path / "clean.json"
    clean.write_bytes((logs / "a.json").read_bytes().replace(b"{broken\n", b""))
    spool = tmp_path / "spool"
    spool.mkdir()
    (spool / "wal-00000000000000000001-1-00000001.closed.spool").write_bytes(
        dump_line(from_readable_span(spans[0])))
    bad_spool = tmp_path / "bad-spool"
    bad_spool.mkdir()
    (bad_spool / "wal-00000000000000000001-1-00000001.closed.spool").write_text("{truncated\n")
    out = str(tmp_path / "o")
    return [
        (["validate", str(trace_file)], 0),
        (["validate", str(invalid)], 1),
        (["validate", str(tmp_path / "nope.jsonl")], 2),
        (["validate", str(empty)], 2),
        (["show", str(trace_file)], 0),
        (["show", str(not_traces)], 1),
        (["show", str(trace_file), "--trace-id", "nope"], 2),
        (["show", str(tmp_path / "nope.jsonl")], 2),
        (["convert", str(clean), "-o", f"{out}/c0.jsonl"], 0),
        (["convert", str(logs), "-o", f"{out}/c1.jsonl"], 1),
        (["convert", str(empty), "-o", f"{out}/c2.jsonl"], 2),
        (["convert", str(clean), "-o", f"{out}/c3.jsonl", "--linger", "-1"], 2),
        (["dataset", str(live), "-o", f"{out}/d0", "--view", "decisions"], 0),
        (["dataset", str(mixed), "-o", f"{out}/d1", "--view", "decisions"], 1),
        (["dataset", str(empty), "-o", f"{out}/d2", "--view", "decisions"], 2),
        (["dataset", str(live), "-o", f"{out}/d3", "--view", "nope"], 2),
        (["spool", "status", str(spool)], 0),
        (["spool", "status", str(bad_spool)], 1),
        (["spool", "status", str(tmp_path / "no-spool")], 2),
        (["spool", "replay", str(empty)], 0),  # nothing to send
        (["spool", "replay", str(spool)], 2),  # no collector configured
        (["spool", "replay", str(tmp_path / "no-spool")], 2),
        (["schema"], 0),
        (["no-such-command"], 2),
    ]


def test_exit_codes_are_one_scheme_across_commands(recorded, tmp_path, capsys, monkeypatch):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    for argv, code in _exit_code_cases(recorded, tmp_path):
        assert main(argv) == code, argv
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err, (argv, captured.err)


def test_an_output_of_the_wrong_kind_is_a_usage_error_without_traceback(recorded, tmp_path):
    live, _, _ = recorded
    folder_as_out = tmp_path / "dir.jsonl"
    folder_as_out.mkdir()
    result = cli("convert", str(live), "-o", str(folder_as_out))
    assert result.returncode == 2 and f"{folder_as_out}: is a directory; -o names the trace file" in result.stderr
    assert list(folder_as_out.parent.glob(".*partial")) == []
    file_as_out = tmp_path / "file"
    file_as_out.write_text("keep me")
    result = cli("dataset", str(live), "-o", str(file_as_out), "--view", "decisions")
    assert result.returncode == 2 and f"{file_as_out}: not a folder" in result.stderr
    assert file_as_out.read_text() == "keep me"


# -- 15. messages that name the file and say what to do


def test_a_text_file_given_to_convert_is_named_as_not_a_span_log(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, these are my notes\nand more\n")
    result = cli("convert", str(text), "-o", str(tmp_path / "o.jsonl"))
    assert result.returncode == 2
    assert f"{text}: not a span log" in result.stderr and "implausible" not in result.stderr


def test_a_converted_trace_file_given_to_convert_says_what_it_is(recorded, tmp_path):
    live, _, _ = recorded
    (trace_file,) = live.glob("traces-*.jsonl")
    result = cli("convert", str(trace_file), "-o", str(tmp_path / "o.jsonl"))
    assert result.returncode == 2
    message = (f"{trace_file}: this is a file of converted traces, not spans; use `orch-otel validate`, "
               "`orch-otel show` or `orch-otel dataset` on it")
    assert result.stderr.count(message) == 1  # once for the file, not once per line


def test_bad_option_values_name_the_option(tmp_path):
    result = cli("convert", str(tmp_path), "-o", str(tmp_path / "o.jsonl"), "--linger", "-1")
    assert result.returncode == 2 and "argument --linger: must be 0 or more, got -1" in result.stderr
    assert "linger and remember_closed" not in result.stderr  # not the internal parameter


def test_help_texts_point_to_nothing_a_wheel_lacks():
    for command in ("demo", "validate", "show", "convert", "dataset", "spool", "schema"):
        result = cli(command, "--help")
        assert result.returncode == 0
        text = " ".join(result.stdout.split())
        for path in ("examples/", "benchmarks/"):
            assert path not in text, (command, text)
        for doc in ("docs/",):
            assert doc not in text or "in the source repository" in text, (command, text)


# -- 16. reward(unit=, target=)


def _reward_team() -> None:
    @oo.agent("scout_a", role="researcher")
    def scout_a() -> None:
        with oo.llm_call("fake", input_messages=[{"role": "user", "content": "a"}]) as call:
            call.set_response([{"role": "assistant", "content": "a"}], input_tokens=1, output_tokens=1)

    @oo.agent("scout_b", role="researcher")
    def scout_b() -> None:
        with oo.llm_call("fake", input_messages=[{"role": "user", "content": "b"}]) as call:
            call.set_response([{"role": "assistant", "content": "b"}], input_tokens=1, output_tokens=1)

    @oo.agent("boss", role="orchestrator")
    async def boss() -> None:
        oo.spawn("scout_a", "scout_b")
        scout_a()
        scout_b()
        oo.reward(1.0, name="team", unit="team")
        oo.reward(0.9, name="quality", unit="role", target="researcher")
        oo.reward(0.4, name="speed", unit="agent", target="scout_a")
        oo.reward(0.5, name="bonus", unit="turn")  # no target a trace can name: refused
        oo.reward(0.5, name="bonus", unit="turn")  # ... and warned about once
        oo.reward(0.3, name="lonely", unit="agent")  # no target: refused
        oo.reward("high", name="bad")  # not a number: refused, never raised into the app
        oo.stop("end")

    with oo.workflow("reward_team", task_id="rewards-1"):
        asyncio.run(boss())


def test_reward_units_and_targets_are_honoured_or_refused_out_loud(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="orch_otel"):
        (trace,) = record(tmp_path / "traces", [_reward_team], capture=False)
    assert trace["rewards"] == {"team": 1.0, "quality@role:researcher": 0.9, "speed@scout_a": 0.4}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("reward(unit='turn') is not supported" in w for w in warnings) == 1
    assert sum("reward(unit='agent') needs target=" in w for w in warnings) == 1
    assert sum("reward() failed; not recorded" in w for w in warnings) == 1  # the value "high"
    build([tmp_path / "traces"], tmp_path / "out", Config(view="traces"))
    (row,) = [json.loads(x) for x in (tmp_path / "out" / "traces.jsonl").read_text().splitlines()]
    # Each scout made one step (its LLM call): the role reward 0.9 is split 0.45 / 0.45, and scout_a has its own 0.4.
    assert row["metrics"]["credit.per_agent.agent.scout_a"] == pytest.approx(0.45 + 0.4)
    assert row["metrics"]["credit.per_agent.agent.scout_b"] == pytest.approx(0.45)
    assert row["metrics"]["credit.per_agent.role.researcher"] == pytest.approx(1.3)
