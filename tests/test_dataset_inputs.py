"""Bad input never lost silently: malformed trace lines kept aside with
file:line, outcome files with unknown ids or bad values rejected clearly;
outcome joins and reward specs; the ``orch-otel dataset`` command."""

from __future__ import annotations

import json

import orjson
import pytest
from fixtures.dataset_runs import record, supervisor_run

from orch_otel.cli import main
from orch_otel.datasets import Config, OutcomeError, Outcomes, RewardSpec, RewardSpecError, build


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("inputs")
    traces = record(base / "traces", [lambda: supervisor_run("calc-ok", 3), lambda: supervisor_run("calc-budget", 1)],
                    capture=False)
    return base / "traces", traces


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_malformed_lines_are_reported_and_kept_aside(runs, tmp_path):
    src, traces = runs
    good = orjson.dumps(traces[0]).decode()
    missing_events = orjson.dumps({**traces[1], "events": []}).decode()
    bad_event = orjson.dumps({**traces[1], "events": [{"id": "e1", "type": "teleport", "agent": "x", "t": 0}]}).decode()
    lines = [good, '{"trace_id": "abc", "events": [', "[1, 2]", "", missing_events, bad_event]
    path = tmp_path / "in" / "traces-mixed.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(lines) + "\n")
    summary = build([path.parent], tmp_path / "out", Config(view="decisions"))
    assert (summary.traces_read, summary.traces_used, summary.rejects) == (1, 1, 4)  # rejected lines are not traces
    rejects = _rows(tmp_path / "out" / "decisions.rejects.jsonl")
    assert [r["where"] for r in rejects] == [f"{path}:{n}" for n in (2, 3, 5, 6)]
    assert rejects[0]["error"].startswith("malformed JSON")
    assert rejects[1]["error"] == "expected a JSON object (one trace per line), got list"
    assert rejects[2]["error"] == "events: missing or empty"
    assert rejects[3]["error"] == "events[0].type: 'teleport' is not an event type"
    assert [r["line"] for r in rejects] == [lines[1], lines[2], lines[4], lines[5]]  # kept verbatim
    rows = _rows(tmp_path / "out" / "decisions.jsonl")
    assert {r["trace_id"] for r in rows} == {traces[0]["trace_id"]}
    summary_file = json.loads((tmp_path / "out" / "decisions.summary.json").read_text())
    assert summary_file["rejects"] == 4 and summary_file["rows_written"] == len(rows)


def test_validate_flag_runs_the_full_contract(runs, tmp_path):
    src, traces = runs
    broken = dict(traces[0])
    broken["events"] = [e for e in broken["events"] if e.get("decision") != "stop"]
    path = tmp_path / "traces-broken.jsonl"
    path.write_text(orjson.dumps(broken).decode() + "\n" + orjson.dumps(traces[1]).decode() + "\n")  # not all rejected
    assert build([path], tmp_path / "a", Config(view="decisions")).rejects == 0
    summary = build([path], tmp_path / "b", Config(view="decisions", validate=True))
    assert summary.rejects == 1
    assert "no stop decision" in _rows(tmp_path / "b" / "decisions.rejects.jsonl")[0]["error"]


def test_outcomes_join_by_task_and_trace_id(runs, tmp_path):
    src, traces = runs
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(
        json.dumps({"task_id": "calc-ok", "success": True, "reward": 0.8}) + "\n"
        + json.dumps({"trace_id": traces[1]["trace_id"], "success": 0, "score": 0.25}) + "\n"
    )
    config = Config(view="decisions", outcomes=Outcomes.load(outcomes))
    build([src], tmp_path / "out", config)
    rows = _rows(tmp_path / "out" / "decisions.jsonl")
    ok = [r for r in rows if r["task_id"] == "calc-ok"]
    budget = [r for r in rows if r["task_id"] == "calc-budget"]
    assert {(r["reward"], r["outcome_success"], r["outcome_reward"], r["outcome_score"]) for r in ok} == {
        (0.8, 1.0, 0.8, None)}
    assert {(r["reward"], r["outcome_success"], r["outcome_score"]) for r in budget} == {(0.0, 0.0, 0.25)}
    assert ok[0]["rewards"] == {"team": 1.0, "success": 1.0, "reward": 0.8}
    build([src], tmp_path / "tr", Config(view="traces", outcomes=Outcomes.load(outcomes)))
    written = {t["task_id"]: t for t in _rows(tmp_path / "tr" / "traces.jsonl")}
    assert written["calc-budget"]["rewards"] == {"team": 0.0, "success": 0.0, "score": 0.25}
    assert written["calc-ok"]["metrics"]["task_success"] == 1.0
    assert written["calc-budget"]["metrics"]["stop_efficiency"] == 0.0


