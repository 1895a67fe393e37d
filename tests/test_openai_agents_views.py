"""What the dataset views make of OpenAI Agents SDK runs' model input: the
exact input each model call got, read from the SDK's Responses items."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from fixtures.dataset_runs import record_instrumented  # noqa: E402

from orch_otel.datasets import Config, build  # noqa: E402
from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402


def _chat(tmp_path, run) -> list[dict]:
    record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(), run)
    build([tmp_path / "traces"], tmp_path / "chat", Config(view="chat"))
    return [json.loads(line) for line in (tmp_path / "chat" / "chat.jsonl").read_text().splitlines()]


def test_the_receiving_agents_row_is_its_input_after_the_handoffs_input_filter(tmp_path):
    """remove_all_tools drops triage's lookup and the handoff: billing's model
    got the customer's message only, and its row says exactly that."""
    triage, billing = _chat(tmp_path, apps.filtered_handoff)
    assert billing["agent"] == "billing"
    assert billing["messages"] == [{"role": "user", "content": "Refund invoice 7."},
                                   {"role": "assistant", "content": "Refund sent.", "trainable": True, "weight": 1}]
    assert [c["id"] for m in triage["messages"] for c in m.get("tool_calls") or ()] == ["t1", "h1"]


def test_each_run_of_a_session_reads_the_sessions_history(tmp_path):
    first, second = _chat(tmp_path, apps.two_runs_in_one_session)
    assert [m["content"] for m in first["messages"]] == ["I am Ada.", "Hello Ada."]
    assert [m["content"] for m in second["messages"]] == ["I am Ada.", "Hello Ada.", "Who am I?", "You are Ada."]
    assert [m["content"] for m in second["messages"] if m.get("trainable")] == ["You are Ada."]


# Runs of one session (openai_agents_apps.handoffs_in_one_session): run 2's prompts hold run 1's items, and
# each of run 1's turns is its own agent's there; the expected rows are written from the app's script.
H1 = {"id": "h1", "type": "function", "function": {"name": "transfer_to_billing", "arguments": {}}}
H2 = {"id": "h2", "type": "function", "function": {"name": "transfer_to_billing", "arguments": {}}}
T1 = {"id": "t1", "type": "function", "function": {"name": "lookup_invoice", "arguments": {"number": "42"}}}
HANDED = '{"assistant": "billing"}'  # the SDK's output of a handoff call
CONTEXT, TRAINED = {"trainable": False, "weight": 0}, {"trainable": True, "weight": 1}

TRIAGE_RUN_2 = [
    {"role": "system", "content": "Route the customer."},
    {"role": "user", "content": "Is invoice 42 paid?"},
    {"role": "assistant", "content": "", "tool_calls": [H1], **CONTEXT},  # triage's own run-1 handoff
    {"role": "tool", "content": HANDED, "tool_call_id": "h1"},
    {"role": "user", "content": 'billing: [tool call lookup_invoice] {"number":"42"}', "name": "billing"},
    {"role": "user", "content": "[tool result lookup_invoice] invoice 42: paid"},
    {"role": "user", "content": "billing: Invoice 42 is paid.", "name": "billing"},
    {"role": "user", "content": "And invoice 43?"},
    {"role": "assistant", "content": "", "tool_calls": [H2], **TRAINED},
]
BILLING_RUN_2 = [
    {"role": "user", "content": "Is invoice 42 paid?"},
    {"role": "user", "content": "triage: [tool call transfer_to_billing] {}", "name": "triage"},
    {"role": "user", "content": f"[tool result transfer_to_billing] {HANDED}"},
    {"role": "assistant", "content": "", "tool_calls": [T1], **CONTEXT},  # billing's own run-1 lookup
    {"role": "tool", "content": "invoice 42: paid", "tool_call_id": "t1"},
    {"role": "assistant", "content": "Invoice 42 is paid.", **CONTEXT},  # billing's own run-1 answer
    {"role": "user", "content": "And invoice 43?"},
    {"role": "user", "content": "triage: [tool call transfer_to_billing] {}", "name": "triage"},
    {"role": "user", "content": f"[tool result transfer_to_billing] {HANDED}"},
    {"role": "assistant", "content": "Invoice 43 is open.", **TRAINED},
]
# every reply of the app's script, (agent, text, call ids)
REPLIES = [("triage", "", ("h1",)), ("billing", "", ("t1",)), ("billing", "Invoice 42 is paid.", ()),
           ("triage", "", ("h2",)), ("billing", "Invoice 43 is open.", ())]


