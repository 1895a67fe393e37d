"""OpenAI Agents SDK apps for the tests: real agents, runner, tools, handoffs,
guardrails and sessions; only the model is faked, by the SDK's own
``agents.testing.ScriptedModel`` (a ``Model`` subclass answering scripted
replies; ``emit_traces=True`` makes it write the SDK's own generation spans).

Each builder returns a function that runs the app once (the apps' shapes and
call ids are what the hand-written truths in fidelity_cases_openai_agents.py
describe)."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import Any

from agents import (
    Agent,
    GuardrailFunctionOutput,
    RunConfig,
    Runner,
    SQLiteSession,
    ToolGuardrailFunctionOutput,
    function_tool,
    handoff,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.computer import Computer
from agents.run_error_handlers import RunErrorHandlerResult
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.usage import Usage

TIMEOUT = 30  # a hang fails the test instead of blocking the suite

# The SDK's default trace exporter uploads every trace to OpenAI when a key is set: these offline
# apps must upload nothing (the SDK's tracing stays on; without a key its exporter skips the upload).
os.environ.pop("OPENAI_API_KEY", None)


def usage(prompt: int, completion: int) -> Usage:
    return Usage(requests=1, input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion)


def step(*items: Any, tokens: tuple[int, int] = (10, 2)) -> dict[str, Any]:
    return {"output": list(items), "usage": usage(*tokens)}


def model(*steps: dict[str, Any], traces: bool = True) -> ScriptedModel:
    return ScriptedModel(steps, emit_traces=traces)


def run(agent: Agent, text: str = "go", **kwargs: Any) -> Any:
    return asyncio.run(asyncio.wait_for(Runner.run(agent, text, **kwargs), TIMEOUT))


def run_streamed(agent: Agent, text: str = "go", **kwargs: Any) -> Any:
    """``Runner.run_streamed``, its events consumed to the end."""

    async def consume() -> Any:
        result = Runner.run_streamed(agent, text, **kwargs)
        async for _ in result.stream_events():
            pass
        return result

    return asyncio.run(asyncio.wait_for(consume(), TIMEOUT))


# -- handoffs -------------------------------------------------------------------------------


@function_tool
def lookup_invoice(number: str) -> str:
    """Look an invoice up."""
    return f"invoice {number}: paid"


def support_agents() -> Agent:
    """triage hands off to billing (refunds is disabled); billing looks the
    invoice up and hands back to triage, which answers."""
    triage = Agent(name="triage", instructions="Route the customer.", model=model(
        step(function_call("transfer_to_billing", {}, call_id="h1"), tokens=(20, 3)),
        step(assistant_message("Your invoice is paid."), tokens=(40, 6)),
    ))
    billing = Agent(name="billing", handoff_description="invoices", tools=[lookup_invoice], model=model(
        step(function_call("lookup_invoice", {"number": "42"}, call_id="t1"), tokens=(30, 4)),
        step(function_call("transfer_to_triage", {}, call_id="h2"), tokens=(35, 3)),
    ))
    refunds = Agent(name="refunds", model=model())
    triage.handoffs = [billing, handoff(refunds, is_enabled=False)]
    billing.handoffs = [triage]
    return triage


def support(**kwargs: Any) -> Callable[[], Any]:
    return lambda: run(support_agents(), "Is invoice 42 paid?", run_config=RunConfig(workflow_name="support"), **kwargs)


def support_streamed() -> Any:
    return run_streamed(support_agents(), "Is invoice 42 paid?", run_config=RunConfig(workflow_name="support")).final_output


# -- tools ----------------------------------------------------------------------------------

_sync_started = threading.Event()


@function_tool
async def fetch_async(key: str) -> str:
    """Fetch a value (async)."""
    # Waits until the sync tool runs in its thread: both are in flight at once.
    await asyncio.get_running_loop().run_in_executor(None, _sync_started.wait, 10)
    return f"async {key}"


@function_tool
def fetch_sync(key: str) -> str:
    """Fetch a value (sync, run in a thread)."""
    _sync_started.set()
    return f"sync {key}"


@function_tool
def broken(key: str) -> str:
    """A tool that fails."""
    raise RuntimeError("backend down")


def parallel_tools() -> Any:
    _sync_started.clear()
    agent = Agent(name="researcher", tools=[fetch_async, fetch_sync, broken], model=model(
        step(function_call("fetch_async", {"key": "a"}, call_id="p1"),
             function_call("fetch_sync", {"key": "b"}, call_id="p2"),
             function_call("broken", {"key": "c"}, call_id="p3")),
        step(assistant_message("a and b; c failed")),
    ))
    return run(agent, run_config=RunConfig(workflow_name="research"))


# -- agents as tools ---------------------------------------------------------------------------


def agents_as_tools() -> Any:
    researcher = Agent(name="researcher", model=model(step(assistant_message("facts"), tokens=(7, 1))))
    writer = Agent(name="writer", model=model(step(assistant_message("prose"), tokens=(9, 1))))
    manager = Agent(name="manager", tools=[
        researcher.as_tool(tool_name="research", tool_description="Research a topic."),
        writer.as_tool(tool_name="write", tool_description="Write it up."),
    ], model=model(
        step(function_call("research", {"input": "topic"}, call_id="a1"),
             function_call("write", {"input": "topic"}, call_id="a2"), tokens=(12, 4)),
        step(assistant_message("report"), tokens=(30, 2)),
    ))
    return run(manager, run_config=RunConfig(workflow_name="report"))


def streaming_agent_tools(researcher_model: Any, manager_model: Any, seen: list[Any]) -> Agent:
    """manager calls researcher as a tool that streams (``on_stream``: the
    nested run is a ``Runner.run_streamed``); ``seen`` gets its events."""
    researcher = Agent(name="researcher", model=researcher_model)
    return Agent(name="manager", model=manager_model, tools=[
        researcher.as_tool(tool_name="research", tool_description="Research a topic.", on_stream=seen.append)])


def agent_tool_streaming(seen: list[Any]) -> Any:
    manager = streaming_agent_tools(model(step(assistant_message("facts"), tokens=(7, 1))), model(
        step(function_call("research", {"input": "topic"}, call_id="s1"), tokens=(12, 4)),
        step(assistant_message("report"), tokens=(30, 2)),
    ), seen)
    return run(manager, run_config=RunConfig(workflow_name="report"))


# -- guardrails and limits ---------------------------------------------------------------------


@input_guardrail(name="no_secrets", run_in_parallel=False)
def no_secrets(context: Any, agent: Agent, value: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info="secret found", tripwire_triggered=True)


@output_guardrail(name="polite")
def polite(context: Any, agent: Agent, output: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info="rude", tripwire_triggered="rude" in str(output))


def input_tripwire() -> Any:
    agent = Agent(name="assistant", input_guardrails=[no_secrets], model=model(step(assistant_message("never"))))
    return run(agent, "my password is hunter2", run_config=RunConfig(workflow_name="guarded"))


def nested_input_tripwire() -> Any:
    """desk asks assistant as a tool (q1); assistant's blocking input guardrail no_secrets trips before its first
    turn, so the tool fails (the model gets the SDK's error message) and desk answers."""
    assistant = Agent(name="assistant", input_guardrails=[no_secrets], model=model(step(assistant_message("never"))))
    desk = Agent(name="desk", tools=[assistant.as_tool(tool_name="ask_assistant", tool_description="Ask.")],
                 model=model(step(function_call("ask_assistant", {"input": "my password is hunter2"}, call_id="q1")),
                             step(assistant_message("The assistant could not help."))))
    return run(desk, run_config=RunConfig(workflow_name="helpdesk"))


def output_tripwire() -> Any:
    agent = Agent(name="assistant", output_guardrails=[polite], model=model(step(assistant_message("a rude reply"))))
    return run(agent, run_config=RunConfig(workflow_name="guarded"))


@function_tool
def poll(job: str) -> str:
    """Poll a job."""
    return "still running"


def _poller() -> Agent:
    return Agent(name="poller", tools=[poll], model=model(
        step(function_call("poll", {"job": "j"}, call_id="m1")),
        step(function_call("poll", {"job": "j"}, call_id="m2")),
        step(function_call("poll", {"job": "j"}, call_id="m3")),
    ))


def max_turns() -> Any:
    return run(_poller(), max_turns=2, run_config=RunConfig(workflow_name="polling"))


def max_turns_handled() -> Any:
    return run(_poller(), max_turns=2, run_config=RunConfig(workflow_name="polling"),
               error_handlers={"max_turns": lambda data: RunErrorHandlerResult(final_output="gave up")})


# -- tool_use_behavior -------------------------------------------------------------------------


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@function_tool
def finish(answer: str) -> str:
    """Give the final answer."""
    return answer


def stop_on_first_tool() -> Any:
    agent = Agent(name="forecaster", tools=[get_weather], tool_use_behavior="stop_on_first_tool",
                  model=model(step(function_call("get_weather", {"city": "Paris"}, call_id="w1"))))
    return run(agent, run_config=RunConfig(workflow_name="weather"))


def stop_at_tools() -> Any:
    agent = Agent(name="forecaster", tools=[get_weather, finish],
                  tool_use_behavior={"stop_at_tool_names": ["finish"]}, model=model(
                      step(function_call("get_weather", {"city": "Rome"}, call_id="w1")),
                      step(function_call("finish", {"answer": "sunny"}, call_id="f1")),
                  ))
    return run(agent, run_config=RunConfig(workflow_name="weather"))


# -- sessions ----------------------------------------------------------------------------------


def two_runs_in_one_session(streamed_second: bool = False) -> tuple[Any, Any]:
    session = SQLiteSession("conv-7")
    agent = Agent(name="assistant", model=model(step(assistant_message("Hello Ada.")),
                                                step(assistant_message("You are Ada."))))
    first = run(agent, "I am Ada.", session=session)
    if not streamed_second:
        return first.final_output, run(agent, "Who am I?", session=session).final_output

    async def consume() -> Any:
        result = Runner.run_streamed(agent, "Who am I?", session=session)
        async for _ in result.stream_events():
            pass
        return result.final_output

    return first.final_output, asyncio.run(asyncio.wait_for(consume(), TIMEOUT))


def handoffs_in_one_session() -> tuple[Any, Any]:
    """Two runs of triage -> billing in one session ("conv-8"), each starting
    at triage: run 1, "Is invoice 42 paid?": triage hands off (h1), billing
    looks the invoice up (t1) and answers "Invoice 42 is paid."; run 2, "And
    invoice 43?": triage hands off again (h2), billing answers "Invoice 43
    is open.". Every model call of run 2 reads run 1's items first."""
    billing = Agent(name="billing", handoff_description="invoices", tools=[lookup_invoice], model=model(
        step(function_call("lookup_invoice", {"number": "42"}, call_id="t1")),
        step(assistant_message("Invoice 42 is paid.")),
        step(assistant_message("Invoice 43 is open.")),
    ))
    triage = Agent(name="triage", instructions="Route the customer.", handoffs=[billing], model=model(
        step(function_call("transfer_to_billing", {}, call_id="h1")),
        step(function_call("transfer_to_billing", {}, call_id="h2")),
    ))
    session, config = SQLiteSession("conv-8"), RunConfig(workflow_name="support")
    first = run(triage, "Is invoice 42 paid?", session=session, run_config=config)
    second = run(triage, "And invoice 43?", session=session, run_config=config)
    return first.final_output, second.final_output


def answered_directly_in_the_second_run() -> tuple[Any, Any]:
    """Two runs in one session ("conv-10"): run 1, "Is invoice 42 paid?":
    triage hands off (h1), billing answers "Invoice 42 is paid."; run 2,
    "Thanks!": triage answers "You are welcome." itself (no handoff), so
    triage is the only agent with model calls in run 2."""
    billing = Agent(name="billing", handoff_description="invoices", model=model(
        step(assistant_message("Invoice 42 is paid."))))
    triage = Agent(name="triage", instructions="Route the customer.", handoffs=[billing], model=model(
        step(function_call("transfer_to_billing", {}, call_id="h1")),
        step(assistant_message("You are welcome.")),
    ))
    session, config = SQLiteSession("conv-10"), RunConfig(workflow_name="support")
    first = run(triage, "Is invoice 42 paid?", session=session, run_config=config)
    second = run(triage, "Thanks!", session=session, run_config=config)
    return first.final_output, second.final_output


# -- handoff input filters, runs inside guardrails, sync and cut-short runs --------------------


def filtered_handoff() -> Any:
    """triage looks the invoice up, then hands off to billing through
    ``remove_all_tools``: billing's model never sees the lookup nor the handoff."""
    from agents.extensions.handoff_filters import remove_all_tools

    billing = Agent(name="billing", model=model(step(assistant_message("Refund sent."))))
    triage = Agent(name="triage", tools=[lookup_invoice], model=model(
        step(function_call("lookup_invoice", {"number": "7"}, call_id="t1")),
        step(function_call("transfer_to_billing", {}, call_id="h1")),
    ), handoffs=[handoff(billing, input_filter=remove_all_tools)])
    return run(triage, "Refund invoice 7.", run_config=RunConfig(workflow_name="refunds"))


def checked_by_an_agent() -> Any:
    """An input guardrail that asks another agent (the SDK docs' pattern): the
    checker's run is a sub-agent of the guarded run."""
    checker = Agent(name="checker", model=model(step(assistant_message("fine"))))

    @input_guardrail(name="ask_checker", run_in_parallel=False)
    async def ask_checker(context: Any, agent: Agent, value: Any) -> GuardrailFunctionOutput:
        verdict = await Runner.run(checker, value)
        return GuardrailFunctionOutput(output_info=verdict.final_output, tripwire_triggered=False)

    agent = Agent(name="assistant", input_guardrails=[ask_checker], model=model(step(assistant_message("hi"))))
    return run(agent, "hello", run_config=RunConfig(workflow_name="checked"))


def support_sync() -> Any:
    return Runner.run_sync(support_agents(), "Is invoice 42 paid?", run_config=RunConfig(workflow_name="support"))


def support_streamed_cut_short() -> Any:
    """The consumer cancels the streamed run after its first event."""

    async def consume() -> None:
        result = Runner.run_streamed(support_agents(), "Is invoice 42 paid?",
                                     run_config=RunConfig(workflow_name="support"))
        async for _ in result.stream_events():
            result.cancel()
        task = result.run_loop_task
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(asyncio.wait_for(consume(), TIMEOUT))


def router_agents(sales_reply: str = "sales here", support_reply: str = "support here") -> Agent:
    """router may hand off to sales or support (both enabled); it picks sales (r1)."""
    sales = Agent(name="sales", model=model(step(assistant_message(sales_reply))))
    helpdesk = Agent(name="support", model=model(step(assistant_message(support_reply))))
    return Agent(name="router", instructions="Pick a desk.", handoffs=[sales, helpdesk],
                 model=model(step(function_call("transfer_to_sales", {}, call_id="r1"))))


def routed() -> Any:
    return run(router_agents(), "I want to buy", run_config=RunConfig(workflow_name="desk"))


def routed_streamed() -> Any:
    return run_streamed(router_agents(), "I want to buy", run_config=RunConfig(workflow_name="desk")).final_output


# -- human in the loop ---------------------------------------------------------------------------


@function_tool(needs_approval=True)
def refund(amount: int) -> str:
    """Refund an amount (a human approves it first)."""
    return f"refunded {amount}"


def approval_agent() -> Agent:
    return Agent(name="cashier", tools=[refund], model=model(
        step(function_call("refund", {"amount": 5}, call_id="a1")),
        step(assistant_message("Refunded 5.")),
    ))


def approved_after_interrupt() -> tuple[Any, Any]:
    """The run stops for approval of refund (a1); a human approves; the run resumes from its state."""
    agent = approval_agent()
    first = run(agent, "Refund 5.", run_config=RunConfig(workflow_name="refunds"))
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item)
    second = asyncio.run(asyncio.wait_for(Runner.run(agent, state, run_config=RunConfig(workflow_name="refunds")),
                                          TIMEOUT))
    return first, second


