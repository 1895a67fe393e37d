"""OpenAI Agents SDK tools beyond plain function tools: tool guardrails,
hosted (provider-side) tools and an MCP server's tools. The real SDK and a
real MCP server over stdio (tests/mcp_notes_server.py); only the model is
scripted (tests/openai_agents_apps.py). Expected facts come from each app's
code."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")

import openai_agents_apps as apps  # noqa: E402
from agents.exceptions import ToolInputGuardrailTripwireTriggered, ToolOutputGuardrailTripwireTriggered  # noqa: E402
from conftest import check_trace, events_of, instrumentor_fixture, recording  # noqa: E402

from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
from orch_otel.vocabulary import Attr  # noqa: E402

instrumented = instrumentor_fixture(OpenAIAgentsInstrumentor)


def _one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def _stops(trace: dict) -> list[tuple]:
    return [(e["agent"], e["reason"], e.get("source"), e["forced"])
            for e in events_of(trace, "orchestrator_decision", decision="stop")]


def _results(trace: dict) -> dict[str, tuple]:
    return {e["call_id"]: (e["tool"], e["status"], e.get("outcome"), e.get("guardrail"))
            for e in events_of(trace, "tool_result")}


def _spans(captured, operation: str) -> list:
    return [s for s in captured.spans if s.attributes.get(Attr.OPERATION) == operation]


# -- tool guardrails ------------------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_a_rejected_tool_call_did_not_run_and_a_withheld_result_names_its_guardrail(captured, streamed):
    assert apps.guarded_tools(streamed).final_output == "could not do either"
    assert apps.tool_bodies_run == ["read_file notes"]  # delete_file's body never ran
    trace = _one_trace(captured)
    # Both are the model's calls (tool_call events); neither tool failed: a guardrail stopped each.
    assert [(e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")] == [("delete_file", "g1"),
                                                                                 ("read_file", "g2")]
    assert _results(trace) == {"g1": ("delete_file", "ok", "rejected", "no_system_paths"),
                               "g2": ("read_file", "ok", "withheld", "redact_secrets")}
    assert _stops(trace) == [("clerk", "end", None, False), ("files", "end", None, False)]


def test_the_model_got_the_guardrails_messages_as_the_tool_results(captured):
    with recording(capture=True):
        apps.guarded_tools()
    (conversion,) = captured.conversions()
    results = {e["call_id"]: conversion.contents[e["content_ref"]]
               for e in events_of(conversion.trace, "tool_result")}
    assert json.loads(results["g1"]) == "refused: system path"
    assert json.loads(results["g2"]) == "withheld: it held a secret"


def test_a_tool_input_tripwire_is_the_runs_forced_stop_and_the_tool_did_not_run(captured):
    with pytest.raises(ToolInputGuardrailTripwireTriggered):
        apps.tool_input_tripwire()
    assert apps.tool_bodies_run == []
    trace = _one_trace(captured)
    assert _stops(trace) == [("files", "tool_input_guardrail_tripwire", "no_deletes", True)]
    assert _results(trace) == {"x1": ("wipe", "ok", "rejected", "no_deletes")}
    (agent_return,) = events_of(trace, "return", agent="clerk")
    assert agent_return["status"] == "error"  # the run raised through the agent, as for the agent's own tripwires


def test_a_tool_output_tripwire_is_the_runs_forced_stop_after_the_tool_ran(captured):
    with pytest.raises(ToolOutputGuardrailTripwireTriggered):
        apps.tool_output_tripwire()
    assert apps.tool_bodies_run == ["dump vault"]
    trace = _one_trace(captured)
    assert _stops(trace) == [("files", "tool_output_guardrail_tripwire", "no_leaks", True)]
    assert _results(trace) == {"x2": ("dump", "ok", "withheld", "no_leaks")}


# -- hosted tools -----------------------------------------------------------------------------------


def test_hosted_calls_are_tool_calls_the_provider_ran_inside_the_model_call(captured):
    assert apps.hosted_tools().final_output == "Refunds within 30 days; invoice 42 is paid."
    trace = _one_trace(captured)
    calls = [(e["tool"], e["call_id"], e.get("hosted", False), e.get("server"))
             for e in events_of(trace, "tool_call")]
    assert calls == [("web_search", "ws_1", True, None), ("file_search", "fs_1", True, None),
                     ("search_docs", "mcp_1", True, "docs"), ("lookup_invoice", "t1", False, None)]
    by_id = {s.span_id: s for s in captured.spans}
    (first_call, _) = _spans(captured, "chat")
    for span in _spans(captured, "execute_tool"):
        hosted = span.attributes.get(Attr.TOOL_HOSTED, False)
        parent = by_id[span.parent_id]
        # a hosted call ran at the provider, inside the model call; the function tool ran in the agent
        assert (parent.span_id == first_call.span_id) == hosted, span.name
        assert parent.attributes[Attr.OPERATION] == ("chat" if hosted else "invoke_agent")


def test_a_hosted_call_the_provider_says_failed_is_a_failed_tool_call(captured):
    assert apps.failed_web_search().final_output == "I could not search."
    trace = _one_trace(captured)
    assert _results(trace) == {"ws_9": ("web_search", "error", "error", None)}
    assert _stops(trace) == [("researcher", "end", None, False), ("research", "end", None, False)]


def test_a_shell_in_a_hosted_container_is_a_hosted_call_inside_the_model_call_with_the_providers_output(captured):
    with recording(capture=True):
        assert apps.hosted_shell().final_output == "Python 3.12.1 is installed; invoice 42 is paid."
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert [(e["agent"], e["tool"], e["call_id"], e.get("hosted")) for e in events_of(trace, "tool_call")] == [
        ("analyst", "shell", "hs1", True), ("analyst", "lookup_invoice", "t1", None)]
    (call, _) = events_of(trace, "tool_call")
    assert json.loads(conversion.contents[call["content_ref"]]) == {"commands": ["python --version"]}
    (result,) = events_of(trace, "tool_result", call_id="hs1")
    assert result["status"] == "ok"
    assert json.loads(conversion.contents[result["content_ref"]]) == {"output": [  # the provider's mark dropped
        {"stdout": "Python 3.12.1\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
    (chat, _) = _spans(captured, "chat")
    (tool,) = [s for s in _spans(captured, "execute_tool") if s.attributes.get(Attr.TOOL_HOSTED)]
    assert tool.parent_id == chat.span_id and tool.attributes[Attr.TOOL_TYPE] == "shell"
    offered = json.loads(conversion.contents[events_of(trace, "message", channel="llm")[0]["tools_ref"]])
    assert offered[0] == {"type": "shell", "name": "shell"}  # never its environment, which holds a secret
    spans = json.dumps([dict(s.attributes) for s in captured.spans], default=str)
    assert apps.HOSTED_SHELL_SECRET not in spans and apps.HOSTED_SHELL_SECRET not in json.dumps(conversion.contents)


def _hosted(trace: dict) -> list[tuple]:
    return [(e["tool"], e["call_id"], e.get("server")) for e in events_of(trace, "tool_call") if e.get("hosted")]


@pytest.mark.parametrize("approve", [True, False], ids=["approved", "rejected"])
def test_a_hosted_mcp_approval_answered_by_on_approval_request_is_an_intervention_naming_the_request(
        captured, monkeypatch, approve):
    """The provider asked (mcpr_1) before calling delete_doc on the docs server; the tool's on_approval_request
    answered in the run: librarian received that answer, the request id approved or rejected (ids, always
    kept), the decision and the reason content. Only an approved request leads to the provider's call mcp_2."""
    apps.hosted_mcp_approval(approve)
    trace = _one_trace(captured)
    (intervention,) = events_of(trace, "human_intervention")
    assert (intervention["agent"], intervention["to"]) == ("human", "librarian")
    assert (intervention["approved"], intervention["rejected"]) == ((["mcpr_1"], []) if approve else ([], ["mcpr_1"]))
    (plain,) = captured.conversions()  # capture off: the reason, the human's words, is not kept
    assert "keep the old policy" not in json.dumps(plain.trace) + json.dumps(plain.contents)
    assert _hosted(trace) == [("mcp_list_tools", "ml_1", "docs")] + ([("delete_doc", "mcp_2", "docs")] if approve
                                                                      else [])
    captured.spans.clear()
    with recording(capture=True):
        apps.hosted_mcp_approval(approve)
    conversion = captured.conversions()[-1]
    (intervention,) = events_of(conversion.trace, "human_intervention")
    assert json.loads(conversion.contents[intervention["content_ref"]]) == (
        [{"call_id": "mcpr_1", "approved": True}] if approve
        else [{"call_id": "mcpr_1", "approved": False, "message": "keep the old policy"}])


