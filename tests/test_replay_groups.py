"""Groups and preferences from real replay branches: the supervisor run
recorded with content, forked at its first delegation once per option
(``orch_otel.replay(..., fork=, choose=)``, as ``--choose-each`` does), each
branch given a reward by hand (the math branch solved the task: 1, the
research branch did not: 0), then the two dataset views built and loaded."""

from __future__ import annotations

import json

import pytest
from fixtures.dataset_runs import record_instrumented

from orch_otel.datasets import Config, build
from orch_otel.tracefiles import TraceWriter, load_contents


@pytest.fixture(scope="module")
def branches(tmp_path_factory):
    from langchain_core.messages import HumanMessage
    from langgraph_apps import build_supervisor

    from orch_otel.integrations.langgraph import LangGraphInstrumentor
    from orch_otel.replaying import options_at, replay

    base = tmp_path_factory.mktemp("replay_groups")

    def run() -> None:
        build_supervisor().invoke({"messages": [HumanMessage("add 1 and 2, then look up otel")]})

    (source,) = record_instrumented(base / "recorded", LangGraphInstrumentor(), run)
    contents = load_contents(base / "recorded")
    fork = next(e for e in source["events"] if e.get("decision") == "delegate" and not e.get("implied"))
    instrumentor = LangGraphInstrumentor()
    instrumentor.instrument()
    writer = TraceWriter(base / "branches")
    try:
        for option in options_at(source, contents, fork["id"]):
            result = replay(source, build_supervisor(), contents=contents, fork=fork["id"], choose=option)
            branch = result.trace
            branch["rewards"] = {"success": 1.0 if option == "math_expert" else 0.0}  # by hand
            writer.write(branch, result.contents)
    finally:
        instrumentor.uninstrument()
        writer.close()
    return base / "branches", source, fork


def test_groups_from_replay_branches(branches, tmp_path):
    folder, source, fork = branches
    summary = build([folder], tmp_path, Config(view="groups"))
    rows = [json.loads(line) for line in (tmp_path / "groups.jsonl").read_text().splitlines()]
    assert summary.groups == 1 and summary.rows_written == 2
    assert {r["group_id"] for r in rows} == {f"{source['trace_id']}/{fork['id']}"}
    by_option = {tuple(r["option"]): r for r in rows}
    assert by_option[("math_expert",)]["advantage"] == 0.5
    assert by_option[("research_expert",)]["advantage"] == -0.5
    assert {r["recorded"] == ["math_expert"] for r in rows} == {True}


def test_preferences_from_replay_branches_load_with_pyarrow_and_datasets(branches, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is in the optional extra: pip install 'orch-otel[datasets]'")
    folder, _, _ = branches
    build([folder], tmp_path, Config(view="preferences"), fmt="parquet")
    build([folder], tmp_path, Config(view="groups"), fmt="hf")
    assert pq.read_table(tmp_path / "preferences.parquet").num_rows == 1
    (pair,) = datasets.load_dataset("parquet", data_files=str(tmp_path / "preferences.parquet"), split="train",
                                    cache_dir=str(tmp_path / "cache"))
    # the supervisor's reply at the fork, as served in each branch: the handoff it made
    (chosen,) = pair["chosen"][0]["tool_calls"]
    (rejected,) = pair["rejected"][0]["tool_calls"]
    assert (chosen["function"]["name"], chosen["id"]) == ("transfer_to_math_expert", "call_to_math")
    assert rejected["function"]["name"] == "transfer_to_research_expert"
    assert rejected["id"] != "call_to_math"  # a changed call is not the recorded one: an id of its own
    assert chosen["function"]["arguments"] == rejected["function"]["arguments"] == {}  # as chat templates take them
    assert {t["function"]["name"] for t in pair["tools"]} == {"transfer_to_math_expert", "transfer_to_research_expert"}
    assert [(m["role"], m["content"]) for m in pair["prompt"]] == [("user", "add 1 and 2, then look up otel")]
    assert len(datasets.load_from_disk(str(tmp_path / "groups"))) == 2