def refund_desk() -> Agent:
    """The cashier asks to refund 5 (a1) and 500 (a2) in one reply, both awaiting approval."""
    return Agent(name="cashier", tools=[refund], model=model(
        step(function_call("refund", {"amount": 5}, call_id="a1"),
             function_call("refund", {"amount": 500}, call_id="a2")),
        step(assistant_message("Refunded 5; 500 was refused.")),
    ))


def decided_after_interrupt(rejection_message: str | None = None) -> tuple[Agent, Any, Any]:
    """A human approves a1 and rejects a2 (with ``rejection_message``, if given); the run resumes."""
    agent = refund_desk()
    first = run(agent, "Refund 5 and 500.", run_config=RunConfig(workflow_name="refunds"))
    state = first.to_state()
    for item in first.interruptions:
        if item.raw_item.call_id == "a1":
            state.approve(item)
        else:
            state.reject(item, rejection_message=rejection_message)
    second = asyncio.run(asyncio.wait_for(Runner.run(agent, state, run_config=RunConfig(workflow_name="refunds")),
                                          TIMEOUT))
    return agent, first, second


# -- tool guardrails ------------------------------------------------------------------------------

tool_bodies_run: list[str] = []  # which guarded tools' bodies ran (a rejected call's never does)


@tool_input_guardrail(name="no_system_paths")
def no_system_paths(data: Any) -> ToolGuardrailFunctionOutput:
    if "/etc" in (data.context.tool_arguments or ""):
        return ToolGuardrailFunctionOutput.reject_content("refused: system path")
    return ToolGuardrailFunctionOutput.allow()


