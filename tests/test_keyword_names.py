"""A helper and the recorder method behind it take the same keyword names (the
trace format's words): ``message(recipients=)``, ``Recorder.llm(tools=)``.
The old names (``message(to=)``, ``Recorder.llm(tool_definitions=)``) still
work for one release, with one DeprecationWarning per name, and never make
the app's call fail."""

from __future__ import annotations

import ast
import inspect
import logging
import warnings

import pytest
from conftest import REPO, events_of

import orch_otel
from orch_otel import _faults as faults
from orch_otel import _renamed
from orch_otel.content import ContentPolicy
from orch_otel.recorder import Recorder
from orch_otel.vocabulary import Attr

TOOLS = [{"name": "lookup", "description": "find a fact"}]


@pytest.fixture(autouse=True)
def fresh_warnings():
    _renamed._warned.clear()
    yield
    _renamed._warned.clear()


def agent_message(captured, **keywords) -> dict:
    with orch_otel.workflow("flow"), orch_otel.agent("alice"):
        orch_otel.message("hi", **keywords)
    (trace,) = captured.traces()
    (msg,) = events_of(trace, "message", channel="agent")
    return msg


def offered_tools(captured, recorder: Recorder, **keywords) -> str:
    with recorder.workflow("flow"), recorder.llm("m", **keywords):
        pass
    (chat,) = [s for s in captured.spans if s.name == "chat m"]
    return chat.attributes[Attr.TOOL_DEFINITIONS]


@pytest.fixture
def content_recorder(captured):
    return Recorder(content=ContentPolicy(capture=True))


def test_message_takes_recipients_without_a_warning(captured):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        msg = agent_message(captured, recipients=["bob", "carol"])
    assert (msg["from"], msg["recipients"]) == ("alice", ["bob", "carol"])


def test_message_to_still_works_and_warns_once(captured):
    with pytest.warns(DeprecationWarning, match=r"message\(to=\) is deprecated.*use recipients=") as seen:
        with orch_otel.workflow("flow"), orch_otel.agent("alice"):
            orch_otel.message("hi", to="bob")
            orch_otel.message("again", to=["bob", "carol"])
    assert len([w for w in seen if issubclass(w.category, DeprecationWarning)]) == 1
    assert seen[0].filename == __file__  # points at the app's line to change, not at orch-otel
    (trace,) = captured.traces()
    assert [m["recipients"] for m in events_of(trace, "message", channel="agent")] == [["bob"], ["bob", "carol"]]


def test_recorder_llm_takes_tools_without_a_warning(captured, content_recorder):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        offered = offered_tools(captured, content_recorder, tools=TOOLS)
    assert '"lookup"' in offered


def test_recorder_llm_tool_definitions_still_works_and_warns_once(captured, content_recorder):
    with pytest.warns(DeprecationWarning, match=r"Recorder.llm\(tool_definitions=\) is deprecated.*use tools="):
        offered = offered_tools(captured, content_recorder, tool_definitions=TOOLS)
    assert '"lookup"' in offered
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second use of the old name does not warn again
        with content_recorder.llm("again", tool_definitions=TOOLS):
            pass


def keywords(fn) -> set[str]:
    params = inspect.signature(fn).parameters.values()
    named = {p.name for p in params if p.kind is not p.VAR_KEYWORD} - {"self"}
    return {"name" if n == "name_or_fn" else n for n in named}


def test_the_helpers_take_their_recorder_methods_keywords_by_the_same_names():
    # what integrations alone pass (another span, fan-out fields, raw attributes), or a helper derives itself
    # (``input``: @workflow / @agent take it from the decorated call's arguments; ``route``: how a framework
    # made a decision, for forks; ``transfer_to``: a framework's handoff tool)
    not_for_helpers = {"span", "attributes", "links", "fanout_index", "fanout_size", "conversation_id",
                       "call_id", "arguments", "input", "route", "transfer_to"}
    pairs = [(orch_otel.spawn, Recorder.spawn), (orch_otel.delegate, Recorder.delegate),
             (orch_otel.message, Recorder.message), (orch_otel.aggregate, Recorder.aggregate),
             (orch_otel.stop, Recorder.stop), (orch_otel.human_intervention, Recorder.human_intervention),
             (orch_otel.reward, Recorder.reward), (orch_otel.llm_call, Recorder.llm),
             (orch_otel.agent, Recorder.agent), (orch_otel.workflow, Recorder.workflow), (orch_otel.tool, Recorder.tool)]
    for helper, method in pairs:
        assert keywords(helper) <= keywords(method), (helper.__name__, keywords(helper) - keywords(method))
        assert keywords(method) - not_for_helpers <= keywords(helper), (helper.__name__, keywords(method) - keywords(helper))


def test_a_deprecation_turned_into_an_error_does_not_fail_the_call(captured, caplog):
    previous = faults.set_strict(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # as under `python -W error`
            with caplog.at_level(logging.WARNING, logger="orch_otel"):
                msg = agent_message(captured, to="bob")
    finally:
        faults.set_strict(previous)
    assert msg["recipients"] == ["bob"]
    assert any("message(to=) is deprecated" in r.getMessage() for r in caplog.records)


def test_the_new_name_wins_when_both_are_given(captured):
    with pytest.warns(DeprecationWarning):
        msg = agent_message(captured, recipients="carol", to="bob")
    assert msg["recipients"] == ["carol"]


def test_an_unknown_keyword_to_message_is_logged_once_and_ignored(captured, caplog):
    previous = faults.set_strict(False)
    faults._warned.clear()
    try:
        with caplog.at_level(logging.WARNING, logger="orch_otel"):
            with orch_otel.workflow("flow"), orch_otel.agent("alice"):
                orch_otel.message("hi", recipient="bob")  # a typo: nothing recorded, the app goes on
    finally:
        faults.set_strict(previous)
    (trace,) = captured.traces()
    assert events_of(trace, "message", channel="agent") == []
    assert [r for r in caplog.records if "message() failed; not recorded" in r.getMessage()]


def test_stop_and_human_intervention_take_the_recorders_source_and_resume_of(captured):
    with orch_otel.workflow("flow"), orch_otel.agent("alice"):
        orch_otel.human_intervention("go on", resume_of="0" * 32)
        orch_otel.stop("max_turns", source="MaxMessageTermination", forced=True)
    (trace,) = captured.traces()
    (human,) = events_of(trace, "human_intervention")
    assert human["resume_of"] == "0" * 32
    (stop,) = [e for e in trace["events"] if e.get("decision") == "stop" and not e.get("implied")]
    assert (stop["reason"], stop["source"]) == ("max_turns", "MaxMessageTermination")


# Old keyword names, by the function (attribute name) they belong to.
DEPRECATED = {"message": {"to"}, "llm": {"tool_definitions"}}


def test_orch_otel_itself_uses_no_deprecated_keyword_name():
    src = REPO / "src" / "orch_otel"
    found = set()
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                for keyword in node.keywords:
                    if keyword.arg in DEPRECATED.get(called, ()):
                        found.add((path.relative_to(src).as_posix(), called, keyword.arg))
    assert found == set()