def _session_rows(folders, out) -> dict[tuple[str, str], dict]:
    build(folders, out, Config(view="chat"))
    rows = [json.loads(line) for line in (out / "chat.jsonl").read_text().splitlines()]
    return {(r["trace_id"], r["agent"]): r for r in rows}


def _trained(rows) -> list[tuple]:
    return sorted((r["agent"], m["content"], tuple(c["id"] for c in m.get("tool_calls") or ()))
                  for r in rows for m in r["completion"] if m["role"] == "assistant" and m.get("trainable"))


def _check_run_2(rows: dict, second: str) -> None:
    triage, billing = rows[second, "triage"], rows[second, "billing"]
    assert triage["messages"] == TRIAGE_RUN_2
    assert billing["messages"] == BILLING_RUN_2
    # TRL's prompt-completion split: run 1's turns are prompt, only run 2's reply is completion
    assert billing["prompt"] == BILLING_RUN_2[:-1] and billing["completion"] == BILLING_RUN_2[-1:]
    assert triage["prompt"] == TRIAGE_RUN_2[:-1] and triage["completion"] == TRIAGE_RUN_2[-1:]
    # no reply is trained twice across the dataset: each of the script's replies once, by its agent
    assert _trained(rows.values()) == sorted(REPLIES)


def test_a_later_run_of_a_session_reads_each_agents_earlier_turns_as_its_own(tmp_path):
    """triage -> billing, run twice in one SQLiteSession (one task): in run 2,
    billing's run-1 lookup and answer are billing's own turns (context, not
    trained again) and another speaker's input for triage; triage's run-1
    handoff is triage's own turn, and triage's input for billing."""
    first, second = record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(), apps.handoffs_in_one_session)
    assert first["task_id"] == second["task_id"] == "conv-8"
    _check_run_2(_session_rows([tmp_path / "traces"], tmp_path / "chat"), second["trace_id"])


def _split_by_trace(folder, out) -> list:
    """Each trace line of ``folder`` in a folder of its own (run-1, run-2), each with the content store."""
    import shutil

    (lines,) = [p.read_text().splitlines() for p in folder.glob("traces-*.jsonl")]
    folders = []
    for n, line in enumerate(lines, 1):
        target = out / f"run-{n}"
        shutil.copytree(folder / "content", target / "content")
        (target / f"traces-run-{n}.jsonl").write_text(line + "\n")
        folders.append(target)
    return folders


def test_the_runs_of_a_session_are_read_together_from_separate_files(tmp_path):
    """The two runs' traces in two folders, run 2's given first: the rows are
    those of one folder."""
    first, second = record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(), apps.handoffs_in_one_session)
    one, two = _split_by_trace(tmp_path / "traces", tmp_path / "split")
    rows = _session_rows([two, one], tmp_path / "chat")
    _check_run_2(rows, second["trace_id"])
    assert [m["content"] for m in rows[first["trace_id"], "billing"]["messages"] if m.get("trainable")] == [
        "", "Invoice 42 is paid."]


def test_an_earlier_run_of_another_agent_stays_its_input_when_one_agent_runs_later(tmp_path):
    """Run 2 of the session has triage's model call only: billing's run-1
    answer in its prompt is still billing's, named, not triage's own."""
    first, second = record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(),
                                        apps.answered_directly_in_the_second_run)
    rows = _session_rows([tmp_path / "traces"], tmp_path / "chat")
    assert rows[second["trace_id"], "triage"]["messages"] == [
        {"role": "system", "content": "Route the customer."},
        {"role": "user", "content": "Is invoice 42 paid?"},
        {"role": "assistant", "content": "", "tool_calls": [H1], **CONTEXT},
        {"role": "tool", "content": HANDED, "tool_call_id": "h1"},
        {"role": "user", "content": "billing: Invoice 42 is paid.", "name": "billing"},
        {"role": "user", "content": "Thanks!"},
        {"role": "assistant", "content": "You are welcome.", **TRAINED}]
    assert _trained(rows.values()) == sorted([("triage", "", ("h1",)), ("billing", "Invoice 42 is paid.", ()),
                                              ("triage", "You are welcome.", ())])