def test_unknown_outcome_ids_are_errors_naming_file_and_line(runs, tmp_path):
    src, _ = runs
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("task_id,success\ncalc-ok,1\nno-such-task,0\n")
    config = Config(view="decisions", outcomes=Outcomes.load(outcomes))
    with pytest.raises(OutcomeError) as err:
        build([src], tmp_path / "out", config)
    assert f"{outcomes}:3: task_id 'no-such-task' matches no trace in the input" in str(err.value)
    assert not (tmp_path / "out" / "decisions.jsonl").exists()
    summary = build([src], tmp_path / "out", config, allow_unknown_outcomes=True)
    assert len(summary.unknown_outcomes) == 1 and summary.rows_written > 0


@pytest.mark.parametrize(("name", "text", "message"), [
    ("o.jsonl", '{"task_id": "calc-ok", "success": "yes"}\n',
     "o.jsonl:1: field 'success': 'yes' is not a number or boolean"),
    ("o.csv", "trace_id,score\nabc,0.5\ndef,high\n", "o.csv:3: field 'score': 'high' is not a number or boolean"),
    ("o.jsonl", '{"success": 1}\n', "o.jsonl:1: needs exactly one of 'trace_id' or 'task_id' (found neither)"),
    ("o.jsonl", '{"task_id": "a", "x": 1}\n\n{"task_id": "a", "x": 2}\n',
     "o.jsonl:3: task_id 'a' already has outcomes at"),
    ("o.jsonl", '{"task_id": "a", "x": NaN}\n', "o.jsonl:1: malformed JSON"),
    ("o.jsonl", '{"task_id": "a", "x": [1]}\n', "o.jsonl:1: field 'x': [1] is not a number or boolean"),
    ("o.csv", "task_id,x\na,inf\n", "o.csv:2: field 'x': 'inf' is not a finite number"),
])
def test_bad_outcome_values_are_clear_errors(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(OutcomeError) as err:
        Outcomes.load(path)
    assert str(err.value).startswith(f"{tmp_path}/{message}")


def test_reward_spec_weights_rewards_and_metrics(runs, tmp_path):
    src, _ = runs
    spec = RewardSpec.parse("team=1, tool_success_rate=0.5, cost_llm_calls=-0.1")
    build([src], tmp_path, Config(view="traces", reward=spec))
    ok = next(t for t in _rows(tmp_path / "traces.jsonl") if t["task_id"] == "calc-ok")
    assert ok["rewards"]["reward"] == pytest.approx(1.0 + 0.5 * 1.0 - 0.1 * 3)
    for bad in ("", "team=high", "=2"):
        with pytest.raises(RewardSpecError):
            RewardSpec.parse(bad)


def test_cli_writes_the_view_and_prints_a_summary(runs, tmp_path, capsys):
    src, _ = runs
    assert main(["dataset", str(src), "-o", str(tmp_path), "--view", "decisions", "--format", "jsonl",
                 "--credit", "broadcast,per_agent"]) == 0
    out = capsys.readouterr().out
    assert "traces read" in out and "rows written (decisions)" in out
    row = _rows(tmp_path / "decisions.jsonl")[0]
    assert "credit_per_agent" in row and "credit_discounted" not in row


def test_cli_errors_are_clear(runs, tmp_path, capsys):
    src, _ = runs
    assert main(["dataset", str(src), "-o", str(tmp_path), "--view", "chat", "--strict"]) == 1
    assert "needs captured content" in capsys.readouterr().err
    # every trace lacks content: no row to write, so not a success (docs/datasets.md, Without captured content)
    assert main(["dataset", str(src), "-o", str(tmp_path), "--view", "chat"]) == 1
    assert "none of the 2 trace(s) read has the captured content the chat view needs" in capsys.readouterr().err
    bad = tmp_path / "o.jsonl"
    bad.write_text('{"task_id": "calc-ok", "success": "maybe"}\n')
    assert main(["dataset", str(src), "-o", str(tmp_path), "--view", "turns", "--outcomes", str(bad)]) == 2
    assert "field 'success': 'maybe' is not a number" in capsys.readouterr().err
    assert main(["dataset", str(tmp_path / "nope"), "-o", str(tmp_path), "--view", "turns"]) == 2  # no input
    assert "no such file or directory" in capsys.readouterr().err


def test_an_output_named_like_a_file_is_refused(runs, tmp_path, capsys):
    # convert's -o is a file, dataset's a folder: `-o decisions.jsonl` would make a folder decisions.jsonl/
    src, _ = runs
    out = tmp_path / "decisions.jsonl"
    assert main(["dataset", str(src), "-o", str(out), "--view", "decisions"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "-o names the folder to write into (the rows go to OUTDIR/decisions.jsonl)" in err
    assert f"use -o {tmp_path / 'decisions'}" in err
    assert not out.exists()
    out.mkdir()  # an existing folder of that name is the user's choice
    assert main(["dataset", str(src), "-o", str(out), "--view", "decisions"]) == 0
    assert (out / "decisions.jsonl").is_file()