def test_a_hosted_mcp_servers_tool_listing_is_a_hosted_call_whose_result_is_the_tools_listed(captured):
    with recording(capture=True):
        apps.hosted_mcp_approval(True)
    (conversion,) = captured.conversions()
    (listing,) = events_of(conversion.trace, "tool_result", call_id="ml_1")
    assert listing["status"] == "ok"
    assert json.loads(conversion.contents[listing["content_ref"]]) == [
        {"name": "search_docs", "input_schema": {"type": "object"}, "description": "Search."},
        {"name": "delete_doc", "input_schema": {"type": "object"}}]
    (first, _) = _spans(captured, "chat")
    (span,) = [s for s in _spans(captured, "execute_tool") if s.attributes[Attr.TOOL_CALL_ID] == "ml_1"]
    assert span.parent_id == first.span_id and span.attributes[Attr.TOOL_TYPE] == "mcp_list_tools"


def test_a_hosted_mcp_approval_left_to_the_app_is_awaited_and_the_resumed_runs_intervention_names_it(captured):
    """No on_approval_request: the run returns awaiting mcpr_1 (the interrupt names it, as it names a tool call
    awaiting approval); the app approves it and resumes, and the resumed run's intervention approves mcpr_1."""
    assert apps.hosted_mcp_approved_after_interrupt().final_output == "Deleted."
    interrupted, after = [check_trace(t) for t in captured.traces()]
    (stop,) = [e for e in interrupted["events"] if e.get("decision") == "stop"]
    assert (stop["reason"], stop["awaiting"]) == ("interrupt", ["mcpr_1"])
    (intervention,) = events_of(after, "human_intervention")
    assert (intervention["approved"], intervention["rejected"], intervention["resume_of"]) == (
        ["mcpr_1"], [], interrupted["trace_id"])
    assert _hosted(after) == [("delete_doc", "mcp_2", "docs")]


