"""The model that answered an OpenAI Agents SDK model call, as the provider
names it: the SDK's own OpenAI models (Responses API, the default, and Chat
Completions) against a local OpenAI-compatible server on loopback, which
answers as ``gpt-4o-2024-08-06`` whatever model the request names."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig, Runner  # noqa: E402
from conftest import check_trace, events_of, instrumentor_fixture  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402
from openai_server import SERVED_MODEL, OpenAIServer, Reply  # noqa: E402

from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.recorder import get_recorder  # noqa: E402
from orch_otel.replaying import replay  # noqa: E402
from orch_otel.vocabulary import Attr  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)

MODELS = {"responses": OpenAIResponsesModel, "chat_completions": OpenAIChatCompletionsModel}


@pytest.mark.parametrize("api", sorted(MODELS))
def test_each_call_records_the_model_the_provider_answered_with(captured, api):
    """The manager asks gpt-4o for a tool call, then an answer; the server answers as SERVED_MODEL."""
    with OpenAIServer([Reply(tool_calls=[("lookup_invoice", {"number": "42"})], call_ids=["c1"]), Reply("paid")]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        agent = Agent(name="clerk", tools=[apps.lookup_invoice], model=MODELS[api](model="gpt-4o", openai_client=client))
        result = apps.run(agent, "Is invoice 42 paid?", run_config=RunConfig(workflow_name="billing"))
    assert result.final_output == "paid"
    assert [r["model"] for r in server.requests] == ["gpt-4o", "gpt-4o"]  # what the app asked for, unchanged
    calls = [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == "chat"]
    assert [(s.attributes[Attr.REQUEST_MODEL], s.attributes[Attr.RESPONSE_MODEL]) for s in calls] == [
        ("gpt-4o", SERVED_MODEL), ("gpt-4o", SERVED_MODEL)]
    (trace,) = captured.traces()
    assert [e["model"] for e in events_of(check_trace(trace), "message", channel="llm")] == [SERVED_MODEL] * 2


def test_a_streamed_responses_call_records_the_model_its_completed_event_names(captured):
    with OpenAIServer([Reply(tool_calls=[("lookup_invoice", {"number": "42"})], call_ids=["c1"]), Reply("paid")]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        agent = Agent(name="clerk", tools=[apps.lookup_invoice],
                      model=OpenAIResponsesModel(model="gpt-4o", openai_client=client))
        assert apps.run_streamed(agent, "Is invoice 42 paid?").final_output == "paid"
    assert [r["stream"] for r in server.requests] == [True, True]
    calls = [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == "chat"]
    assert [s.attributes.get(Attr.RESPONSE_MODEL) for s in calls] == [SERVED_MODEL, SERVED_MODEL]


def test_a_streamed_chat_completions_call_does_not_take_the_requested_name_for_the_answering_one(captured):
    """The SDK's completed event for a Chat Completions stream repeats the requested name: not recorded."""
    with OpenAIServer([Reply("paid")]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        agent = Agent(name="clerk", model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client))
        assert apps.run_streamed(agent, "Is invoice 42 paid?").final_output == "paid"
    (call,) = [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == "chat"]
    assert call.attributes[Attr.REQUEST_MODEL] == "gpt-4o" and Attr.RESPONSE_MODEL not in call.attributes


def test_a_streamed_responses_run_the_consumer_cancels_still_ends_cancelled(captured):
    async def cut_short() -> None:
        result = Runner.run_streamed(agent, "Is invoice 42 paid?", run_config=RunConfig(workflow_name="billing"))
        async for _ in result.stream_events():
            result.cancel()
        if result.run_loop_task is not None:
            await asyncio.gather(result.run_loop_task, return_exceptions=True)

    with OpenAIServer([Reply("paid")]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        agent = Agent(name="clerk", model=OpenAIResponsesModel(model="gpt-4o", openai_client=client))
        asyncio.run(asyncio.wait_for(cut_short(), apps.TIMEOUT))
    (trace,) = captured.traces()
    stops = [(e["agent"], e["reason"]) for e in check_trace(trace)["events"] if e.get("decision") == "stop"]
    assert stops[-1] == ("billing", "cancelled")


def test_a_model_without_a_raw_response_records_the_requested_model_only(captured):
    apps.support()()  # the SDK's ScriptedModel: no provider, no response model
    calls = [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == "chat"]
    assert calls and all(Attr.RESPONSE_MODEL not in s.attributes for s in calls)


def test_a_replay_serves_each_call_as_the_model_that_answered_it(captured, monkeypatch):
    monkeypatch.setattr(get_recorder().content, "capture", True)
    with OpenAIServer([Reply("paid")]) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        apps.run(Agent(name="clerk", model=OpenAIResponsesModel(model="gpt-4o", openai_client=client)),
                 "Is invoice 42 paid?", run_config=RunConfig(workflow_name="billing"))
    (conversion,) = captured.conversions()
    with OpenAIServer([]) as silent:  # every answer must be served: no request reaches the server
        client = AsyncOpenAI(base_url=silent.base_url, api_key="k", max_retries=0)
        app = Agent(name="clerk", model=OpenAIResponsesModel(model="gpt-4o", openai_client=client))
        result = replay(conversion.trace, app, contents=conversion.contents)
    assert result.equal and (result.served, result.live) == (1, 0) and silent.requests == []
    assert [e["model"] for e in events_of(result.trace, "message", channel="llm")] == [SERVED_MODEL]
