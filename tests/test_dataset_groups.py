"""The groups and preferences views, built from branch traces made by hand
from one real recorded supervisor run (tests/fixtures/branches.py says how:
the fork event and the rewards are edited by hand; replay itself is issue
16's other half). Expected values are worked out from the rewards set there.

Groups: e5 (delegate: b-math 1.0, b-research 0.0), e1 (spawn, no LLM decides
it: b-spawn-supervisor 1.0, b-spawn-math 0.0, b-spawn-research 0.0), e32
(stop: b-stop 0.5 alone). The source trace itself is no branch.
"""

from __future__ import annotations

import json
import math
import shutil

import pytest
from fixtures.branches import make_branches

from orch_otel.cli import main
from orch_otel.datasets import Config, ContentMissing, NoBranches, NoPairs, build


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("branches")
    return base, make_branches(base)


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _by_trace(rows):
    return {r["trace_id"]: r for r in rows}


def test_groups_one_row_per_branch_with_hand_computed_advantages(runs, tmp_path):
    base, info = runs
    summary = build([base / "captured"], tmp_path, Config(view="groups"))
    rows = _rows(tmp_path / "groups.jsonl")
    assert (summary.rows_written, summary.traces_used, summary.traces_not_branches, summary.groups) == (6, 6, 1, 3)
    assert summary.rejects == 0 and summary.traces_skipped == 0  # the source is skipped, not rejected
    assert info["source"]["trace_id"] not in {r["trace_id"] for r in rows}
    by = _by_trace(rows)
    # e5: rewards 1 and 0: mean 0.5, population std 0.5
    for tid, reward, adv in (("b-math", 1.0, 0.5), ("b-research", 0.0, -0.5)):
        row = by[tid]
        assert row["group_id"] == info["groups"]["delegate"]
        assert (row["reward"], row["group_size"], row["group_mean"], row["group_std"]) == (reward, 2, 0.5, 0.5)
        assert row["advantage"] == adv
        assert row["advantage_normalized"] == adv / (0.5 + 1e-6)
    # e1: rewards 1, 0, 0: mean 1/3, population std sqrt(((2/3)^2 + 2 (1/3)^2) / 3) = sqrt(2) / 3
    std = math.sqrt(2) / 3
    for tid, adv in (("b-spawn-supervisor", 2 / 3), ("b-spawn-math", -1 / 3), ("b-spawn-research", -1 / 3)):
        row = by[tid]
        assert row["group_size"] == 3
        assert row["group_mean"] == pytest.approx(1 / 3, abs=1e-15)
        assert row["group_std"] == pytest.approx(std, abs=1e-15)
        assert row["advantage"] == pytest.approx(adv, abs=1e-15)
        assert row["advantage_normalized"] == pytest.approx(adv / (std + 1e-6), abs=1e-12)
    # a group of one: advantage 0, normalised 0 (0 / eps)
    alone = by["b-stop"]
    assert (alone["group_size"], alone["group_mean"], alone["group_std"]) == (1, 0.5, 0.0)
    assert (alone["advantage"], alone["advantage_normalized"]) == (0.0, 0.0)


def test_groups_rows_say_where_the_fork_was_and_what_was_forced(runs, tmp_path):
    base, info = runs
    build([base / "captured"], tmp_path, Config(view="groups"))
    by = _by_trace(_rows(tmp_path / "groups.jsonl"))
    source = info["source"]["trace_id"]
    research = by["b-research"]
    assert (research["source_trace_id"], research["fork_event_id"], research["decision"]) == (source, "e5", "delegate")
    assert (research["agent"], research["option"], research["recorded"]) == ("supervisor", ["research_expert"], ["math_expert"])
    assert sorted(research["options"]) == ["math_expert", "research_expert"]  # as recorded (in no fixed order)
    assert research["task_id"] == info["source"]["task_id"]  # a branch keeps its source's task
    assert research["prompt"] == [{"role": "user", "content": "add 1 and 2, then look up otel"}]
    stop = by["b-stop"]
    assert (stop["decision"], stop["option"], stop["recorded"]) == ("stop", [], [])
    spawn = by["b-spawn-math"]  # no LLM made this decision: the prompt states it
    assert spawn["prompt"] == [{"role": "user", "content": "supervision decides: spawn"}]


