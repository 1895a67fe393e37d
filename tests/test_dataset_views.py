"""Dataset views on traces recorded from real orch-otel runs (offline models):
decisions, turns, chat, triplets and re-written traces, with metrics and credit."""

from __future__ import annotations

import functools
import json
import shutil

import pytest
from conftest import check_trace
from fixtures.dataset_runs import record, standard_runs

from orch_otel.datasets import Config, ContentMissing, Outcomes, build
from orch_otel.datasets import Config as _Config
from orch_otel.tracefiles import read_lines

ROLES = {"system", "user", "assistant", "tool"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    traces = record(base / "captured", standard_runs(), capture=True)
    record(base / "refs_only", standard_runs(), capture=False)
    return base, {t["task_id"]: t for t in traces}


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _view(recorded, tmp_path, view, src="captured", **kw):
    base, _ = recorded
    summary = build([base / src], tmp_path, Config(view=view, **kw))
    return summary, _rows(tmp_path / f"{view}.jsonl")


def test_decisions_of_a_supervisor_run_are_exactly_what_happened(recorded, tmp_path):
    _, traces = recorded
    summary, rows = _view(recorded, tmp_path, "decisions")
    ok = [r for r in rows if r["task_id"] == "calc-ok"]
    assert [(r["decision"], r["agent"], r["action"]["targets"], r["action"]["reason"])
            for r in ok if r["decision"] in ("delegate", "stop")] == [
        ("delegate", "planner", ["executor"], None),
        ("delegate", "planner", ["critic"], None),
        ("delegate", "planner", ["executor"], None),
        ("delegate", "planner", ["critic"], None),
        ("stop", "planner", [], "end"),
    ]
    assert [(r["decision"], r["agent"], r["action"]["targets"]) for r in ok if r["decision"] == "communicate"] == [
        ("communicate", "critic", ["planner"]),
        ("communicate", "critic", ["planner"]),
    ]
    assert {r["options"] == ["executor", "critic"] for r in ok if r["decision"] == "delegate"} == {True}
    budget = [(r["decision"], r["action"]["reason"]) for r in rows if r["task_id"] == "calc-budget"
              and r["decision"] == "stop"]
    assert budget == [("stop", "max_turns")]
    # one row per decision event of the trace, in order, none invented or lost
    want = [e["id"] for e in traces["calc-ok"]["events"] if e.get("decision")]
    assert [r["event_id"] for r in ok] == want
    assert summary.rows_written == sum(
        sum(1 for e in t["events"] if e.get("decision")) for t in traces.values()
    )
    # the critic's verdicts are the communicate decisions' content
    assert [r["content"] for r in ok if r["decision"] == "communicate"] == [{"approved": False}, {"approved": True}]
    # context: the planner's latest LLM call, and the critic's message before the next delegation
    second_exec = [r for r in ok if r["decision"] == "delegate"][2]
    kinds = [c["kind"] for c in second_exec["context"]]
    assert kinds == ["llm_input", "llm_output", "message", "return"]
    assert second_exec["context"][2]["content"] == {"approved": False}
    assert second_exec["context"][3] == {"kind": "return", "from": "critic", "status": "ok",
                                         "event_id": second_exec["context"][3]["event_id"]}


def test_decisions_spawn_fanout_and_aggregate(recorded, tmp_path):
    _, rows = _view(recorded, tmp_path, "decisions")
    research = [r for r in rows if r["task_id"] == "research-1"]
    (spawn,) = [r for r in research if r["decision"] == "spawn"]
    assert spawn["action"]["fanout_size"] == 3 and spawn["agent"] == "lead"
    assert spawn["action"]["targets"] == ["researcher_web", "researcher_papers", "researcher_code"]
    (agg,) = [r for r in research if r["decision"] == "aggregate"]
    assert agg["action"]["sources"] == spawn["action"]["targets"]
    assert [r["decision"] for r in research] == [
        "spawn", "aggregate", "delegate", "communicate", "delegate", "communicate", "stop"]


def test_metrics_on_the_fanout_demo(recorded, tmp_path):
    _, rows = _view(recorded, tmp_path, "traces")
    trace = next(check_trace(t) for t in rows if t["task_id"] == "research-1")
    m = trace["metrics"]
    # lead: llm, spawn, aggregate, delegate x2, message, stop = 7; researchers 2 each in
    # parallel; writer 1; critic 2 (llm + message)
    assert (m["total_steps"], m["critical_steps"]) == (16, 12)
    assert m["parallelism_speedup"] == round(16 / 12, 6)
    assert m["parallelism_efficiency"] == round(16 / 12 / 3, 6)
    assert m["protocol_overhead"] == round(7 / 16, 6)  # 4 decisions + 1 aggregate + 2 messages / 16
    assert m["tool_success_rate"] == 1.0
    assert m["cost_llm_calls"] == 6 and m["cost_tool_calls"] == 3
    assert m["cost_tokens"] == trace["costs"]["tokens"]
    assert m["stop_voluntary"] == 1.0 and m["stop_efficiency"] == 1.0
    assert trace["rewards"] == {"team": 1.0}


def test_stop_efficiency_and_sequential_critical_path(recorded, tmp_path):
    _, rows = _view(recorded, tmp_path, "traces")
    by_task = {t["task_id"]: t for t in rows}
    for t in by_task.values():
        check_trace(t)
    ok, budget = by_task["calc-ok"]["metrics"], by_task["calc-budget"]["metrics"]
    assert ok["critical_steps"] == ok["total_steps"]  # nothing ran in parallel
    assert ok["parallelism_speedup"] == 1.0
    assert budget["stop_voluntary"] == 0.0 and budget["stop_efficiency"] == 0.0
    assert "tool_success_rate" in ok


def test_credit_strategies(recorded, tmp_path):
    _, rows = _view(recorded, tmp_path, "decisions", gamma=0.5)
    ok = [r for r in rows if r["task_id"] == "calc-ok"]
    assert {r["credit_broadcast"] for r in ok} == {1.0}
    stop = ok[-1]
    assert stop["decision"] == "stop" and stop["credit_discounted"] == 1.0  # nothing after it
    assert ok[-2]["credit_discounted"] < 1.0
    _, traces = _view(recorded, tmp_path, "traces", gamma=0.5)
    metrics = next(t for t in traces if t["task_id"] == "calc-ok")["metrics"]
    per_agent = {k: v for k, v in metrics.items() if k.startswith("credit.per_agent.agent.")}
    assert set(per_agent) == {f"credit.per_agent.agent.{a}" for a in ("planner", "executor", "critic", "calculator")} - {
        "credit.per_agent.agent.calculator"}
    assert sum(per_agent.values()) == pytest.approx(1.0)  # the team reward split by work
    # the failed run: R = 0, every credit is 0
    budget = [r for r in rows if r["task_id"] == "calc-budget"]
    assert {r["credit_per_agent"] for r in budget} == {0.0}


def test_turns_view_has_each_llm_call_with_its_tool_calls(recorded, tmp_path):
    _, traces = recorded
    _, rows = _view(recorded, tmp_path, "turns")
    ok = [r for r in rows if r["task_id"] == "calc-ok"]
    llm_events = [e["id"] for e in traces["calc-ok"]["events"] if e.get("channel") == "llm"]
    assert [r["event_id"] for r in ok] == llm_events
    assert [r["agent"] for r in ok] == ["planner", "executor", "executor"]
    first_exec = ok[1]
    assert first_exec["input_messages"] == [
        {"role": "system", "content": "You are the executor."},
        {"role": "user", "content": "what is 6 times 7?"},
    ]
    assert first_exec["output"] == "executor on: what is 6 times 7?"
    (call,) = first_exec["tool_calls"]
    assert (call["tool"], call["status"], call["result"]) == ("calculator", "ok", 36.0)
    assert call["arguments"] == {"args": ["6*6"], "kwargs": {}}
    assert first_exec["input_tokens"] == 5 and first_exec["output_tokens"] == 7
    assert first_exec["credit_unit"] == "turn"
    assert first_exec["token_credit_broadcast"] == pytest.approx(1.0 / 7)
    assert (ok[1]["episode"], ok[2]["episode"]) == (0, 1)  # executor was invoked twice


def test_turns_view_works_without_content(recorded, tmp_path):
    _, rows = _view(recorded, tmp_path, "turns", src="refs_only")
    assert rows and all(r["input_messages"] is None and r["output"] is None for r in rows)
    assert all(r["input_ref"].startswith("b2:") for r in rows)


def test_chat_view_rows_are_trl_conversational(recorded, tmp_path):
    _, rows = _view(recorded, tmp_path, "chat")
    assert len(rows) == 3 + 2 + 6  # calc-ok: planner + 2 executor episodes; budget: planner + executor; demo: 6 agents
    for row in rows:
        messages = row["messages"]
        assert messages and isinstance(messages, list)
        for m in messages:
            assert m["role"] in ROLES and isinstance(m["content"], str)
        assert messages[-1]["role"] == "assistant"
    planner = next(r for r in rows if r["task_id"] == "calc-ok" and r["agent"] == "planner")
    assert planner["messages"] == [
        {"role": "system", "content": "You are the planner."},
        {"role": "user", "content": "what is 6 times 7?"},
        {"role": "assistant", "content": "planner on: what is 6 times 7?", "trainable": True, "weight": 1},
    ]
    executor = next(r for r in rows if r["task_id"] == "calc-ok" and r["agent"] == "executor")
    (calculator,) = executor["tools"]  # as offered through llm_call(tools=...), not guessed from the call
    assert calculator["function"]["name"] == "calculator"
    assert calculator["function"]["description"] == "Multiply two numbers written as 'a*b'."
    assert calculator["function"]["parameters"]["required"] == ["expression"]
    assert planner["tools"] == []  # offered none: an empty list, never null (verl and TRL take a list)


def test_chat_view_loads_in_datasets_from_hf_and_parquet(recorded, tmp_path):
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = recorded
    build([base / "captured"], tmp_path, Config(view="chat"), fmt="hf")
    build([base / "captured"], tmp_path, Config(view="chat"), fmt="parquet")
    jsonl = build([base / "captured"], tmp_path, Config(view="chat"), fmt="jsonl")
    from_disk = datasets.load_from_disk(str(tmp_path / "chat"))
    from_parquet = datasets.load_dataset("parquet", data_files=str(tmp_path / "chat.parquet"), split="train",
                                         cache_dir=str(tmp_path / "cache"))
    want = _rows(tmp_path / "chat.jsonl")
    assert len(from_disk) == len(from_parquet) == jsonl.rows_written == len(want)
    for ds in (from_disk, from_parquet):
        for got, row in zip(ds, want):
            assert [(m["role"], m["content"]) for m in got["messages"]] == [
                (m["role"], m["content"]) for m in row["messages"]]
            assert got["tools"] == row["tools"]  # a Json column: decoded back to objects
            assert got["credit_discounted"] == row["credit_discounted"]


def test_decisions_parquet_loads_with_typed_columns(recorded, tmp_path):
    datasets = pytest.importorskip("datasets", reason="Hugging Face datasets is in the optional extra: pip install 'orch-otel[datasets]'")
    base, _ = recorded
    build([base / "captured"], tmp_path, Config(view="decisions"), fmt="parquet")
    ds = datasets.load_dataset("parquet", data_files=str(tmp_path / "decisions.parquet"), split="train",
                               cache_dir=str(tmp_path / "cache"))
    want = _rows(build([base / "captured"], tmp_path, Config(view="decisions")).output and tmp_path / "decisions.jsonl")
    assert ds["decision"] == [r["decision"] for r in want]
    assert ds["action"] == [r["action"] for r in want]
    assert ds["context"] == [r["context"] for r in want]
    assert ds["reward"] == [r["reward"] for r in want]


def test_triplets_view(recorded, tmp_path, local_tokenizer):
    _, rows = _view(recorded, tmp_path, "triplets", tokenizer=local_tokenizer)
    assert all(set(r) == {"prompt", "response", "reward", "metadata"} for r in rows)
    first = rows[0]
    assert first["metadata"]["agent_name"] == "planner" and first["reward"] == 1.0
    assert first["prompt"]["messages"][-1] == {"role": "user", "content": "what is 6 times 7?"}
    assert first["response"]["text"] == "planner on: what is 6 times 7?"
    assert first["prompt"]["token_ids"] and first["response"]["token_ids"]
    assert first["metadata"]["token_source"] == "retokenized" and first["response"]["log_probs"] is None
    assert {"credit_broadcast", "credit_discounted", "credit_per_agent"} <= set(first["metadata"])


@pytest.mark.parametrize("view", ["chat", "triplets"])
def test_content_views_with_strict_fail_clearly_without_captured_content(recorded, tmp_path, view):
    base, _ = recorded
    with pytest.raises(ContentMissing, match="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"):
        build([base / "refs_only"], tmp_path, Config(view=view), strict=True)
    assert not (tmp_path / f"{view}.jsonl").exists()  # no half dataset left behind


@pytest.mark.parametrize("view", ["chat", "triplets"])
def test_content_views_skip_and_name_traces_without_captured_content(recorded, tmp_path, view, request):
    """The content of one trace's LLM calls is lost (its lines removed from the
    store): that trace gives no rows, the others are written as before, and the
    summary counts and names the skipped trace."""
    base, traces = recorded
    if view == "triplets":  # token ids: none were captured here, a tokenizer makes them
        Config = functools.partial(_Config, tokenizer=request.getfixturevalue("local_tokenizer"))
    else:
        Config = _Config
    damaged = tmp_path / "damaged"
    shutil.copytree(base / "captured", damaged)
    lost = traces["research-1"]
    others = {e.get(k) for t in traces.values() if t is not lost for e in t["events"] for k in ("input_ref", "content_ref")}
    unique = {e["input_ref"] for e in lost["events"] if e.get("channel") == "llm"} - others
    assert unique
    for store in (damaged / "content").glob("*.jsonl"):
        kept = [line for line in store.read_text().splitlines() if json.loads(line)["ref"] not in unique]
        store.write_text("".join(line + "\n" for line in kept))
    whole = build([base / "captured"], tmp_path / "whole", Config(view=view))
    summary = build([damaged], tmp_path / "out", Config(view=view))
    assert (summary.traces_read, summary.traces_used, summary.traces_skipped) == (3, 2, 1)
    assert summary.skipped_trace_ids == [lost["trace_id"]]
    rows = _rows(tmp_path / "out" / f"{view}.jsonl")
    trace_of = (lambda r: r["trace_id"]) if view == "chat" else (lambda r: r["metadata"]["trace_id"])
    assert {trace_of(r) for r in rows} == {t["trace_id"] for t in traces.values()} - {lost["trace_id"]}
    assert rows == [r for r in _rows(tmp_path / "whole" / f"{view}.jsonl") if trace_of(r) != lost["trace_id"]]
    assert summary.rows_written == len(rows) < whole.rows_written
    written = json.loads((tmp_path / "out" / f"{view}.summary.json").read_text())
    assert written["skipped_trace_ids"] == [lost["trace_id"]]
    # a skipped trace was read: an outcome row naming it matches a trace
    outcomes = tmp_path / "outcomes.jsonl"
    outcomes.write_text(json.dumps({"trace_id": lost["trace_id"], "success": 1}) + "\n")
    with_outcomes = build([damaged], tmp_path / "outcomes", Config(view=view, outcomes=Outcomes.load(outcomes)))
    assert with_outcomes.unknown_outcomes == [] and with_outcomes.traces_skipped == 1
    with pytest.raises(ContentMissing, match=lost["trace_id"]):
        build([damaged], tmp_path / "strict", Config(view=view), strict=True)
    assert not (tmp_path / "strict" / f"{view}.jsonl").exists()


def test_rewritten_traces_are_replayable_with_their_content(recorded, tmp_path):
    base, traces = recorded
    out = tmp_path / "rewritten"
    build([base / "captured"], out, Config(view="traces"))
    rewritten = [line.trace for line in read_lines(out / "traces.jsonl")]
    assert [t["trace_id"] for t in rewritten] == [t["trace_id"] for t in traces.values()]
    for original, new in zip(traces.values(), rewritten):
        check_trace(new)
        assert new["events"] == original["events"] and new["edges"] == original["edges"]
    # the copied content store makes the output folder usable on its own
    again = build([out / "traces.jsonl"], tmp_path / "chat_again", Config(view="chat"))
    first = build([base / "captured"], tmp_path / "chat_first", Config(view="chat"))
    assert again.rows_written == first.rows_written
    assert (tmp_path / "chat_again" / "chat.jsonl").read_bytes() == (tmp_path / "chat_first" / "chat.jsonl").read_bytes()


def test_cost_usd_is_unknown_when_a_model_called_has_no_price():
    # --price research-llm=...: a trace that also called another model must not look cheaper than it was
    from orch_otel.datasets.metrics import compute_metrics

    def call(i, model, tokens_in, tokens_out):
        return {"id": f"e{i}", "type": "message", "agent": "a", "t": float(i), "channel": "llm", "model": model,
                "input_tokens": tokens_in, "output_tokens": tokens_out}

    trace = {"events": [call(1, "big", 1000, 200), call(2, "small", 3000, 100)], "costs": {"tokens": 4300}}
    both = compute_metrics(trace, prices={"big": (5.0, 15.0), "small": (0.5, 1.5)})
    assert both["cost_usd"] == (1000 * 5.0 + 200 * 15.0 + 3000 * 0.5 + 100 * 1.5) / 1e6  # 0.00965, by hand
    assert "cost_usd" not in compute_metrics(trace, prices={"big": (5.0, 15.0)})
    assert "cost_usd" not in compute_metrics(trace)


def test_steps_of_same_named_parallel_agents_go_to_their_own_invocation():
    """Two ``worker`` invocations run at once, one with 1 model call and one with 3:
    the critical path is the longer branch, told apart by agent_span_id, not by name."""
    from orch_otel import testing
    from orch_otel.datasets.metrics import compute_metrics
    from orch_otel.recorder import Recorder

    rec = Recorder()
    with testing.capture() as captured, rec.workflow("team") as run:
        short = rec.agent("worker", spawned=True, fanout_index=0, fanout_size=2).start(attach=False, parent=run.context)
        long = rec.agent("worker", spawned=True, fanout_index=1, fanout_size=2).start(attach=False, parent=run.context)
        for inv in (short, long, long, long):  # interleaved in time
            rec.llm("m").start(attach=False, parent=inv.context).end()
        short.end()
        long.end()
    (conversion,) = captured.conversions()
    m = compute_metrics(check_trace(conversion.trace))
    # the run's own steps (the implied spawn decision and the stop) + the longer branch's 3
    assert (m["total_steps"], m["critical_steps"]) == (6, 2 + 3)


@pytest.mark.parametrize("recorded_form", [
    {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {"type": "object"}}},
    {"name": "add", "description": "Add.", "parameters": {"type": "object"}},  # AutoGen ToolSchema / bare
    {"name": "add", "description": "Add.", "input_schema": {"type": "object"}},  # Anthropic, as ChatAnthropic binds
])
def test_offered_tools_read_every_bound_form(tmp_path, recorded_form):
    from orch_otel.datasets.views import offered_tools
    from orch_otel.tracefiles import ContentIndex

    text = json.dumps([recorded_form, {"description": "no name: left out"}])
    (tmp_path / "content-1.jsonl").write_text(json.dumps({"ref": "b2:tools", "text": text}) + "\n")
    store = ContentIndex([str(tmp_path)])
    assert offered_tools(store, "b2:tools") == [
        {"type": "function", "function": {"name": "add", "description": "Add.", "parameters": {"type": "object"}}}]
    assert offered_tools(store, "b2:absent") == [] and offered_tools(store, None) == []


