"""Replay of a hand-written app (orch-otel's decorators): ``@workflow`` keeps
its arguments, ``@llm_call`` and ``@tool`` functions are answered from the
recording, and a value the redactors removed is served as recorded, with a
note saying so."""

from __future__ import annotations

import asyncio

import pytest
from conftest import check_trace

import orch_otel
from orch_otel.recorder import get_recorder
from orch_otel.redaction import REDACTED
from orch_otel.replaying import MissingContent, ReplayError, replay

REAL_CALLS: list[str] = []


class CalledForReal(AssertionError):
    """A replay ran a model or a tool instead of serving it."""


RAISE = {"on": False}


@orch_otel.llm_call("notes-llm", provider="offline")
def chat(messages: list[dict]) -> dict:
    if RAISE["on"]:
        raise CalledForReal("chat")
    REAL_CALLS.append("chat")
    return {"role": "assistant", "content": f"notes on {messages[-1]['content']}"}


@orch_otel.tool
def search(query: str) -> list[str]:
    if RAISE["on"]:
        raise CalledForReal("search")
    REAL_CALLS.append("search")
    return [f"{query}: first hit", f"{query}: key sk-{'a' * 40}"]  # the second looks like an API key


@orch_otel.agent("researcher", role="researcher")
def researcher(topic: str) -> str:
    hits = search(topic)
    return chat([{"role": "user", "content": " | ".join(hits)}])["content"]


@orch_otel.workflow("desk", task_id="desk-1")
async def desk(question: str, topics: int = 2) -> list[str]:
    names = ["researcher"] * topics
    orch_otel.spawn(names)
    notes = [researcher(f"{question} #{i}") for i in range(topics)]
    orch_otel.aggregate(notes, sources=names)
    orch_otel.stop("end")
    return notes


@pytest.fixture
def recorded(captured, monkeypatch):
    REAL_CALLS.clear()
    with monkeypatch.context() as m:
        m.setattr(get_recorder().content, "capture", True)
        asyncio.run(desk("why do agents stop", topics=2))
    (conversion,) = captured.conversions()
    assert REAL_CALLS == ["search", "chat", "search", "chat"]
    return check_trace(conversion.trace), conversion.contents


def test_a_decorated_app_replays_without_calling_its_model_or_tools(recorded, monkeypatch):
    trace, contents = recorded
    monkeypatch.setitem(RAISE, "on", True)
    result = replay(trace, desk, contents=contents)
    assert result.equal, result.divergence and result.divergence.describe()
    assert result.served == 4 and result.live == 0 and result.app_errors == [None]
    check_trace(result.trace)


def test_the_workflow_is_called_with_its_recorded_arguments(recorded):
    trace, contents = recorded
    run_input = contents[trace["events"][0]["run_input_ref"]]
    assert run_input == '{"args":["why do agents stop"],"kwargs":{"topics":2}}'


def test_a_redacted_value_is_served_as_recorded_and_said_to_be(recorded, monkeypatch):
    trace, contents = recorded
    (result_ref, *_) = [e["content_ref"] for e in trace["events"] if e["type"] == "tool_result"]
    assert REDACTED in contents[result_ref]  # the key never reached the trace
    monkeypatch.setitem(RAISE, "on", True)
    result = replay(trace, desk, contents=contents)
    assert result.equal
    # both search results hold the key, and each reply quotes its hits: four served values were redacted
    redacted = [e["id"] for e in trace["events"] if e["type"] == "tool_result" or e.get("channel") == "llm"]
    assert len(redacted) == 4 and all("was redacted" in note for note in result.notes)
    assert sorted(note.split(" ")[0] for note in result.notes) == sorted(redacted)


def test_a_plain_function_is_not_an_app(recorded):
    trace, contents = recorded
    with pytest.raises(ReplayError, match="decorated with @orch_otel.workflow"):
        replay(trace, lambda: None, contents=contents)


def test_a_recording_without_content_is_refused_before_running(captured):
    asyncio.run(desk("no content", topics=1))
    (conversion,) = captured.conversions()
    with pytest.raises(MissingContent, match=r"lacks the content of 2 event\(s\)"):
        replay(conversion.trace, desk, contents=conversion.contents)