@tool_output_guardrail(name="redact_secrets")
def redact_secrets(data: Any) -> ToolGuardrailFunctionOutput:
    if "password" in str(data.output):
        return ToolGuardrailFunctionOutput.reject_content("withheld: it held a secret")
    return ToolGuardrailFunctionOutput.allow()


@tool_input_guardrail(name="no_deletes")
def no_deletes(data: Any) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.raise_exception(output_info="deletes are off")


@tool_output_guardrail(name="no_leaks")
def no_leaks(data: Any) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.raise_exception(output_info="leak")


@function_tool(tool_input_guardrails=[no_system_paths])
def delete_file(path: str) -> str:
    """Delete a file."""
    tool_bodies_run.append(f"delete_file {path}")
    return f"deleted {path}"


@function_tool(tool_output_guardrails=[redact_secrets])
def read_file(path: str) -> str:
    """Read a file."""
    tool_bodies_run.append(f"read_file {path}")
    return "user=ada password=hunter2"


@function_tool(tool_input_guardrails=[no_deletes])
def wipe(path: str) -> str:
    """Wipe a disk."""
    tool_bodies_run.append(f"wipe {path}")
    return "wiped"


@function_tool(tool_output_guardrails=[no_leaks])
def dump(path: str) -> str:
    """Dump a file."""
    tool_bodies_run.append(f"dump {path}")
    return "secrets"