def test_an_agent_offers_its_hosted_tools_by_type_and_name_never_their_configuration(captured):
    with recording(capture=True):
        apps.hosted_tools()
    (conversion,) = captured.conversions()
    first = events_of(conversion.trace, "message", channel="llm")[0]
    offered = json.loads(conversion.contents[first["tools_ref"]])
    assert [(t.get("type"), t.get("name") or t["function"]["name"]) for t in offered] == [
        ("web_search", "web_search"), ("file_search", "file_search"), ("mcp", "hosted_mcp"),
        ("function", "lookup_invoice")]
    assert offered[2]["server_label"] == "docs"
    spans = json.dumps([dict(s.attributes) for s in captured.spans], default=str)
    assert apps.HOSTED_MCP_SECRET not in spans and apps.HOSTED_MCP_SECRET not in json.dumps(conversion.contents)


def test_a_hosted_calls_input_and_result_are_content_kept_only_when_captured(captured):
    apps.hosted_tools()
    with recording(capture=True):
        apps.hosted_tools()
    plain, kept = captured.conversions()
    assert "refunds" not in json.dumps(plain.contents)  # capture off: refs (hashes) only, no text
    refs = {e["call_id"]: e["content_ref"] for e in events_of(kept.trace, "tool_call")}
    assert json.loads(kept.contents[refs["mcp_1"]]) == '{"q": "refunds"}'
    assert json.loads(kept.contents[refs["fs_1"]]) == {"queries": ["refunds"]}
    (mcp_result,) = events_of(kept.trace, "tool_result", call_id="mcp_1")
    assert json.loads(kept.contents[mcp_result["content_ref"]]) == "30 days"


