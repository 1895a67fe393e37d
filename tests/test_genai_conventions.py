"""The OpenTelemetry GenAI conventions as they stand (semantic-conventions-genai):
span kinds per span type, the attributes samplers read present when a span
starts, well-known ``gen_ai.provider.name`` values, and the transfer
refinement of ``execute_tool`` on handoff tools, which only the opt-in
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` writes.

Real LangGraph and AutoGen apps; only the models are fake (scripted chat
models, or a local OpenAI-compatible server on loopback)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import autogen_apps
import langgraph_apps
import orjson
import pytest
from autogen_agentchat.agents import AssistantAgent
from conftest import instrumentor_fixture
from langchain.agents import create_agent
from openai_server import SERVED_MODEL, OpenAIServer, Reply
from opentelemetry.sdk.trace import SpanProcessor

from orch_otel import Attr, Recorder, testing
from orch_otel.foreign.sources import OPENINFERENCE, ORCH_OTEL, span_source
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call
from orch_otel.recorder import get_recorder
from orch_otel.spans import dump_line, record_from_dict

instrumented = instrumentor_fixture(LangGraphInstrumentor, AutoGenInstrumentor)

TRANSFER_KEYS = (Attr.TRANSFER_MODE, Attr.TRANSFER_TARGET_TYPE, Attr.TRANSFER_TARGET_NAME)
TIMEOUT = 20


class StartSnapshots(SpanProcessor):
    """The attributes each span has when it starts (what a sampler or an
    ``on_start`` processor sees), while ``active`` is a list."""

    def __init__(self) -> None:
        self.active: list[tuple[str, dict[str, Any]]] | None = None

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.active is not None:
            self.active.append((span.name, dict(span.attributes or {})))


@pytest.fixture(scope="module")
def start_snapshots():
    snapshots = StartSnapshots()
    testing.ensure_sdk_provider().add_span_processor(snapshots)  # the session provider: inactive after the module
    return snapshots


@pytest.fixture
def at_start(start_snapshots):
    start_snapshots.active = []
    yield start_snapshots.active
    start_snapshots.active = None


@pytest.fixture
def latest(monkeypatch):
    """What OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental gives the
    recorder the instrumentors were set up with (it reads the variable once)."""
    monkeypatch.setattr(get_recorder(), "genai_latest", True)


class AzureNamedFakeModel(FakeToolCallingModel):
    """A scripted model that LangChain reports as ``ls_provider="azure"``, as AzureChatOpenAI does."""

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "azure"
        return params


# -- span kinds and the attributes present at start ------------------------------------------------------


def test_each_span_type_has_the_conventions_span_kind(captured):
    """invoke_workflow, invoke_agent (in process) and execute_tool are INTERNAL; a model call is CLIENT."""
    langgraph_apps.build_supervisor().invoke(langgraph_apps.user_input("what is 1+2?"))
    kinds: dict[str, set[str]] = {}
    for span in captured.spans:
        kinds.setdefault(span.attributes.get(Attr.OPERATION), set()).add(span.kind)
    assert kinds == {"invoke_workflow": {"internal"}, "invoke_agent": {"internal"}, "execute_tool": {"internal"},
                     "chat": {"client"}}


def test_langchain_provider_names_map_to_the_well_known_values(captured, at_start):
    model = AzureNamedFakeModel(model_name="gpt-4o", responses=[ai("hi")])
    create_agent(model, [], name="helper").invoke(langgraph_apps.user_input())
    (chat,) = [attrs for name, attrs in at_start if name.startswith("chat ")]
    assert chat[Attr.PROVIDER] == "azure.ai.openai"  # LangChain says "azure"; the conventions' value, at start
    assert chat[Attr.REQUEST_MODEL] == "gpt-4o"


async def test_autogen_agent_and_model_spans_start_with_what_samplers_read(captured, at_start):
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    with OpenAIServer([Reply("hello", prompt_tokens=7)]) as server:
        client = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-a-key", base_url=server.base_url)
        result = await asyncio.wait_for(AssistantAgent("solo", model_client=client).run(task="hi"), TIMEOUT)
    assert result.messages[-1].content == "hello"
    started = dict(at_start)
    agent, chat = started["invoke_agent solo"], started["chat gpt-4o"]
    assert (agent[Attr.OPERATION], agent[Attr.AGENT_NAME], agent[Attr.PROVIDER]) == ("invoke_agent", "solo", "openai")
    assert (chat[Attr.OPERATION], chat[Attr.PROVIDER], chat[Attr.REQUEST_MODEL]) == ("chat", "openai", "gpt-4o")
    (chat_span,) = [s for s in captured.spans if s.name == "chat gpt-4o"]
    assert chat_span.kind == "client" and chat_span.attributes[Attr.INPUT_TOKENS] == 7
    assert chat_span.attributes[Attr.RESPONSE_MODEL] == SERVED_MODEL  # known only at the end: set then


def test_autogen_client_classes_name_their_providers():
    from autogen_ext.models.openai import AzureOpenAIChatCompletionClient, OpenAIChatCompletionClient

    from orch_otel.integrations.autogen._clients import provider_name

    openai = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-a-key")
    azure = AzureOpenAIChatCompletionClient(model="gpt-4o", azure_endpoint="https://example.invalid",
                                            api_version="2024-06-01", api_key="not-a-key")
    assert (provider_name(openai), provider_name(azure)) == ("openai", "azure.ai.openai")
    # autogen-ext sends gemini-* and claude-* models to their providers' OpenAI-compatible endpoints.
    gemini = OpenAIChatCompletionClient(model="gemini-1.5-flash", api_key="not-a-key")
    claude = OpenAIChatCompletionClient(model="claude-3-5-haiku-20241022", api_key="not-a-key")
    assert (provider_name(gemini), provider_name(claude)) == ("gcp.gemini", "anthropic")
    local = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-a-key", base_url="http://127.0.0.1:9/v1")
    assert provider_name(local) == "openai"  # an OpenAI-compatible server of unknown make: the client's flavour
    assert provider_name(autogen_apps.replay("x")) is None  # an offline replay has no provider


# -- the transfer refinement: only handoff tools, only under the opt-in ----------------------------------------


def transfers(captured) -> dict[str, tuple]:
    """execute_tool span name -> (agent, mode, target type, target name) for each tool span."""
    return {s.name: (s.attributes.get(Attr.AGENT_NAME), *(s.attributes.get(k) for k in TRANSFER_KEYS))
            for s in captured.spans if s.attributes.get(Attr.OPERATION) == "execute_tool"}


def test_langgraph_handoff_tools_are_transfers_under_the_opt_in(captured, latest):
    app = langgraph_apps.build_swarm()
    app.invoke(langgraph_apps.user_input(), {"configurable": {"thread_id": "transfer-1"}})
    # Alice's langgraph-swarm handoff tool returns Command(goto="Bob", graph=PARENT); Bob's add is a plain tool.
    assert transfers(captured) == {
        "execute_tool transfer_to_bob": ("Alice", "pass_control", "agent", "Bob"),
        "execute_tool add": (None, None, None, None),
    }


def test_langgraph_supervisor_handoffs_are_transfers_under_the_opt_in(captured, latest):
    langgraph_apps.build_supervisor().invoke(langgraph_apps.user_input("what is 1+2?"))
    assert transfers(captured) == {
        "execute_tool transfer_to_math_expert": ("supervisor", "pass_control", "agent", "math_expert"),
        "execute_tool add": (None, None, None, None),
        "execute_tool transfer_to_research_expert": ("supervisor", "pass_control", "agent", "research_expert"),
        "execute_tool lookup": (None, None, None, None),
    }


def test_a_tool_named_like_a_handoff_is_not_a_transfer(captured, latest):
    @langgraph_apps.tool
    def transfer_to_bob(note: str) -> str:
        """An ordinary tool that only has a handoff-like name."""
        return "noted"

    model = FakeToolCallingModel(model_name="m", by_turn=True, responses=[
        ai(tool_calls=[tool_call("transfer_to_bob", {"note": "x"}, "c1")]), ai("done")])
    create_agent(model, [transfer_to_bob], name="solo").invoke(langgraph_apps.user_input())
    assert transfers(captured) == {"execute_tool transfer_to_bob": (None, None, None, None)}


async def test_autogen_swarm_handoff_tools_are_transfers_under_the_opt_in(captured, latest, at_start):
    result = await asyncio.wait_for(autogen_apps.swarm_team().run(task="go"), TIMEOUT)
    assert result.stop_reason == "Handoff to user from bob detected."
    # alice: lookup (t1) and her Handoff to bob (h1); bob: his Handoff to "user" (h2). AutoGen's
    # Handoff names its target an agent, so the target type is agent for both.
    # AutoGen knows the target before the tool runs: the refinement's span name, its attributes at start.
    assert transfers(captured) == {
        "execute_tool lookup": (None, None, None, None),
        "execute_tool transfer_to_bob bob": ("alice", "pass_control", "agent", "bob"),
        "execute_tool transfer_to_user user": ("bob", "pass_control", "agent", "user"),
    }
    started = dict(at_start)["execute_tool transfer_to_bob bob"]
    assert (started[Attr.AGENT_NAME], started[Attr.TRANSFER_TARGET_NAME]) == ("alice", "bob")


async def test_by_default_no_span_carries_the_unreleased_transfer_attributes(captured):
    await asyncio.wait_for(autogen_apps.swarm_team().run(task="go"), TIMEOUT)
    langgraph_apps.build_swarm().invoke(langgraph_apps.user_input(), {"configurable": {"thread_id": "default-1"}})
    assert len(transfers(captured)) == 4
    assert not any(key in s.attributes for s in captured.spans for key in TRANSFER_KEYS)
    tools = [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == "execute_tool"]
    assert not any(Attr.AGENT_NAME in s.attributes for s in tools)  # as before: the agent is the parent span


def test_the_opt_in_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    assert Recorder().genai_latest is True
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http")
    assert Recorder().genai_latest is False
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN")
    assert Recorder().genai_latest is False


# -- the OpenInference interop kind stays orch-otel's ----------------------------------------------------------


def test_workflow_roots_carry_the_openinference_chain_kind_and_stay_orch_otel_spans(captured):
    recorder = Recorder()
    with recorder.workflow("team"), recorder.agent("a"):
        pass
    root, agent = sorted(captured.spans, key=lambda s: s.start_ns)
    assert root.attributes[Attr.OPENINFERENCE_SPAN_KIND] == "CHAIN"
    assert Attr.OPENINFERENCE_SPAN_KIND not in agent.attributes  # Phoenix maps invoke_agent itself
    # A span dump that lost its scope is still read as orch-otel's, not as an OpenInference log.
    for record in (root, agent):
        assert span_source(replace(record, scope="")) == ORCH_OTEL
    chain = replace(root, scope="", attributes={Attr.OPENINFERENCE_SPAN_KIND: "CHAIN"})
    assert span_source(chain) == OPENINFERENCE  # OpenInference's own chains are still its


def test_a_model_call_stays_a_client_span_through_the_span_dump(captured):
    with Recorder().llm("m"):
        pass
    (span,) = captured.spans
    assert span.kind == "client"
    assert record_from_dict(orjson.loads(dump_line(span))).kind == "client"


def test_the_opt_in_from_the_environment_reaches_instrument(run_python, tmp_path):
    """End to end, in a fresh process: the variable set, ``orch_otel.instrument()``, a LangGraph swarm."""
    code = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
import orch_otel
from orch_otel import testing
orch_otel.instrument(trace_dir={str(tmp_path / "traces")!r})
import langgraph_apps
with testing.capture() as captured:
    langgraph_apps.build_swarm().invoke(langgraph_apps.user_input(), {{"configurable": {{"thread_id": "t"}}}})
print(json.dumps({{s.name: s.attributes.get("gen_ai.transfer.target.name") for s in captured.spans
                  if s.name.startswith("execute_tool")}}))
"""
    for opt_in, expected in (("gen_ai_latest_experimental", "Bob"), ("", None)):
        result = run_python(code, env={"OTEL_SEMCONV_STABILITY_OPT_IN": opt_in})
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout.strip().splitlines()[-1]) == {
            "execute_tool transfer_to_bob": expected, "execute_tool add": None}


def test_an_agent_helper_names_its_model_provider_at_start(captured, at_start):
    import orch_otel

    with orch_otel.workflow("app"), orch_otel.agent("planner", provider="anthropic"):
        pass
    assert dict(at_start)["invoke_agent planner"][Attr.PROVIDER] == "anthropic"