def test_raw_autogen_messages_of_older_recordings_read_as_tool_calls():
    """Traces recorded before the AutoGen integration wrote chat messages hold
    AutoGen's own dumps: a FunctionCall list and a FunctionExecutionResultMessage
    must still read as OpenAI tool calls and one tool message per result."""
    from orch_otel.datasets.messages import normalize_messages, normalize_output

    calls = [{"id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
             {"id": "c2", "name": "lookup", "arguments": "{}"}]
    prompt = [
        {"type": "UserMessage", "content": "go", "source": "user"},
        {"type": "AssistantMessage", "content": calls, "thought": None, "source": "a"},
        {"type": "FunctionExecutionResultMessage", "content": [
            {"content": "sunny", "name": "get_weather", "call_id": "c1", "is_error": False},
            {"content": "found", "name": "lookup", "call_id": "c2", "is_error": False}]},
    ]
    openai_calls = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                    {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    assert normalize_messages(prompt) == [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": openai_calls},
        {"role": "tool", "content": "sunny", "tool_call_id": "c1", "name": "get_weather"},
        {"role": "tool", "content": "found", "tool_call_id": "c2", "name": "lookup"},
    ]
    create_result = {"finish_reason": "function_calls", "content": calls, "usage": {}, "cached": False, "thought": None}
    assert normalize_output(create_result) == {"role": "assistant", "content": "", "tool_calls": openai_calls}


@pytest.mark.parametrize("view", ["chat", "triplets"])
def test_a_content_view_of_traces_without_any_content_fails_instead_of_writing_nothing(recorded, tmp_path, capsys, view):
    """Runs recorded with capture off: every trace is skipped, so there is no row; exit 1 with how to capture,
    not exit 0 with an empty file (issue 32, item 19)."""
    from orch_otel.cli import main

    base, _ = recorded
    code = main(["dataset", str(base / "refs_only"), "-o", str(tmp_path / "out"), "--view", view])
    err = capsys.readouterr().err
    assert code == 1
    assert "none of the 3 trace(s) read has the captured content" in err
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true" in err
    assert not (tmp_path / "out" / f"{view}.jsonl").exists()


def test_responses_input_items_read_as_chat_messages():
    """The OpenAI Agents SDK's model input: Responses items, not chat messages."""
    from orch_otel.datasets.messages import normalize_messages, normalize_output

    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Is 42 paid?"}]},
        {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
         "content": [{"type": "output_text", "text": "checking", "annotations": []}]},
        {"type": "function_call", "call_id": "h1", "name": "lookup", "arguments": '{"n": 42}', "id": "fc1"},
        {"type": "function_call", "call_id": "h2", "name": "audit", "arguments": "{}", "id": "fc2"},
        {"type": "function_call_output", "call_id": "h1", "output": "paid"},
        {"type": "function_call_output", "call_id": "h2", "output": "clean"},
        {"type": "reasoning", "id": "r1", "summary": []},
    ]
    call = {"type": "function"}
    assert normalize_messages(items) == [
        {"role": "user", "content": "Is 42 paid?"},
        {"role": "assistant", "content": "checking", "tool_calls": [
            {**call, "id": "h1", "function": {"name": "lookup", "arguments": '{"n": 42}'}},
            {**call, "id": "h2", "function": {"name": "audit", "arguments": "{}"}}]},
        {"role": "tool", "content": "paid", "tool_call_id": "h1"},
        {"role": "tool", "content": "clean", "tool_call_id": "h2"},
    ]
    reply = [{"type": "function_call", "call_id": "t1", "name": "f", "arguments": "{}", "id": "x"}]
    assert normalize_output(reply) == {"role": "assistant", "content": "", "tool_calls": [
        {**call, "id": "t1", "function": {"name": "f", "arguments": "{}"}}]}
