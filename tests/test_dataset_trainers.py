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
    # chat rows also carry MultiTurnSFTDataset's messages and tools
    assert table.column_names == VERL_FIELDS + (["messages", "tools"] if view == "chat" else [])
    assert [f.name for f in table.schema.field("reward_model").type] == ["style", "ground_truth"]
    rows = table.to_pylist()
    assert len(rows) == summary.rows_written > 0
    for row in rows:
        assert row["data_source"] == f"orch_otel/{view}"
        assert row["reward_model"]["style"] == "rule"
        assert {m["role"] for m in row["prompt"]} <= {"system", "user", "assistant", "tool"}
        assert row["prompt"], "a verl row starts from a prompt"
    assert [r["extra_info"]["index"] for r in rows] == list(range(len(rows)))  # unique: verl keys samples by it


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


def test_a_call_cut_off_before_it_answered_trains_no_empty_reply(runs, tmp_path):
    """A cancelled run records the LLM call with its prompt and no output
    (no ``content_ref``): the chat view must not make it an empty trainable reply."""
    from orch_otel.tracefiles import TraceWriter, load_contents

    base, info = runs
    trace = json.loads(json.dumps(info["source"]))
    last = [e for e in trace["events"] if e["type"] == "message" and e.get("channel") == "llm"][-1]
    assert last["agent"] == "supervisor"
    del last["content_ref"]  # the supervisor's "all done" call, cut off
    writer = TraceWriter(tmp_path / "cut")
    writer.write(trace, load_contents(base / "recorded"))
    writer.close()
    build([tmp_path / "cut"], tmp_path, Config(view="chat"))
    rows = _rows(tmp_path / "chat.jsonl")
    replies = [m for r in rows for m in r["messages"] if m.get("trainable")]
    assert replies and all(m["content"] or m.get("tool_calls") for m in replies)
    assert "all done" not in [m["content"] for m in replies]
    assert len(replies) == 6  # the 7 calls of the run, less the cut one


def test_a_call_whose_prompt_does_not_extend_the_row_starts_a_new_row(tmp_path):
    """langgraph_apps.build_trimming_agent: the pre_model_hook sends the third
    call [human, the add(3, 4) call, its result]. Each chat row is what its
    last call was sent, then its reply; the add(3, 4) call is trained in the
    first row only."""
    import langgraph_apps as apps
    from fixtures.dataset_runs import record_instrumented

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    record_instrumented(tmp_path / "t", LangGraphInstrumentor(),
                        lambda: apps.build_trimming_agent().invoke(apps.user_input("add")))
    build([tmp_path / "t"], tmp_path, Config(view="chat"))
    first, second = _rows(tmp_path / "chat.jsonl")
    add_12 = {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    add_34 = {"id": "call_b", "type": "function", "function": {"name": "add", "arguments": {"a": 3, "b": 4}}}
    assert first["messages"] == [
        {"role": "user", "content": "add"},
        {"role": "assistant", "content": "", "tool_calls": [add_12], "trainable": True, "weight": 1},
        {"role": "tool", "content": "3", "tool_call_id": "call_a"},
        {"role": "assistant", "content": "", "tool_calls": [add_34], "trainable": True, "weight": 1}]
    assert second["messages"] == [
        {"role": "user", "content": "add"},
        {"role": "assistant", "content": "", "tool_calls": [add_34], "trainable": False, "weight": 0},
        {"role": "tool", "content": "7", "tool_call_id": "call_b"},
        {"role": "assistant", "content": "3 and 7", "trainable": True, "weight": 1}]
    assert (first["segment"], second["segment"]) == (0, 1)
    assert second["prompt"] == second["messages"][:3] and second["completion"] == second["messages"][3:]


def test_a_reply_from_an_earlier_run_of_the_thread_is_the_agents_own_turn(tmp_path):
    """langgraph_apps.build_resumable_chat, run twice on one thread: the second
    run's prompt holds the first run's answer; it is the agent's own turn
    (assistant, not trained again), not another speaker's message."""
    import langgraph_apps as apps
    from fixtures.dataset_runs import record_instrumented

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    agent, config = apps.build_resumable_chat(), {"configurable": {"thread_id": "thread-1"}}

    def two_runs() -> None:
        agent.invoke(apps.user_input("hi"), config)
        agent.invoke(apps.user_input("again"), config)

    first, second = record_instrumented(tmp_path / "t", LangGraphInstrumentor(), two_runs)
    assert first["task_id"] == second["task_id"] == "thread-1"
    build([tmp_path / "t"], tmp_path, Config(view="chat"))
    rows = {r["trace_id"]: r for r in _rows(tmp_path / "chat.jsonl")}
    assert rows[second["trace_id"]]["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello there", "trainable": False, "weight": 0},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "second answer", "trainable": True, "weight": 1}]