def guarded_tools(streamed: bool = False) -> Any:
    """clerk asks for delete_file /etc/passwd (g1: no_system_paths rejects it,
    the body never runs) and read_file notes (g2: it runs, redact_secrets
    replaces its result), then answers."""
    tool_bodies_run.clear()
    agent = Agent(name="clerk", tools=[delete_file, read_file], model=model(
        step(function_call("delete_file", {"path": "/etc/passwd"}, call_id="g1"),
             function_call("read_file", {"path": "notes"}, call_id="g2")),
        step(assistant_message("could not do either")),
    ))
    return (run_streamed if streamed else run)(agent, run_config=RunConfig(workflow_name="files"))


def tool_input_tripwire() -> Any:
    tool_bodies_run.clear()
    agent = Agent(name="clerk", tools=[wipe], model=model(
        step(function_call("wipe", {"path": "/"}, call_id="x1")), step(assistant_message("never"))))
    return run(agent, run_config=RunConfig(workflow_name="files"))


def tool_output_tripwire() -> Any:
    tool_bodies_run.clear()
    agent = Agent(name="clerk", tools=[dump], model=model(
        step(function_call("dump", {"path": "vault"}, call_id="x2")), step(assistant_message("never"))))
    return run(agent, run_config=RunConfig(workflow_name="files"))


