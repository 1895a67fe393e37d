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


def test_hosted_calls_are_no_chat_messages_and_no_function_tools_of_the_row(tmp_path):
    """The provider ran web_search, file_search and the docs MCP server's
    search_docs inside researcher's first call: no tool turn answers them, so
    they are not tool calls of the chat (they would dangle in a template), and
    the row offers only the function tool the model can call, lookup_invoice.
    Both calls' replies make one row: the second prompt extends the first."""
    (row,) = _chat(tmp_path, apps.hosted_tools)
    assert row["messages"] == [
        {"role": "user", "content": "What is the refund policy?"},
        {"role": "assistant", "content": "", "trainable": True, "weight": 1,
         "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "lookup_invoice",
                                                                      "arguments": {"number": "42"}}}]},
        {"role": "tool", "content": "invoice 42: paid", "tool_call_id": "t1"},
        {"role": "assistant", "content": "Refunds within 30 days; invoice 42 is paid.", "trainable": True, "weight": 1},
    ]
    assert [t["function"]["name"] for t in row["tools"]] == ["lookup_invoice"]


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
