"""autogen-ext's real ``OpenAIChatCompletionClient`` over HTTP against a local
OpenAI-compatible server (tests/openai_server.py, on loopback): the model id
the server answered with, token counts as it reported them, and unknown
counts recorded as unknown when a stream reports none."""

from __future__ import annotations

import asyncio

import autogen_apps as apps
import pytest
from conftest import check_trace, events_of, instrumentor_fixture
from openai_server import SERVED_MODEL, OpenAIServer, Reply

from orch_otel.integrations.autogen import AutoGenInstrumentor

pytest.importorskip("autogen_ext.models.openai", reason="needs autogen-ext[openai] (the dev extra)")

TIMEOUT = 20

instrumented = instrumentor_fixture(AutoGenInstrumentor)

SCRIPT = [Reply(tool_calls=[("get_weather", {"city": "Paris"})], call_ids=["call_1"], prompt_tokens=20, completion_tokens=9),
          Reply("It is sunny", prompt_tokens=31, completion_tokens=4)]


def run_team(**options):
    with OpenAIServer(SCRIPT) as server:
        result = asyncio.run(asyncio.wait_for(apps.openai_weather_team(server.base_url, **options).run(task="weather?"),
                                              TIMEOUT))
    assert [r["model"] for r in server.requests] == ["gpt-4o", "gpt-4o"]  # what the app asked for
    return result, server


def llm_calls(trace: dict) -> list[tuple]:
    return [(e["agent"], e["model"], e["provider"], e.get("input_tokens"), e.get("output_tokens"))
            for e in events_of(trace, "message", channel="llm")]


def test_the_model_id_the_server_answered_with_is_recorded(captured):
    run_team()
    (trace,) = captured.traces()
    check_trace(trace)
    assert llm_calls(trace) == [("a", SERVED_MODEL, "openai", 20, 9), ("a", SERVED_MODEL, "openai", 31, 4)]
    chats = [s for s in captured.spans if s.name.startswith("chat ")]
    assert [(s.attributes["gen_ai.request.model"], s.attributes["gen_ai.response.model"]) for s in chats] == [
        ("gpt-4o", SERVED_MODEL)] * 2
    (call,) = events_of(trace, "tool_call")
    assert (call["tool"], call["call_id"]) == ("get_weather", "call_1")
    assert trace["costs"]["tokens"] == 64 and "tokens_unknown_calls" not in trace["costs"]


def test_a_stream_that_reports_usage_records_it(captured):
    run_team(stream=True, include_usage=True)
    (trace,) = captured.traces()
    assert llm_calls(check_trace(trace)) == [("a", SERVED_MODEL, "openai", 20, 9), ("a", SERVED_MODEL, "openai", 31, 4)]
    assert trace["costs"]["tokens"] == 64 and "tokens_unknown_calls" not in trace["costs"]


def test_a_stream_without_usage_records_unknown_tokens_not_zero(captured):
    result, _ = run_team(stream=True)
    # the client's own view: a CreateResult with 0 and 0 (the server sent no usage chunk)
    assert (result.messages[-1].models_usage.prompt_tokens, result.messages[-1].models_usage.completion_tokens) == (0, 0)
    (trace,) = captured.traces()
    assert llm_calls(check_trace(trace)) == [("a", SERVED_MODEL, "openai", None, None)] * 2
    assert trace["costs"]["tokens"] == 0 and trace["costs"]["tokens_unknown_calls"] == 2  # a lower bound