# -- hosted tools and MCP servers ---------------------------------------------------------------


def hosted_calls() -> list[Any]:
    """A reply's provider-side tool calls, as the Responses API returns them."""
    from openai.types.responses import ResponseFileSearchToolCall, ResponseFunctionWebSearch
    from openai.types.responses.response_function_web_search import ActionSearch
    from openai.types.responses.response_output_item import McpCall

    return [
        ResponseFunctionWebSearch(id="ws_1", type="web_search_call", status="completed",
                                  action=ActionSearch(type="search", query="refund policy")),
        ResponseFileSearchToolCall(id="fs_1", type="file_search_call", status="completed", queries=["refunds"]),
        McpCall(id="mcp_1", type="mcp_call", server_label="docs", name="search_docs",
                arguments='{"q": "refunds"}', output="30 days"),
    ]


HOSTED_MCP_SECRET = "Bearer not-for-traces"


def failed_web_search() -> Any:
    """The provider's web search ws_9 failed; the model answered anyway."""
    from agents import WebSearchTool
    from openai.types.responses import ResponseFunctionWebSearch
    from openai.types.responses.response_function_web_search import ActionSearch

    search = ResponseFunctionWebSearch(id="ws_9", type="web_search_call", status="failed",
                                       action=ActionSearch(type="search", query="weather"))
    agent = Agent(name="researcher", tools=[WebSearchTool()], model=model(
        step(search, assistant_message("I could not search."))))
    return run(agent, run_config=RunConfig(workflow_name="research"))


def hosted_tools() -> Any:
    """researcher offers web search, file search, a hosted MCP server (whose
    config carries a credential) and lookup_invoice; its first reply holds
    three hosted calls (ws_1, fs_1, mcp_1, run by the provider) and a
    function call (t1); then it answers."""
    from agents import FileSearchTool, HostedMCPTool, WebSearchTool

    docs = HostedMCPTool(tool_config={"type": "mcp", "server_label": "docs", "server_url": "https://docs.invalid/mcp",
                                      "headers": {"Authorization": HOSTED_MCP_SECRET}, "require_approval": "never"})
    agent = Agent(name="researcher", tools=[WebSearchTool(), FileSearchTool(vector_store_ids=["vs_1"]), docs,
                                            lookup_invoice], model=model(
        step(*hosted_calls(), function_call("lookup_invoice", {"number": "42"}, call_id="t1")),
        step(assistant_message("Refunds within 30 days; invoice 42 is paid.")),
    ))
    return run(agent, "What is the refund policy?", run_config=RunConfig(workflow_name="research"))