def test_the_first_pass_keeps_only_tasks_of_several_traces(tmp_path):
    """What the first pass holds (datasets/tasks.py): the session (two traces)
    with its agents and one key per distinct reply; a run of no named task
    (its task id is its trace id) adds nothing."""
    from orch_otel.datasets.tasks import task_replies
    from orch_otel.tracefiles import ContentIndex

    record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(), apps.handoffs_in_one_session)
    (alone,) = record_instrumented(tmp_path / "traces", OpenAIAgentsInstrumentor(), apps.support())
    assert alone["task_id"] == alone["trace_id"]
    store = ContentIndex([str(tmp_path / "traces")])
    tasks = task_replies(sorted((tmp_path / "traces").glob("traces-*.jsonl")), store)
    store.close()
    assert list(tasks) == ["conv-8"]
    assert tasks["conv-8"].agents == {"triage", "billing"}
    assert sorted(tasks["conv-8"].given.values()) == [("billing",)] * 3 + [("triage",)] * 2


def _lookup_then_answer(question: str) -> list[dict]:
    """researcher's row: the question, its lookup_invoice call t1 and result, its answer (both trained)."""
    return [
        {"role": "user", "content": question},
        {"role": "assistant", "content": "", "trainable": True, "weight": 1,
         "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "lookup_invoice",
                                                                      "arguments": {"number": "42"}}}]},
        {"role": "tool", "content": "invoice 42: paid", "tool_call_id": "t1"},
        {"role": "assistant", "content": "Refunds within 30 days; invoice 42 is paid.", "trainable": True,
         "weight": 1},
    ]


_DELETED = [{"role": "user", "content": "Delete the old policy."},
            {"role": "assistant", "content": "Deleted.", "trainable": True, "weight": 1}]


def test_hosted_calls_are_no_chat_messages_and_no_function_tools_of_the_row(tmp_path):
    """The provider ran web_search, file_search and the docs MCP server's
    search_docs inside researcher's first call: no tool turn answers them, so
    they are not tool calls of the chat (they would dangle in a template), and
    the row offers only the function tool the model can call, lookup_invoice.
    Both calls' replies make one row: the second prompt extends the first."""
    (row,) = _chat(tmp_path, apps.hosted_tools)
    assert row["messages"] == _lookup_then_answer("What is the refund policy?")
    assert [t["function"]["name"] for t in row["tools"]] == ["lookup_invoice"]


def test_a_reply_of_hosted_mcp_items_only_is_no_turn_and_the_agent_keeps_one_row(tmp_path):
    """librarian's first reply is only the docs server's listing and approval request (no text, no
    function call); on_approval_request approves and the model answers. The next prompt shows nothing of
    that reply, so it is no chat turn: one row, the answer its only trained reply, both calls in it."""
    (row,) = _chat(tmp_path, lambda: apps.hosted_mcp_approval(True))
    assert row["messages"] == _DELETED
    assert row["completion"] == row["messages"][1:]
    assert (len(row["event_ids"]), row["replies_not_shown"]) == (2, 1)


def test_a_run_that_stopped_awaiting_a_hosted_approval_trains_no_empty_reply(tmp_path):
    """The first run's only reply is the listing and the request it awaits: nothing to train. The resumed
    run's row is the question and the answer."""
    (row,) = _chat(tmp_path, apps.hosted_mcp_approved_after_interrupt)
    assert row["messages"] == _DELETED
    assert row["replies_not_shown"] == 0


def test_a_reply_with_only_a_hosted_call_between_two_turns_does_not_split_the_row(tmp_path):
    """researcher's middle reply is only a web search: its third prompt is the first two turns plus nothing
    a chat shows, so its three calls make one row whose two real replies are trained once each, and no
    empty reply is trained."""
    (row,) = _chat(tmp_path, apps.search_between_calls)
    expected = _lookup_then_answer("Is invoice 42 refundable?")
    assert row["messages"] == expected
    assert row["prompt"] == expected[:1] and row["completion"] == expected[1:]
    assert (len(row["event_ids"]), row["replies_not_shown"]) == (3, 1)
    assert [t["function"]["name"] for t in row["tools"]] == ["lookup_invoice"]