def test_a_multi_agent_graph_resumed_on_its_thread_reads_each_agents_earlier_turns_as_its_own(tmp_path):
    """langgraph_apps.build_resumable_helpdesk (triage -> billing, plain model
    nodes: no message names its speaker), run twice on one thread: in run 2,
    each agent's run-1 reply is its own turn (context, not trained again) and
    the other agent's is that agent's input, named; each reply is trained once
    across the dataset."""
    import langgraph_apps as apps
    from fixtures.dataset_runs import record_instrumented

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    graph, config = apps.build_resumable_helpdesk(), {"configurable": {"thread_id": "ticket-5"}}

    def two_runs() -> None:
        graph.invoke(apps.user_input("refund please"), config)
        graph.invoke(apps.user_input("and the invoice?"), config)

    first, second = record_instrumented(tmp_path / "t", LangGraphInstrumentor(), two_runs)
    assert first["task_id"] == second["task_id"] == "ticket-5"
    build([tmp_path / "t"], tmp_path, Config(view="chat"))
    rows = {(r["trace_id"], r["agent"]): r for r in _rows(tmp_path / "chat.jsonl")}
    context, trained = {"trainable": False, "weight": 0}, {"trainable": True, "weight": 1}
    assert rows[second["trace_id"], "triage"]["messages"] == [
        {"role": "user", "content": "refund please"},
        {"role": "assistant", "content": "to billing", **context},
        {"role": "user", "content": "billing: refund issued", "name": "billing"},
        {"role": "user", "content": "and the invoice?"},
        {"role": "assistant", "content": "to billing again", **trained}]
    assert rows[second["trace_id"], "billing"]["messages"] == [
        {"role": "user", "content": "refund please"},
        {"role": "user", "content": "triage: to billing", "name": "triage"},
        {"role": "assistant", "content": "refund issued", **context},
        {"role": "user", "content": "and the invoice?"},
        {"role": "user", "content": "triage: to billing again", "name": "triage"},
        {"role": "assistant", "content": "invoice sent", **trained}]
    assert sorted((r["agent"], m["content"]) for r in rows.values() for m in r["completion"] if m.get("trainable")) == [
        ("billing", "invoice sent"), ("billing", "refund issued"), ("triage", "to billing"),
        ("triage", "to billing again")]


def test_verl_tools_whose_schemas_disagree_on_a_type_still_fit_one_column():
    """Parquet types a column once per file: two tools whose parameter schemas
    give one key values of different types (a default 0 and a default "a")
    cannot share a struct type, so their parameters become JSON text, and
    every row is still written."""
    pa = pytest.importorskip("pyarrow", reason="pyarrow is in the optional extra: pip install 'orch-otel[datasets]'")
    from orch_otel.datasets.verl import tools_type

    def tool(name, prop):
        return {"type": "function", "function": {"name": name, "description": "", "parameters": {
            "type": "object", "properties": {"x": prop}}}}

    agreeing = [{"tools": [tool("a", {"type": "integer"})]}, {"tools": [tool("b", {"type": "string"})]}]
    kind = tools_type(pa, agreeing)
    assert pa.array([r["tools"] for r in agreeing], type=kind).to_pylist()[0][0]["function"]["parameters"] == {
        "type": "object", "properties": {"x": {"type": "integer"}}}
    clashing = [{"tools": [tool("a", {"type": "integer", "default": 0})]},
                {"tools": [tool("b", {"type": "string", "default": "a"})]}, {"tools": []}]
    kind = tools_type(pa, clashing)
    written = pa.array([r["tools"] for r in clashing], type=kind).to_pylist()
    assert [json.loads(t["function"]["parameters"]) for r in written for t in r] == [
        {"type": "object", "properties": {"x": {"type": "integer", "default": 0}}},
        {"type": "object", "properties": {"x": {"type": "string", "default": "a"}}}]