def web_search(item_id: str) -> Any:
    """A reply's completed provider-side web search, as the Responses API returns it."""
    from openai.types.responses import ResponseFunctionWebSearch
    from openai.types.responses.response_function_web_search import ActionSearch

    return ResponseFunctionWebSearch(id=item_id, type="web_search_call", status="completed",
                                     action=ActionSearch(type="search", query="refund policy"))


def search_between_calls() -> Any:
    """researcher calls lookup_invoice (t1); its next reply is only the provider's web search ws_2, no text
    and no function call, so the SDK calls the model again, and it answers."""
    from agents import WebSearchTool

    search = web_search("ws_2")
    agent = Agent(name="researcher", tools=[WebSearchTool(), lookup_invoice], model=model(
        step(function_call("lookup_invoice", {"number": "42"}, call_id="t1")),
        step(search),
        step(assistant_message("Refunds within 30 days; invoice 42 is paid.")),
    ))
    return run(agent, "Is invoice 42 refundable?", run_config=RunConfig(workflow_name="research"))


def handoff_to_a_searcher() -> Any:
    """triage hands off (h1) to researcher, whose first reply is only the provider's web search ws_3; the SDK
    calls researcher's model again, and it answers."""
    from agents import WebSearchTool

    search = web_search("ws_3")
    researcher = Agent(name="researcher", tools=[WebSearchTool()], model=model(
        step(search), step(assistant_message("Refunds within 30 days."))))
    triage = Agent(name="triage", handoffs=[researcher], model=model(
        step(function_call("transfer_to_researcher", {}, call_id="h1"))))
    return run(triage, "What is the refund policy?", run_config=RunConfig(workflow_name="research"))


def reasoning_last() -> Any:
    """researcher calls lookup_invoice (t1); its next reply is only a reasoning item (rs_2): the SDK ends the
    run with that reply, its final output empty."""
    from openai.types.responses import ResponseReasoningItem

    agent = Agent(name="researcher", tools=[lookup_invoice], model=model(
        step(function_call("lookup_invoice", {"number": "42"}, call_id="t1")),
        step(ResponseReasoningItem(id="rs_2", type="reasoning", summary=[])),
    ))
    return run(agent, "Is invoice 42 refundable?", run_config=RunConfig(workflow_name="research"))


def hosted_mcp_listing_and_request() -> list[Any]:
    """The provider's first reply for a hosted MCP server (label "docs") that asks before calls: the server's tool
    listing (ml_1: search_docs, delete_doc) and its request (mcpr_1) to call delete_doc."""
    from openai.types.responses.response_output_item import McpApprovalRequest, McpListTools, McpListToolsTool

    return [McpListTools(id="ml_1", type="mcp_list_tools", server_label="docs", tools=[
                McpListToolsTool(name="search_docs", input_schema={"type": "object"}, description="Search."),
                McpListToolsTool(name="delete_doc", input_schema={"type": "object"})]),
            McpApprovalRequest(id="mcpr_1", type="mcp_approval_request", server_label="docs", name="delete_doc",
                               arguments='{"doc": "old-policy"}')]


def hosted_mcp_agent(approve: bool | None, script: bool = True) -> Agent:
    """librarian's hosted MCP server asks before delete_doc: the app's ``on_approval_request`` approves or
    rejects it (with a reason); ``None``: no callback, so the run returns awaiting the app's decision. Once
    approved the provider calls it (mcp_2) and the model answers."""
    from agents import HostedMCPTool
    from openai.types.responses.response_output_item import McpCall

    def decide(request: Any) -> Any:
        return {"approve": True} if approve else {"approve": False, "reason": "keep the old policy"}

    config = {"type": "mcp", "server_label": "docs", "server_url": "https://docs.invalid/mcp",
              "require_approval": "always"}
    follow = (step(McpCall(id="mcp_2", type="mcp_call", server_label="docs", name="delete_doc",
                           arguments='{"doc": "old-policy"}', output="deleted"), assistant_message("Deleted."))
              if approve is not False else step(assistant_message("Not deleted.")))
    steps = (step(*hosted_mcp_listing_and_request()), follow) if script else ()
    return Agent(name="librarian", tools=[HostedMCPTool(tool_config=config, on_approval_request=decide
                                                        if approve is not None else None)], model=model(*steps))


def hosted_mcp_approval(approve: bool | None) -> tuple[Agent, Any]:
    agent = hosted_mcp_agent(approve)
    return agent, run(agent, "Delete the old policy.", run_config=RunConfig(workflow_name="library"))


