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
