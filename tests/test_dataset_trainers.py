"""The trainers' own formats: ``verl`` (the Parquet rows verl's RLHFDataset
reads: data_source, prompt, ability, reward_model {style, ground_truth},
extra_info), on the recorded supervisor run and the hand-made branches of
tests/fixtures/branches.py. ART: tests/test_dataset_art_lightning.py."""

from __future__ import annotations

import json

import pytest
from fixtures.branches import make_branches

from orch_otel.cli import main
from orch_otel.datasets import Config, ContentMissing, build

VERL_FIELDS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("trainers")
    return base, make_branches(base)


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("view", ["turns", "chat", "groups"])  # triplets are token ids (agent-lightning)
def test_verl_rows_have_exactly_verls_fields(runs, tmp_path, view):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = runs
    summary = build([base / ("captured" if view == "groups" else "recorded")], tmp_path, Config(view=view), fmt="verl")
    table = pq.read_table(tmp_path / f"{view}.verl.parquet")
    assert summary.output.endswith(f"{view}.verl.parquet")
    assert table.column_names == VERL_FIELDS
    assert [f.name for f in table.schema.field("reward_model").type] == ["style", "ground_truth"]
    rows = table.to_pylist()
    assert len(rows) == summary.rows_written > 0
    for row in rows:
        assert row["data_source"] == f"orch_otel/{view}"
        assert row["reward_model"]["style"] == "rule"
        assert {m["role"] for m in row["prompt"]} <= {"system", "user", "assistant", "tool"}
        assert row["prompt"], "a verl row starts from a prompt"


def test_verl_turns_prompt_and_ground_truth(runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = runs
    build([base / "recorded"], tmp_path, Config(view="turns"), fmt="verl")
    rows = pq.read_table(tmp_path / "turns.verl.parquet").to_pylist()
    # supervisor x3, math_expert x2, research_expert x2 (in trace order: sup, math, math, sup, research, research, sup)
    assert [r["ability"] for r in rows] == ["supervisor", "math_expert", "math_expert", "supervisor",
                                            "research_expert", "research_expert", "supervisor"]
    first = rows[0]
    assert [(m["role"], m["content"]) for m in first["prompt"]] == [("user", "add 1 and 2, then look up otel")]
    # a reply made only of tool calls: the calls as JSON text
    assert json.loads(first["reward_model"]["ground_truth"]) == [
        {"id": "call_to_math", "type": "function", "function": {"name": "transfer_to_math_expert", "arguments": "{}"}}]
    assert rows[2]["reward_model"]["ground_truth"] == "1 + 2 = 3"
    assert rows[-1]["reward_model"]["ground_truth"] == "all done"
    assert (first["extra_info"]["event_id"], first["extra_info"]["episode"], first["extra_info"]["turn_index"]) == ("e3", 0, 0)


def test_verl_groups_carry_the_option_and_advantage(runs, tmp_path):
    pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = runs
    build([base / "captured"], tmp_path, Config(view="groups"), fmt="verl")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "groups.verl.parquet"), split="train",
                               cache_dir=str(tmp_path / "cache"))
    by = {r["extra_info"]["trace_id"]: r for r in ds}
    research = by["b-research"]
    assert research["reward_model"]["ground_truth"] == '["research_expert"]'
    assert research["extra_info"]["option"] == ["research_expert"]
    assert research["extra_info"]["recorded"] == ["math_expert"]
    assert research["extra_info"]["advantage"] == -0.5 and research["extra_info"]["reward"] == 0.0
    assert [(m["role"], m["content"]) for m in research["prompt"]] == [("user", "add 1 and 2, then look up otel")]


@pytest.mark.parametrize(("view", "fmt"), [("decisions", "verl"), ("preferences", "verl"), ("triplets", "verl"), ("turns", "art"),
                                           ("traces", "art")])
def test_a_format_that_does_not_fit_the_view_is_refused(runs, tmp_path, view, fmt):
    base, _ = runs
    with pytest.raises(ValueError, match=f"the {fmt} format does not fit the {view} view") as caught:
        build([base / "captured"], tmp_path / "out", Config(view=view), fmt=fmt)
    assert "write " + view + " as jsonl, parquet, hf" in str(caught.value)
    assert not (tmp_path / "out").exists()  # nothing written, not even the folder


def test_cli_refuses_a_format_that_does_not_fit(runs, tmp_path, capsys):
    base, _ = runs
    code = main(["dataset", str(base / "captured"), "-o", str(tmp_path / "out"), "--view", "decisions", "--format", "art"])
    assert code == 2
    err = capsys.readouterr().err
    assert "the art format does not fit the decisions view" in err and "art takes the chat view (rows" in err


def test_trainer_formats_need_captured_content(runs, tmp_path):
    base, _ = runs
    # turns alone would not need it; every trace lacks it, so no row: an error, not an empty success
    with pytest.raises(ContentMissing, match="none of the 7 trace"):
        build([base / "refs_only"], tmp_path / "plain", Config(view="turns"), fmt="verl")
    assert not (tmp_path / "plain" / "turns.verl.parquet").exists()
    with pytest.raises(ContentMissing, match="the turns view needs captured content"):
        build([base / "refs_only"], tmp_path / "strict", Config(view="turns"), fmt="verl", strict=True)
    with pytest.raises(ContentMissing, match="the groups view needs captured content"):
        build([base / "refs_only"], tmp_path / "strict", Config(view="groups"), fmt="verl", strict=True)