def hosted_mcp_approved_after_interrupt() -> Any:
    """No callback: the run returns awaiting mcpr_1; the app approves it and resumes the run."""
    agent, first = hosted_mcp_approval(None)
    state = first.to_state()
    state.approve(first.interruptions[0])
    return asyncio.run(asyncio.wait_for(Runner.run(agent, state, run_config=RunConfig(workflow_name="library")),
                                        TIMEOUT))


MCP_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp_notes_server.py")


def mcp_server_tools() -> Any:
    """scribe gets add_note from a real MCP server (tests/mcp_notes_server.py,
    over stdio), calls it (n1), then answers."""
    import sys

    from agents.mcp import MCPServerStdio

    async def main() -> Any:
        async with MCPServerStdio(params={"command": sys.executable, "args": [MCP_SERVER]}, name="notes",
                                  client_session_timeout_seconds=TIMEOUT) as server:
            agent = Agent(name="scribe", mcp_servers=[server], model=model(
                step(function_call("add_note", {"text": "buy milk"}, call_id="n1")),
                step(assistant_message("Noted.")),
            ))
            return await Runner.run(agent, "Remember milk.", run_config=RunConfig(workflow_name="notes"))

    return asyncio.run(asyncio.wait_for(main(), TIMEOUT))


# -- local tools that are no function tools -------------------------------------------------------


def _run_shell(request: Any) -> str:
    return "ran: " + " ".join(request.data.action.commands)


async def _shout(context: Any, text: str) -> str:
    return text.upper()


SHELL_CALL = {"type": "shell_call", "id": "sh_1", "call_id": "s1", "status": "completed",
              "action": {"commands": ["echo hi"]}}


def operator() -> Agent:
    """operator runs a local shell command (s1, ShellTool with a local
    executor) and a custom tool with raw text input (c1), then answers."""
    from agents import CustomTool, ShellTool
    from openai.types.responses import ResponseCustomToolCall

    return Agent(name="operator", tools=[ShellTool(executor=_run_shell), CustomTool(
        name="shout", description="Shout a text.", on_invoke_tool=_shout)], model=model(
        step(SHELL_CALL, ResponseCustomToolCall(type="custom_tool_call", call_id="c1", name="shout", input="hello")),
        step(assistant_message("done")),
    ))


def local_tools() -> Any:
    return run(operator(), run_config=RunConfig(workflow_name="ops"))


def _structured_shell(request: Any) -> Any:
    from agents.tool import ShellCallOutcome, ShellCommandOutput, ShellResult

    return ShellResult(output=[
        ShellCommandOutput(stdout="hi\n", command="echo hi", outcome=ShellCallOutcome(type="exit", exit_code=0)),
        ShellCommandOutput(stderr="no such file\n", command="cat x", outcome=ShellCallOutcome(type="exit", exit_code=1))])


def structured_shell() -> Any:
    """operator again, its shell executor returning a structured ShellResult: ``echo hi`` printed hi, ``cat x``
    failed (exit code 1) with an error on stderr."""
    from agents import ShellTool

    agent = operator()
    agent.tools[0] = ShellTool(executor=_structured_shell)
    return run(agent, run_config=RunConfig(workflow_name="ops"))


HOSTED_SHELL_CALL = {"type": "shell_call", "id": "sh_9", "call_id": "hs1", "status": "completed",
                     "action": {"commands": ["python --version"]},
                     "environment": {"type": "container_reference", "container_id": "cntr_1"}}
HOSTED_SHELL_OUTPUT = {"type": "shell_call_output", "id": "sho_9", "call_id": "hs1", "status": "completed",
                       "created_by": "cntr_1",
                       "output": [{"stdout": "Python 3.12.1\n", "stderr": "", "created_by": "cntr_1",
                                   "outcome": {"type": "exit", "exit_code": 0}}]}


HOSTED_SHELL_SECRET = "pypi-not-for-traces"


def hosted_shell_agent(script: bool = True) -> Agent:
    """analyst's ShellTool runs in a container the provider hosts (its network policy holds a secret): its first
    reply holds the shell call hs1, the provider's output for it, and a function call t1 (lookup_invoice, which
    the app runs); then it answers. The app runs no command."""
    from agents import ShellTool

    environment = {"type": "container_auto", "network_policy": {
        "type": "allowlist", "allowed_domains": ["pypi.org"],
        "domain_secrets": [{"domain": "pypi.org", "name": "TOKEN", "value": HOSTED_SHELL_SECRET}]}}
    steps = (step(HOSTED_SHELL_CALL, HOSTED_SHELL_OUTPUT, function_call("lookup_invoice", {"number": "42"},
                                                                        call_id="t1")),
             step(assistant_message("Python 3.12.1 is installed; invoice 42 is paid."))) if script else ()
    return Agent(name="analyst", tools=[ShellTool(environment=environment), lookup_invoice], model=model(*steps))