def test_groups_context_is_the_decisions_views_context(runs, tmp_path):
    base, _ = runs
    build([base / "captured"], tmp_path / "g", Config(view="groups"))
    build([base / "captured"], tmp_path / "d", Config(view="decisions"))
    decisions = [r for r in _rows(tmp_path / "d" / "decisions.jsonl") if r["trace_id"] == "b-math"]
    (at_fork,) = [r for r in decisions if r["event_id"] == "e5"]
    group_row = _by_trace(_rows(tmp_path / "g" / "groups.jsonl"))["b-math"]
    assert group_row["context"] == at_fork["context"]
    assert [c["kind"] for c in group_row["context"]] == ["llm_input", "llm_output"]  # the supervisor's call e3


def test_preferences_pair_only_branches_with_different_rewards(runs, tmp_path):
    base, info = runs
    summary = build([base / "captured"], tmp_path, Config(view="preferences"))
    rows = _rows(tmp_path / "preferences.jsonl")
    # e5: one pair; e1: the 1.0 branch against each 0.0 one (the two 0.0 branches make no pair); e32: none
    assert [(r["chosen_trace_id"], r["rejected_trace_id"]) for r in rows] == [
        ("b-math", "b-research"), ("b-spawn-supervisor", "b-spawn-math"), ("b-spawn-supervisor", "b-spawn-research")]
    assert summary.rows_written == 3 and summary.groups == 3
    for row in rows:
        assert row["chosen_reward"] > row["rejected_reward"]
    delegate = rows[0]
    assert delegate["group_id"] == info["groups"]["delegate"]
    assert delegate["prompt"] == [{"role": "user", "content": "add 1 and 2, then look up otel"}]
    # the supervisor's own replies at e3 in each branch (they differ, so they are the pair)
    assert delegate["chosen"] == [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_to_math", "type": "function", "function": {"name": "transfer_to_math_expert", "arguments": {}}}]}]
    assert delegate["rejected"] == [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_to_research_first", "type": "function",
         "function": {"name": "transfer_to_research_expert", "arguments": {}}}]}]
    # the decider's tools, handoff tools included: what the pair chooses between
    assert {t["function"]["name"] for t in delegate["tools"]} == {"transfer_to_math_expert",
                                                                   "transfer_to_research_expert"}
    assert (delegate["chosen_option"], delegate["rejected_option"]) == (["math_expert"], ["research_expert"])
    # e1 was not decided by an LLM: each side is one assistant message stating the choice
    spawn = rows[1]
    assert spawn["prompt"] == [{"role": "user", "content": "supervision decides: spawn"}]
    assert spawn["chosen"] == [{"role": "assistant", "content": '{"decision":"spawn","targets":["supervisor"]}'}]
    assert spawn["rejected"] == [{"role": "assistant", "content": '{"decision":"spawn","targets":["math_expert"]}'}]


