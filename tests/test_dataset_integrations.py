"""Datasets from traces recorded by the LangGraph and AutoGen integrations on
offline models (generated in the test, never committed JSON): the decisions
view says exactly what the supervisor / team did, and the chat view holds the
agents' real conversations."""

from __future__ import annotations

import asyncio
import json

import pytest
from fixtures.dataset_runs import record_instrumented as _record

from orch_otel.datasets import Config, build

ROLES = {"system", "user", "assistant", "tool"}


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _check_chat(rows):
    assert rows
    for row in rows:
        assert row["messages"][-1]["role"] == "assistant"
        for m in row["messages"]:
            assert m["role"] in ROLES and isinstance(m["content"], str)


def test_langgraph_supervisor_decisions_and_chat(tmp_path):
    pytest.importorskip("langgraph_supervisor", reason="the supervisor app needs langgraph-supervisor (orch-otel[dev])")
    import langgraph_apps as apps

    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    (trace,) = _record(tmp_path / "traces", LangGraphInstrumentor(),
                       lambda: apps.build_supervisor().invoke(apps.user_input("what is 1+2?")))
    build([tmp_path / "traces"], tmp_path, Config(view="decisions"))
    rows = _rows(tmp_path / "decisions.jsonl")
    assert [(r["decision"], r["agent"], r["action"]["targets"]) for r in rows if r["decision"] == "delegate"] == [
        ("delegate", "supervisor", ["math_expert"]), ("delegate", "supervisor", ["research_expert"])]
    stops = [(r["agent"], r["action"]["reason"]) for r in rows if r["decision"] == "stop"]
    assert stops == [(e["agent"], e["reason"]) for e in trace["events"] if e.get("decision") == "stop"]
    # the supervisor's last turn answers with no handoff (its stop), then the workflow ends
    assert stops == [("supervisor", "end"), ("supervision", "end")]
    assert [r["event_id"] for r in rows] == [e["id"] for e in trace["events"] if e.get("decision")]
    build([tmp_path / "traces"], tmp_path, Config(view="turns"))
    turns = _rows(tmp_path / "turns.jsonl")
    assert [t["model"] for t in turns] == ["supervisor-llm", "math-llm", "math-llm", "supervisor-llm",
                                           "research-llm", "research-llm", "supervisor-llm"]
    # each call keeps its orchestration context: what its agent decided after it (a handoff delegates and
    # sends the handoff message; the supervisor's last answer ends the run), and the agent's instance
    assert [(t["agent"], t["decisions"]) for t in turns] == [
        ("supervisor", ["delegate", "communicate"]), ("math_expert", []), ("math_expert", []),
        ("supervisor", ["delegate", "communicate"]), ("research_expert", []), ("research_expert", []),
        ("supervisor", ["stop"])]
    assert [t["instance"] for t in turns][:3] == ["supervisor#1", "math_expert#1", "math_expert#1"]
    math_first = turns[1]
    assert [c["tool"] for c in math_first["tool_calls"]] == ["add"]
    assert math_first["output_tool_calls"][0]["function"]["name"] == "add"
    build([tmp_path / "traces"], tmp_path, Config(view="chat"))
    chat = _rows(tmp_path / "chat.jsonl")
    _check_chat(chat)
    math = next(r for r in chat if r["agent"] == "math_expert")
    assert any(m["role"] == "user" and "1+2" in m["content"] for m in math["messages"])
    assert math["messages"][-1]["content"] == "1 + 2 = 3"
    (add,) = math["tools"]  # the definition the model was given, not one guessed from the call
    assert add["function"]["name"] == "add" and add["function"]["description"] == "Add two numbers."
    assert add["function"]["parameters"]["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert add["function"]["parameters"]["required"] == ["a", "b"]


def test_autogen_team_decisions_and_chat(tmp_path):
    pytest.importorskip("autogen_agentchat", reason="needs the optional extra: pip install 'orch-otel[autogen]'")
    import autogen_apps as apps

    from orch_otel.integrations.autogen import AutoGenInstrumentor

    (trace,) = _record(tmp_path / "traces", AutoGenInstrumentor(),
                       lambda: asyncio.run(asyncio.wait_for(apps.weather_round_robin().run(task="go"), 20)))
    build([tmp_path / "traces"], tmp_path, Config(view="decisions"))
    rows = _rows(tmp_path / "decisions.jsonl")
    assert [(r["action"]["targets"], r["options"]) for r in rows if r["decision"] == "delegate"] == [
        (["a"], ["a"]), (["b"], ["b"])]  # round robin: the order leaves one candidate
    stops = [r["action"]["reason"] for r in rows if r["decision"] == "stop"]
    assert stops == [e["reason"] for e in trace["events"] if e.get("decision") == "stop"]
    assert "Text 'TERMINATE' mentioned" in stops
    assert [r["event_id"] for r in rows] == [e["id"] for e in trace["events"] if e.get("decision")]
    build([tmp_path / "traces"], tmp_path, Config(view="chat"))
    chat = _rows(tmp_path / "chat.jsonl")
    _check_chat(chat)
    assert {r["agent"] for r in chat} == {"a", "b"}
    b = next(r for r in chat if r["agent"] == "b")
    assert b["messages"][-1]["content"] == "Thanks TERMINATE"
    a = next(r for r in chat if r["agent"] == "a")
    (weather,) = a["tools"]  # the definition the model was given, not one guessed from the call
    assert weather["function"]["name"] == "get_weather"
    assert weather["function"]["description"].startswith("Weather of a city")
    assert weather["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert b["tools"] == []  # b was offered no tools


def test_parallel_invocations_of_one_agent_are_separate_episodes(tmp_path):
    """A Send fan-out runs the same ``worker`` agent three times at once, with
    one tool call id for all: each invocation must be its own conversation."""
    from langchain_core.messages import HumanMessage

    from orch_otel.integrations.langgraph import LangGraphInstrumentor
    from orch_otel.integrations.langgraph.demo import build_research_team

    topics = ("alpha", "beta", "gamma")
    (trace,) = _record(tmp_path / "traces", LangGraphInstrumentor(), lambda: build_research_team(topics).invoke(
        {"messages": [HumanMessage("research everything")]}))
    worker_spans = {e["span_id"] for e in trace["events"] if e["type"] == "spawn" and e["to"] == "worker"}
    assert len(worker_spans) == 3
    assert {e["agent_span_id"] for e in trace["events"] if e["agent"] == "worker"} == worker_spans
    build([tmp_path / "traces"], tmp_path, Config(view="chat"))
    chat = [r for r in _rows(tmp_path / "chat.jsonl") if r["agent"] == "worker"]
    _check_chat(chat)
    assert sorted(r["episode"] for r in chat) == [0, 1, 2]
    prompts = []
    for row in chat:
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["user", "assistant", "tool", "assistant"], roles  # one worker's whole run, nothing else
        prompts.append(row["messages"][0]["content"])
    assert sorted(prompts) == [f"research {t}" for t in topics]
    build([tmp_path / "traces"], tmp_path, Config(view="turns"))
    turns = [t for t in _rows(tmp_path / "turns.jsonl") if t["agent"] == "worker"]
    calls = [c for t in turns for c in t["tool_calls"]]
    assert len(calls) == 3 and all(c["status"] == "ok" and c["result"] is not None for c in calls)


def test_autogen_model_calls_are_recorded_as_chat_messages(tmp_path):
    """What the AutoGen integration records for a model call, in the message
    form the LangGraph integration uses: the model's FunctionCall list as
    ``tool_calls`` (ids and the arguments text as the model wrote them), each
    tool result as its own ``tool`` message with the id it answers."""
    pytest.importorskip("autogen_agentchat", reason="needs the optional extra: pip install 'orch-otel[autogen]'")
    import autogen_apps as apps

    from orch_otel.integrations.autogen import AutoGenInstrumentor

    (trace,) = _record(tmp_path / "traces", AutoGenInstrumentor(),
                       lambda: asyncio.run(asyncio.wait_for(apps.weather_round_robin().run(task="go"), 20)))
    store = {}
    for path in (tmp_path / "traces" / "content").glob("*.jsonl"):
        store.update((r["ref"], json.loads(r["text"])) for r in _rows(path))
    calls = [e for e in trace["events"] if e.get("channel") == "llm" and e["agent"] == "a"]
    assert len(calls) == 2  # the tool call, then the reflection
    assert store[calls[0]["content_ref"]] == {
        "role": "assistant", "content": "",
        "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]}
    assert store[calls[1]["content_ref"]] == {"role": "assistant", "content": "It is sunny"}
    assert store[calls[1]["input_ref"]][1:] == [
        {"role": "user", "content": "go", "name": "user"},
        {"role": "assistant", "content": "", "name": "a",
         "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'}]},
        {"role": "tool", "content": "sunny in Paris", "tool_call_id": "call_1", "name": "get_weather"},
    ]
    assert store[calls[1]["input_ref"]][0]["role"] == "system"