# -- an MCP server's tools ----------------------------------------------------------------------------


def test_an_mcp_servers_tool_is_a_tool_call_naming_the_server_and_is_offered(captured):
    with recording(capture=True):
        assert apps.mcp_server_tools().final_output == "Noted."
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    (call,) = events_of(trace, "tool_call")
    assert (call["agent"], call["tool"], call["call_id"], call["server"], call.get("hosted")) == (
        "scribe", "add_note", "n1", "notes", None)  # run by the app's process, through the server
    (result,) = events_of(trace, "tool_result")
    assert result["status"] == "ok" and "noted: buy milk" in conversion.contents[result["content_ref"]]
    first = events_of(trace, "message", channel="llm")[0]
    offered = json.loads(conversion.contents[first["tools_ref"]])
    assert [t["function"]["name"] for t in offered] == ["add_note"]
    assert offered[0]["function"]["parameters"]["properties"]["text"]["type"] == "string"


# -- local tools that are no function tools -------------------------------------------------------


def test_a_shell_command_and_a_custom_tool_are_tool_calls_with_the_models_call_ids(captured):
    with recording(capture=True):
        assert apps.local_tools().final_output == "done"
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    assert sorted((e["agent"], e["tool"], e["call_id"], e.get("hosted")) for e in events_of(trace, "tool_call")) == [
        ("operator", "shell", "s1", None), ("operator", "shout", "c1", None)]  # run by the app, not the provider
    results = {e["call_id"]: (e["status"], json.loads(conversion.contents[e["content_ref"]]))
               for e in events_of(trace, "tool_result")}
    assert results["c1"] == ("ok", "HELLO")
    assert results["s1"][0] == "ok" and "ran: echo hi" in json.dumps(results["s1"][1])
    assert {s.attributes[Attr.TOOL_CALL_ID]: s.attributes[Attr.TOOL_TYPE] for s in _spans(captured, "execute_tool")} == {
        "s1": "shell", "c1": "custom_tool"}


def test_a_structured_shell_result_is_recorded_as_the_model_got_it(captured):
    """The executor's ShellResult reaches the model as the shell_call_output item's entries (stdout, stderr and
    the exit outcome per command; the command itself and the SDK's rendered text are not sent): that is s1's
    recorded result, and the same entries are in the next model call's input."""
    with recording(capture=True):
        assert apps.structured_shell().final_output == "done"
    (conversion,) = captured.conversions()
    trace = check_trace(conversion.trace)
    got = [{"stdout": "hi\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
           {"stdout": "", "stderr": "no such file\n", "outcome": {"type": "exit", "exit_code": 1}}]
    (result,) = [e for e in events_of(trace, "tool_result") if e["call_id"] == "s1"]
    assert (result["status"], json.loads(conversion.contents[result["content_ref"]])) == ("ok", {"output": got})
    second = [e for e in events_of(trace, "message") if e["channel"] == "llm"][1]
    (item,) = [i for i in json.loads(conversion.contents[second["input_ref"]])
               if isinstance(i, dict) and i.get("type") == "shell_call_output"]
    assert (item["call_id"], item["output"]) == ("s1", got)


def test_a_shell_command_awaiting_approval_did_not_run_and_is_no_tool_call(captured):
    result = apps.local_tool_awaiting_approval()
    assert [i.raw_item.call_id for i in result.interruptions] == ["s1"]
    trace = _one_trace(captured)
    assert events_of(trace, "tool_call") == []
    assert _stops(trace) == [("ops", "interrupt", None, True)]


def test_a_computer_action_on_the_apps_computer_is_a_tool_call(captured):
    result, done = apps.computer_use()
    assert result.final_output == "clicked" and done == ["click 10,20 left"]
    trace = _one_trace(captured)
    assert [(e["agent"], e["tool"], e["call_id"]) for e in events_of(trace, "tool_call")] == [
        ("pilot", "computer", "k1")]
    assert [e["status"] for e in events_of(trace, "tool_result")] == ["ok"]