def test_groups_and_preferences_load_with_pyarrow_and_hf_datasets(runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = runs
    for view in ("groups", "preferences"):
        build([base / "captured"], tmp_path, Config(view=view), fmt="parquet")
        build([base / "captured"], tmp_path, Config(view=view), fmt="hf")
        build([base / "captured"], tmp_path, Config(view=view))
        want = _rows(tmp_path / f"{view}.jsonl")
        table = pq.read_table(tmp_path / f"{view}.parquet")
        assert table.num_rows == len(want) > 0
        from_disk = datasets.load_from_disk(str(tmp_path / view))
        from_parquet = datasets.load_dataset("parquet", data_files=str(tmp_path / f"{view}.parquet"), split="train",
                                             cache_dir=str(tmp_path / "cache"))
        for ds in (from_disk, from_parquet):
            assert len(ds) == len(want)
            if view == "groups":
                assert ds["trace_id"] == [r["trace_id"] for r in want]
                assert ds["advantage"] == [r["advantage"] for r in want]
                assert ds["option"] == [r["option"] for r in want]
                assert ds["context"] == [r["context"] for r in want]  # a Json column, decoded back
            else:
                assert [[(m["role"], m["content"]) for m in c] for c in ds["chosen"]] == [
                    [(m["role"], m["content"]) for m in r["chosen"]] for r in want]
                assert [[(m["role"], m["content"]) for m in p] for p in ds["prompt"]] == [
                    [(m["role"], m["content"]) for m in r["prompt"]] for r in want]


def test_preferences_need_captured_content(runs, tmp_path):
    base, _ = runs
    summary = build([base / "refs_only"], tmp_path, Config(view="preferences"))
    # the branches decided by the supervisor's LLM have no content here: skipped and named; e1's need none
    assert set(summary.skipped_trace_ids) == {"b-math", "b-research", "b-stop"}
    assert summary.rows_written == 2 and summary.traces_not_branches == 1
    with pytest.raises(ContentMissing, match="the preferences view needs captured content"):
        build([base / "refs_only"], tmp_path / "strict", Config(view="preferences"), strict=True)
    assert not (tmp_path / "strict" / "preferences.jsonl").exists()


def test_groups_work_without_content(runs, tmp_path):
    base, _ = runs
    summary = build([base / "refs_only"], tmp_path, Config(view="groups"))
    by = _by_trace(_rows(tmp_path / "groups.jsonl"))
    assert summary.rows_written == 6 and summary.traces_skipped == 0
    assert by["b-math"]["prompt"] is None
    assert by["b-math"]["advantage"] == 0.5


def test_no_branch_among_the_traces_is_a_clear_error(runs, tmp_path):
    base, _ = runs
    with pytest.raises(NoBranches, match=r"none of the 1 trace\(s\) read is a branch of a fork"):
        build([base / "recorded"], tmp_path / "out", Config(view="groups"))
    assert not (tmp_path / "out").exists()


def test_a_malformed_fork_rejects_its_trace_naming_the_field(runs, tmp_path):
    base, info = runs
    bad = json.loads(json.dumps(info["branches"]["b-math"]))
    fork_at = next(i for i, e in enumerate(bad["events"]) if "fork" in e)
    bad["events"][fork_at]["fork"]["forced"] = 7
    good = info["branches"]["b-research"]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "traces-x.jsonl").write_text(json.dumps(bad) + "\n" + json.dumps(good) + "\n")
    summary = build([tmp_path / "in"], tmp_path / "out", Config(view="groups"))
    assert summary.rejects == 1 and summary.rows_written == 1
    (reject,) = _rows(tmp_path / "out" / "groups.rejects.jsonl")
    assert reject["where"].endswith("traces-x.jsonl:1")
    assert f"events[{fork_at}].fork.forced: expected a list of strings, got 7" in reject["error"]


def test_cli_groups_summary_and_exit_codes(runs, tmp_path, capsys):
    base, _ = runs
    assert main(["dataset", str(base / "captured"), "-o", str(tmp_path / "out"), "--view", "groups"]) == 0
    out = capsys.readouterr().out
    assert "traces without a fork (not branches)" in out and "groups of branches" in out
    assert main(["dataset", str(base / "recorded"), "-o", str(tmp_path / "none"), "--view", "preferences"]) == 1
    assert "is a branch of a fork" in capsys.readouterr().err


def test_rewards_come_from_outcomes_and_the_reward_spec(runs, tmp_path):
    from orch_otel.datasets import Outcomes, RewardSpec

    base, _ = runs
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"trace_id": "b-research", "reward": 3.0}) + "\n")
    build([base / "captured"], tmp_path / "o", Config(view="groups", outcomes=Outcomes.load(outcomes)))
    by = _by_trace(_rows(tmp_path / "o" / "groups.jsonl"))
    # e5 now: b-math 1.0 (its emitted success), b-research 3.0 (the outcome): mean 2, population std 1
    assert (by["b-math"]["reward"], by["b-research"]["reward"]) == (1.0, 3.0)
    assert (by["b-math"]["advantage"], by["b-research"]["advantage"]) == (-1.0, 1.0)
    assert by["b-research"]["advantage_normalized"] == 1.0 / (1.0 + 1e-6)
    assert by["b-research"]["outcome_reward"] == 3.0
    build([base / "captured"], tmp_path / "s", Config(view="groups", reward=RewardSpec.parse("success=-2")))
    by = _by_trace(_rows(tmp_path / "s" / "groups.jsonl"))
    assert (by["b-math"]["reward"], by["b-research"]["reward"], by["b-math"]["advantage"]) == (-2.0, 0.0, -1.0)