def test_after_a_handoff_a_reply_of_a_lone_web_search_leaves_one_row_per_agent(tmp_path):
    """triage hands off to researcher, whose first reply is only a web search: triage's row trains its
    handoff, researcher's one row (its two calls) trains its answer only, with triage's handoff as input."""
    triage, researcher = _chat(tmp_path, apps.handoff_to_a_searcher)
    question = {"role": "user", "content": "What is the refund policy?"}
    assert (triage["agent"], triage["messages"]) == ("triage", [
        question, {"role": "assistant", "content": "", "trainable": True, "weight": 1, "tool_calls": [
            {"id": "h1", "type": "function", "function": {"name": "transfer_to_researcher", "arguments": {}}}]}])
    assert (researcher["agent"], researcher["messages"]) == ("researcher", [
        question,
        {"role": "user", "content": "triage: [tool call transfer_to_researcher] {}", "name": "triage"},
        {"role": "user", "content": '[tool result transfer_to_researcher] {"assistant": "researcher"}'},
        {"role": "assistant", "content": "Refunds within 30 days.", "trainable": True, "weight": 1}])
    assert (len(researcher["event_ids"]), researcher["replies_not_shown"]) == (2, 1)


def test_a_last_reply_of_reasoning_only_is_no_turn_as_a_hosted_only_reply_is(tmp_path):
    """The run ends on a reply holding only reasoning (the SDK's final output is empty): no chat message
    shows it, so it is counted, not trained as an empty answer; t1 is the row's one trained reply."""
    assert apps.reasoning_last().final_output == ""
    (row,) = _chat(tmp_path, apps.reasoning_last)
    assert row["messages"] == _lookup_then_answer("Is invoice 42 refundable?")[:2]
    assert (len(row["event_ids"]), row["replies_not_shown"]) == (2, 1)


def test_a_guardrails_message_is_the_tool_result_the_model_read(tmp_path):
    """delete_file (g1) never ran and read_file's result (g2) was withheld:
    the chat has what the model read, the guardrails' messages."""
    (row,) = _chat(tmp_path, apps.guarded_tools)
    tools = [(m["tool_call_id"], m["content"]) for m in row["messages"] if m["role"] == "tool"]
    assert tools == [("g1", "refused: system path"), ("g2", "withheld: it held a secret")]


def test_a_shell_command_and_a_custom_tool_are_tool_calls_answered_in_the_chat(tmp_path):
    """The SDK's shell_call / custom_tool_call items and their outputs read as
    the assistant's tool calls and the tool messages answering them."""
    (row,) = _chat(tmp_path, apps.local_tools)
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    assert row["messages"][1]["tool_calls"] == [
        {"id": "s1", "type": "function", "function": {"name": "shell", "arguments": {"commands": ["echo hi"]}}},
        {"id": "c1", "type": "function", "function": {"name": "shout", "arguments": "hello"}}]
    assert sorted(m["tool_call_id"] for m in row["messages"] if m["role"] == "tool") == ["c1", "s1"]
    assert {"role": "tool", "content": "HELLO", "tool_call_id": "c1"} in row["messages"]


def test_a_structured_shell_results_tool_message_is_text(tmp_path):
    """The model got s1's output structured (per command: stdout, stderr, exit code); the chat's tool message
    answering s1 is that output as text a chat template renders: each command's output, its stderr
    labelled, a non-zero exit code named."""
    (row,) = _chat(tmp_path, apps.structured_shell)
    assert {"role": "tool", "content": "hi\n\nstderr:\nno such file\nexit code: 1", "tool_call_id": "s1"
            } in row["messages"]


def test_a_hosted_shell_call_is_left_out_of_the_chat_as_other_hosted_calls_are(tmp_path):
    """hs1 ran in the provider's container inside the model call: no tool turn of the app answers it, so the
    chat has the reply's function call t1 and its result only."""
    (row,) = _chat(tmp_path, apps.hosted_shell)
    assert [(m["role"], [c["id"] for c in m.get("tool_calls") or ()], m.get("tool_call_id")) for m in
            row["messages"]] == [("user", [], None), ("assistant", ["t1"], None), ("tool", [], "t1"),
                                    ("assistant", [], None)]