def hosted_shell() -> Any:
    return run(hosted_shell_agent(), "Which Python is installed, and is invoice 42 paid?",
               run_config=RunConfig(workflow_name="analysis"))


def local_tool_awaiting_approval() -> Any:
    """operator's shell command s1 needs a human's approval: the run stops before it runs."""
    from agents import ShellTool

    agent = Agent(name="operator", tools=[ShellTool(executor=_run_shell, needs_approval=True)], model=model(
        step(SHELL_CALL), step(assistant_message("done"))))
    return run(agent, run_config=RunConfig(workflow_name="ops"))


class Screen(Computer):
    """The app's computer for ComputerTool: a screen that notes what it was asked to do."""

    def __init__(self) -> None:
        self.done: list[str] = []

    def screenshot(self) -> str:
        return "iVBORw0KGgo="  # a PNG's first bytes: the SDK wraps them in a data URL

    def click(self, x: int, y: int, button: str) -> None:
        self.done.append(f"click {x},{y} {button}")

    def double_click(self, x: int, y: int) -> None:
        self.done.append(f"double_click {x},{y}")

    def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None:
        self.done.append("scroll")

    def type(self, text: str) -> None:
        self.done.append(f"type {text}")

    def wait(self) -> None:
        self.done.append("wait")

    def move(self, x: int, y: int) -> None:
        self.done.append("move")

    def keypress(self, keys: list[str]) -> None:
        self.done.append("keypress")

    def drag(self, path: list[tuple[int, int]]) -> None:
        self.done.append("drag")


def computer_use() -> tuple[Any, list[str]]:
    """pilot clicks at (10, 20) on the app's computer (k1), then answers."""
    from agents import ComputerTool
    from openai.types.responses import ResponseComputerToolCall
    from openai.types.responses.response_computer_tool_call import ActionClick

    screen = Screen()
    click = ResponseComputerToolCall(id="cu_1", call_id="k1", type="computer_call", status="completed",
                                     pending_safety_checks=[], action=ActionClick(type="click", x=10, y=20,
                                                                                  button="left"))
    agent = Agent(name="pilot", tools=[ComputerTool(computer=screen)], model=model(
        step(click), step(assistant_message("clicked"))))
    return run(agent, run_config=RunConfig(workflow_name="desktop")), screen.done


class Notebook:
    """The app's apply_patch editor: writes each created or updated file's added lines into ``folder``."""

    def __init__(self, folder: Any) -> None:
        self.folder = folder

    def create_file(self, operation: Any) -> Any:
        from agents.editor import ApplyPatchResult

        text = "".join(line[1:] + "\n" for line in (operation.diff or "").splitlines() if line.startswith("+"))
        (self.folder / operation.path).write_text(text)
        return ApplyPatchResult(output=f"wrote {operation.path}")

    update_file = create_file

    def delete_file(self, operation: Any) -> Any:
        (self.folder / operation.path).unlink()
        return f"deleted {operation.path}"


def patching(editor: Any, streamed: bool = False) -> Any:
    """writer creates notes.txt through the app's editor (a1), then answers."""
    from agents import ApplyPatchTool
    from openai.types.responses import ResponseApplyPatchToolCall

    patch = ResponseApplyPatchToolCall(type="apply_patch_call", id="ap_1", call_id="a1", status="completed", operation={
        "type": "create_file", "path": "notes.txt", "diff": "+hello\n+world"})
    agent = Agent(name="writer", tools=[ApplyPatchTool(editor=editor)], model=model(
        step(patch), step(assistant_message("written"))))
    return (run_streamed if streamed else run)(agent, run_config=RunConfig(workflow_name="notes"))


def local_shell(executor: Callable[[Any], Any], script: bool = True) -> Agent:
    """terminal runs ``ls /tmp`` through the app's LocalShellTool (l1), then answers."""
    from agents import LocalShellTool
    from openai.types.responses.response_output_item import LocalShellCall

    command = LocalShellCall(type="local_shell_call", id="ls_1", call_id="l1", status="completed",
                             action={"type": "exec", "command": ["ls", "/tmp"], "env": {}})
    steps = (step(command), step(assistant_message("listed"))) if script else ()
    return Agent(name="terminal", tools=[LocalShellTool(executor=executor)], model=model(*steps))