def test_a_branch_without_a_reward_gets_no_advantage_and_no_pair(runs, tmp_path):
    base, info = runs
    rewarded = info["branches"]["b-stop"]
    unrewarded = {**json.loads(json.dumps(rewarded)), "trace_id": "b-stop-unrewarded", "rewards": {}}
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "traces-x.jsonl").write_text(json.dumps(rewarded) + "\n" + json.dumps(unrewarded) + "\n")
    shutil.copytree(base / "captured" / "content", tmp_path / "in" / "content")
    build([tmp_path / "in"], tmp_path / "out", Config(view="groups"))
    by = _by_trace(_rows(tmp_path / "out" / "groups.jsonl"))
    assert by["b-stop-unrewarded"]["reward"] is None
    assert (by["b-stop-unrewarded"]["advantage"], by["b-stop-unrewarded"]["advantage_normalized"]) == (None, None)
    # the group counts both branches, its statistics only the rewarded one
    assert (by["b-stop"]["group_size"], by["b-stop"]["group_mean"], by["b-stop"]["advantage"]) == (2, 0.5, 0.0)
    # no pair to write: a clear error (exit 1), not an empty file that looks like success
    with pytest.raises(NoPairs, match=r"of the 2 branch\(es\) read \(1 group\(s\)\), 1 have no reward and the others"):
        build([tmp_path / "in"], tmp_path / "out", Config(view="preferences"))
    assert not (tmp_path / "out" / "preferences.jsonl").exists()


def _unrewarded(info, folder):
    """The delegate fork's two branches as a replay writes them: no reward emitted."""
    folder.mkdir()
    lines = [json.dumps({**info["branches"][tid], "rewards": {}}) for tid in ("b-math", "b-research")]
    (folder / "traces-x.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_preferences_from_unscored_branches_say_how_to_score_them(runs, tmp_path, capsys):
    base, info = runs
    folder = _unrewarded(info, tmp_path / "in")
    shutil.copytree(base / "captured" / "content", folder / "content")
    with pytest.raises(NoPairs, match=r"none of the 2 branch\(es\) read \(1 group\(s\)\) has a reward.*--outcomes FILE"):
        build([folder], tmp_path / "out", Config(view="preferences"))
    # an outcomes file scores them, but its column is not the reward until --reward names it: say so
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("trace_id,success\nb-math,true\nb-research,false\n")
    assert main(["dataset", str(folder), "-o", str(tmp_path / "out"), "--view", "preferences",
                 "--outcomes", str(outcomes)]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "has a reward; these traces and outcomes have success: pass --reward success to use it" in err
    assert not (tmp_path / "out").exists()
    assert main(["dataset", str(folder), "-o", str(tmp_path / "out"), "--view", "preferences",
                 "--outcomes", str(outcomes), "--reward", "success"]) == 0
    (pair,) = _rows(tmp_path / "out" / "preferences.jsonl")
    assert (pair["chosen_trace_id"], pair["rejected_trace_id"]) == ("b-math", "b-research")
    # groups of unscored branches are written (a trainer may score them), and the summary says they lack rewards
    assert main(["dataset", str(folder), "-o", str(tmp_path / "groups"), "--view", "groups"]) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "branches without a reward 2: null advantage, in no pair" in out


def test_the_event_carrying_the_fork_is_the_decision_point_whatever_its_id(runs, tmp_path):
    """After the fork a branch may number its events otherwise than its source
    (a stop branch has no handoff tool call), and a branch that ended before
    deciding carries the fork on another event: the row still comes from the
    event that carries it."""
    base, info = runs
    moved = json.loads(json.dumps(info["branches"]["b-stop"]))
    events = {e["id"]: e for e in moved["events"]}
    events["e33"]["fork"] = events["e32"].pop("fork")  # on the supervisor's return: no decision
    moved["trace_id"] = "b-stop-moved"
    renumbered = json.loads(json.dumps(info["branches"]["b-research"]))
    renumbered["trace_id"] = "b-research-renumbered"
    for e in renumbered["events"]:
        if e["id"] == "e5":
            e["id"] = "e4b"  # fork.event_id stays e5, the source's
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "traces-x.jsonl").write_text(json.dumps(moved) + "\n" + json.dumps(renumbered) + "\n")
    shutil.copytree(base / "captured" / "content", tmp_path / "in" / "content")
    summary = build([tmp_path / "in"], tmp_path / "out", Config(view="groups"))
    assert summary.rejects == 0
    by = _by_trace(_rows(tmp_path / "out" / "groups.jsonl"))
    # the supervisor's last LLM call (e31) is still what it saw
    assert [(c["kind"], c["event_id"]) for c in by["b-stop-moved"]["context"]] == [("llm_input", "e31"), ("llm_output", "e31")]
    assert by["b-stop-moved"]["fork_event_id"] == "e32" and by["b-stop-moved"]["group_id"] == info["groups"]["stop"]
    assert by["b-research-renumbered"]["fork_event_id"] == "e5"
    assert by["b-research-renumbered"]["group_id"] == info["groups"]["delegate"]
    assert by["b-research-renumbered"]["prompt"] == [{"role": "user", "content": "add 1 and 2, then look up otel"}]
