"""orch-otel's LangChain handler does not change what the app's own callback
handlers see. langchain-core's async ``on_llm_start`` skips every non-inline
handler when an inline one is present (langchain-ai/langchain#39633), and
orch-otel's handler is inline: without care, a completion-style LLM's start
would vanish from the app's handlers, ``astream_events`` and ``astream_log``."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from conftest import instrumentor_fixture
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.runnables import RunnableLambda
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from orch_otel.integrations.langgraph import LangGraphInstrumentor

instrumented = instrumentor_fixture(LangGraphInstrumentor)


class AsyncRecorder(AsyncCallbackHandler):
    """The app's own async handler: notes the LLM callbacks it receives."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
        self.seen.append(f"start {prompts[0]}")

    async def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.seen.append("end")


class SyncRecorder(BaseCallbackHandler):
    """The app's own sync handler (run in an executor under asyncio)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_llm_start(self, serialized: Any, prompts: list[str], **kwargs: Any) -> None:
        self.seen.append(f"start {prompts[0]}")

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        self.seen.append("end")


@pytest.fixture
def uninstrumented(instrumented):
    """Run a block without orch-otel, to compare with the same block with it."""

    class Off:
        def __enter__(self):
            instrumented.uninstrument()

        def __exit__(self, *exc):
            instrumented.instrument()

    return Off()


@pytest.mark.parametrize("handler_type", [AsyncRecorder, SyncRecorder])
def test_the_apps_handler_sees_an_async_completion_llms_start(handler_type):
    handler = handler_type()
    llm = FakeListLLM(responses=["pong"])
    assert asyncio.run(llm.ainvoke("ping", config={"callbacks": [handler]})) == "pong"
    assert handler.seen == ["start ping", "end"]


def test_the_apps_handler_sees_every_prompt_of_an_async_batch():
    handler = AsyncRecorder()
    llm = FakeListLLM(responses=["a", "b", "c"])
    asyncio.run(llm.agenerate(["p1", "p2", "p3"], callbacks=[handler]))
    assert sorted(handler.seen) == ["end", "end", "end", "start p1", "start p2", "start p3"]


async def _event_kinds(runnable: Any, value: Any) -> list[tuple[str, str]]:
    return [(e["event"], e["name"]) async for e in runnable.astream_events(value, version="v2")]


def test_astream_events_yields_the_same_events_with_and_without_orch_otel(uninstrumented):
    llm = FakeListLLM(responses=["pong"])
    chain = RunnableLambda(lambda text: text.upper()) | llm
    with uninstrumented:
        without = asyncio.run(_event_kinds(chain, "ping"))
    with_orch = asyncio.run(_event_kinds(chain, "ping"))
    assert ("on_llm_start", "FakeListLLM") in without  # the expectation is not vacuous
    assert with_orch == without


def test_astream_log_keeps_the_llms_run(uninstrumented):
    async def logged_names() -> list[str]:
        chain = RunnableLambda(lambda text: text.upper()) | FakeListLLM(responses=["pong"])
        names = []
        warnings.simplefilter("ignore", DeprecationWarning)  # astream_log is deprecated, still in use
        async for patch in chain.astream_log("ping"):
            names += [op["value"]["name"] for op in patch.ops
                      if op["op"] == "add" and op["path"].startswith("/logs/") and op["path"].count("/") == 2]
        return names

    with uninstrumented:
        without = asyncio.run(logged_names())
    assert "FakeListLLM" in without  # the expectation is not vacuous
    assert asyncio.run(logged_names()) == without


class State(TypedDict):
    text: str


def _graph_with_a_completion_llm():
    llm = FakeListLLM(responses=["drafted"])

    async def writer(state: State) -> dict:
        return {"text": await llm.ainvoke(state["text"])}

    return StateGraph(State).add_node("writer", writer).add_edge(START, "writer").compile(name="drafting")


def test_orch_otel_still_records_the_async_completion_llm_under_its_agent(captured):
    handler = AsyncRecorder()
    result = asyncio.run(_graph_with_a_completion_llm().ainvoke({"text": "topic"}, config={"callbacks": [handler]}))
    assert result == {"text": "drafted"}
    assert handler.seen == ["start topic", "end"]
    by_id = {s.span_id: s for s in captured.spans}
    (chat,) = [s for s in captured.spans if s.name.startswith("chat")]
    agent = by_id[chat.parent_id]
    assert agent.name == "invoke_agent writer"  # the node that calls a model became an agent
    assert by_id[agent.parent_id].name == "invoke_workflow drafting"


class InlineRecorder(SyncRecorder):
    run_inline = True


def test_with_an_inline_handler_of_the_apps_own_every_handler_sees_what_it_sees_without_orch_otel(uninstrumented):
    async def seen() -> tuple[list[str], list[str]]:
        inline, other = InlineRecorder(), AsyncRecorder()
        await FakeListLLM(responses=["pong"]).ainvoke("ping", config={"callbacks": [inline, other]})
        return inline.seen, other.seen

    with uninstrumented:
        without = asyncio.run(seen())
    assert without[0] == ["start ping", "end"]
    assert asyncio.run(seen()) == without  # langchain-core's own behaviour, whatever it is, unchanged


def test_uninstrument_restores_langchains_on_llm_start(instrumented):
    from langchain_core.callbacks.manager import AsyncCallbackManager

    wrapped = AsyncCallbackManager.on_llm_start
    instrumented.uninstrument()
    try:
        assert AsyncCallbackManager.on_llm_start is wrapped.__orch_otel_original__
    finally:
        instrumented.instrument()
    assert AsyncCallbackManager.on_llm_start is not wrapped.__orch_otel_original__
