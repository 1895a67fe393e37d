"""View-level fidelity: LangGraph, AutoGen, Agent Framework and OpenAI Agents SDK apps recorded with content
capture on, every dataset view built from the trace, and each view checked
against the app's truth written by hand (tests/fidelity_views.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from fidelity import Delegation, Stop, Truth
from fidelity_views import VIEWS, view_errors
from fixtures.dataset_runs import record, record_instrumented, standard_runs

from orch_otel.datasets import Config, build


def _views(tmp_path, instrumentor, run) -> dict[str, list[dict]]:
    (trace,) = record_instrumented(tmp_path / "traces", instrumentor, run)
    out = {}
    for view in VIEWS:
        # triplets are token ids: no ids were captured here, so a tokenizer made in the test makes them
        tokenizer = _tokenizer(tmp_path / "tokenizer") if view == "triplets" else None
        summary = build([tmp_path / "traces"], tmp_path / view, Config(view=view, tokenizer=tokenizer))
        assert summary.traces_used == 1 and summary.traces_skipped == 0
        out[view] = [json.loads(line) for line in (tmp_path / view / f"{view}.jsonl").read_text().splitlines()]
    return out


def _tokenizer(directory) -> str:
    pytest.importorskip("transformers", reason="needs the optional extra: pip install 'orch-otel[tokenize]'")
    from tokenizer_support import build_tokenizer

    return str(build_tokenizer(directory))


def _langgraph():
    from orch_otel.integrations.langgraph import LangGraphInstrumentor

    return LangGraphInstrumentor()


def _autogen():
    pytest.importorskip("autogen_agentchat", reason="needs the optional extra: pip install 'orch-otel[autogen]'")
    from orch_otel.integrations.autogen import AutoGenInstrumentor

    return AutoGenInstrumentor()


def _run_team(build_team):
    return lambda: asyncio.run(asyncio.wait_for(build_team().run(task="go"), 20))


# -- truths written by hand from each app's code ----------------------------------------------

DEMO = Truth(  # orch_otel.integrations.langgraph.demo: the supervisor hands off to the team, then the writer
    app="langgraph demo: supervisor -> research_team (3 workers search) -> supervisor -> writer -> supervisor",
    instances={"supervisor": 3, "research_team": 1, "worker": 3, "writer": 1},
    delegations=(
        Delegation("supervisor", "research_team", frozenset({"research_team", "writer"})),
        Delegation("supervisor", "writer", frozenset({"research_team", "writer"})),
    ),
    tool_calls=(
        ("supervisor", "transfer_to_research_team", "call_to_team"),
        ("worker", "search", "call_search"), ("worker", "search", "call_search"), ("worker", "search", "call_search"),
        ("supervisor", "transfer_to_writer", "call_to_writer"),
        ("writer", "format_report", "call_format"),
    ),
    stop=Stop("supervisor", reason="end"),  # its last turn answers with no handoff: the supervisor ends the run
)

FANOUT = Truth(  # langgraph_apps.build_fanout(3): three workers each run lookup as call_w
    app="langgraph Send fan-out: prepare -> 3 x worker (lookup) -> merge",
    instances={"worker": 3},
    tool_calls=(("worker", "lookup", "call_w"),) * 3,
    stop=Stop("fanout", reason="end"),
)

ROUND_ROBIN = Truth(  # autogen testing.weather_round_robin: a calls get_weather, b says TERMINATE
    app="autogen round robin: a (get_weather) -> b TERMINATE",
    instances={"a": 1, "b": 1},
    # round robin leaves no choice: each turn's one candidate is the next in order
    delegations=(Delegation("weather_team", "a", frozenset("a")), Delegation("weather_team", "b", frozenset("b"))),
    tool_calls=(("a", "get_weather", "call_1"),),
    stop=Stop("b", reason="TERMINATE"),  # b's own message fired the mention condition
)

SELECTOR = Truth(  # autogen_apps.selector_team: planner, then coder (planner no longer a candidate)
    app="autogen selector: planner -> coder TERMINATE",
    instances={"planner": 1, "coder": 1},
    delegations=(
        Delegation("SelectorGroupChat", "planner", frozenset({"planner", "coder", "reviewer"})),
        Delegation("SelectorGroupChat", "coder", frozenset({"coder", "reviewer"})),
    ),
    stop=Stop("coder", reason="TERMINATE"),  # the coder's message fired the mention condition
)

SWARM = Truth(  # autogen_apps.swarm_team: alice looks up and hands off to bob, bob hands off to the user
    app="autogen swarm: alice (lookup, transfer_to_bob) -> bob (transfer_to_user)",
    instances={"alice": 1, "bob": 1},
    delegations=(
        Delegation("Swarm", "alice", frozenset({"alice"})),  # the first participant starts
        Delegation("alice", "bob", frozenset({"bob"})),
        Delegation("Swarm", "bob", frozenset({"bob"})),  # the swarm follows the handoff
        Delegation("bob", "user", frozenset({"user"})),
    ),
    tool_calls=(("alice", "lookup", "t1"), ("alice", "transfer_to_bob", "h1"), ("bob", "transfer_to_user", "h2")),
    stop=Stop("bob", reason="user"),  # bob's handoff to the user fired the handoff condition
)


def test_langgraph_supervisor_views_are_faithful(tmp_path):
    pytest.importorskip("langgraph_supervisor", reason="the supervisor app needs langgraph-supervisor (orch-otel[dev])")
    from fidelity_cases_langgraph import CASES

    case = next(c for c in CASES if c.truth.app.startswith("langgraph-supervisor"))
    views = _views(tmp_path, _langgraph(), case.run)
    assert view_errors(views, case.truth) == []
    supervisor = [r for r in views["chat"] if r["agent"] == "supervisor"]
    assert len(supervisor) == 3
    # the workers' answers are input the supervisor read, in their names, never its own turns
    last = supervisor[-1]["messages"]
    # (the speaker also starts the text: templates such as Qwen's drop name)
    assert {"role": "user", "content": "math_expert: 1 + 2 = 3", "name": "math_expert"} in last
    assert [m["content"] for m in last if m.get("trainable")] == ["all done"]


def _docs_shape_id(case) -> str:
    return case.truth.app


@pytest.mark.parametrize("case", __import__("fidelity_cases_langgraph").DOCS_SHAPES, ids=_docs_shape_id)
def test_langgraph_docs_shapes_views_are_faithful(tmp_path, case):
    """Issue 32's shapes (tool loop, agents as tools, Functional API, a planner's
    fan-out, a single agent, supervisors whose models bind tools their own way):
    every view against the app's truth."""
    views = _views(tmp_path, _langgraph(), case.run)
    assert view_errors(views, case.truth) == []


def test_langgraph_demo_views_are_faithful(tmp_path):
    from orch_otel.integrations.langgraph.demo import run_demo_app

    views = _views(tmp_path, _langgraph(), lambda: asyncio.run(run_demo_app()))
    assert view_errors(views, DEMO) == []
    # the issue's case: the supervisor's rows held the workers' search calls and the writer's format_report
    for row in (r for r in views["chat"] if r["agent"] == "supervisor"):
        calls = {c["function"]["name"] for m in row["messages"] for c in m.get("tool_calls") or ()}
        assert calls <= {"transfer_to_research_team", "transfer_to_writer"}, calls


def test_langgraph_send_fanout_views_are_faithful(tmp_path):
    import langgraph_apps as apps

    views = _views(tmp_path, _langgraph(), lambda: apps.build_fanout(3).invoke({}))
    assert view_errors(views, FANOUT) == []


def test_autogen_round_robin_with_a_tool_views_are_faithful(tmp_path):
    instrumentor = _autogen()
    import autogen_apps as apps

    views = _views(tmp_path, instrumentor, _run_team(apps.weather_round_robin))
    assert view_errors(views, ROUND_ROBIN) == []
    (first, second) = [t for t in views["turns"] if t["agent"] == "a"]
    assert first["output_tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    assert second["input_messages"][-2:] == [
        {"role": "assistant", "content": "", "tool_calls": first["output_tool_calls"]},
        {"role": "tool", "content": "sunny in Paris", "tool_call_id": "call_1"},
    ]
    a = next(r for r in views["chat"] if r["agent"] == "a")
    assert [(m["role"], m.get("trainable")) for m in a["messages"]] == [
        ("system", None), ("user", None), ("assistant", True), ("tool", None), ("assistant", True)]


def test_autogen_selector_views_are_faithful(tmp_path):
    instrumentor = _autogen()
    import autogen_apps as apps

    views = _views(tmp_path, instrumentor, _run_team(apps.selector_team))
    assert view_errors(views, SELECTOR) == []
    coder = next(r for r in views["chat"] if r["agent"] == "coder")
    assert {"role": "user", "content": "planner: Plan: write code", "name": "planner"} in coder["messages"]
    assert [m["content"] for m in coder["messages"] if m["role"] == "assistant"] == ["print(1) TERMINATE"]


def test_autogen_swarm_views_are_faithful(tmp_path):
    instrumentor = _autogen()
    import autogen_apps as apps

    views = _views(tmp_path, instrumentor, _run_team(apps.swarm_team))
    assert view_errors(views, SWARM) == []
    # bob's model read alice's lookup (the handoff's context) as her input, not as his own call
    bob = next(r for r in views["chat"] if r["agent"] == "bob")
    assert [m for m in bob["messages"] if m.get("name") == "alice"][0]["content"] == 'alice: [tool call lookup] {"q": "x"}'
    assert [c["function"]["name"] for m in bob["messages"] for c in m.get("tool_calls") or ()] == ["transfer_to_user"]


def test_view_errors_catch_another_agents_turns_in_a_row():
    """The checker itself: rows as the views wrote them before the fix (another
    agent's call as an assistant turn, a tool message with no call id, an
    empty output_tool_calls) are reported."""
    truth = Truth(app="two agents", instances={}, tool_calls=(("w", "search", "c1"),))
    foreign = {"role": "assistant", "content": "", "trainable": False, "weight": 0,
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]}
    rows = {
        "chat": [
            {"agent": "s", "episode": 0, "tools": None, "messages": [
                {"role": "user", "content": "q"}, foreign, {"role": "tool", "content": "r"},
                {"role": "assistant", "content": "done", "trainable": True, "weight": 1}]},
            {"agent": "w", "episode": 0, "tools": None, "messages": [
                {"role": "user", "content": "q"}, {"role": "assistant", "content": "", "trainable": True}]},
        ],
        "turns": [{"agent": "w", "event_id": "e1", "input_messages": [], "output_tool_calls": None,
                   "tool_calls": [{"tool": "search", "call_id": "c1"}]}],
    }
    errors = view_errors(rows, truth)
    assert any("s never called search (c1)" in e for e in errors)
    assert any("tool message answers None" in e for e in errors)
    assert any("chat: trainable tool calls per agent" in e for e in errors)
    assert any("turns: output_tool_calls per agent" in e for e in errors)
    assert any("views not given" in e for e in errors)


def test_decisions_mark_forced_stops(tmp_path):
    """calc-budget stops on its round limit (max_turns: forced); calc-ok's
    planner stops on its own (end)."""
    record(tmp_path / "traces", standard_runs()[:2], capture=False)
    build([tmp_path / "traces"], tmp_path, Config(view="decisions"))
    rows = [json.loads(line) for line in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    stops = {(r["task_id"], r["action"]["reason"], r["forced"]) for r in rows if r["decision"] == "stop"}
    assert stops == {("calc-ok", "end", False), ("calc-budget", "max_turns", True)}
    assert {r["forced"] for r in rows if r["decision"] != "stop"} == {None}


def _row_trace_id(row: dict) -> str | None:
    return row.get("trace_id") or (row.get("metadata") or {}).get("trace_id")


@pytest.mark.parametrize("case", __import__("fidelity_cases_autogen").ISSUE_32, ids=lambda c: c.truth.app)
def test_autogen_shapes_views_are_faithful(case, tmp_path):
    """Each AutoGen shape of issue 32, every view of the run its truth describes
    (the resumed run of a two-run app: the rows of that trace only)."""
    instrumentor = _autogen()
    traces = record_instrumented(tmp_path / "traces", instrumentor, case.run)
    wanted = traces[case.trace]["trace_id"]
    views = {}
    for view in VIEWS:
        tokenizer = _tokenizer(tmp_path / "tokenizer") if view == "triplets" else None  # as in _views
        summary = build([tmp_path / "traces"], tmp_path / view, Config(view=view, tokenizer=tokenizer))
        assert summary.traces_used == len(traces) and summary.traces_skipped == 0
        rows = [json.loads(line) for line in (tmp_path / view / f"{view}.jsonl").read_text().splitlines()]
        assert all(_row_trace_id(r) for r in rows), f"{view} rows without a trace id"
        views[view] = [r for r in rows if _row_trace_id(r) == wanted]
    assert view_errors(views, case.truth) == []


def test_a_planners_send_fanout_is_its_decision_with_its_model_output_as_context(tmp_path):
    """Issue 32: Command(goto=[Send(...)] * 3) from a model-calling planner is the
    planner's spawn decision (not the graph's), and its row shows the model
    output that chose the split."""
    import langgraph_shapes as shapes

    views = _views(tmp_path, _langgraph(), lambda: shapes.build_planner_split().invoke({"messages": [("user", "go")]}))
    (row,) = [r for r in views["decisions"] if r["decision"] == "spawn" and not r["implied"]]
    assert (row["agent"], row["action"]["targets"]) == ("planner", ["worker", "worker", "worker"])
    outputs = [c for c in row["context"] if c["kind"] == "llm_output"]
    assert [o["content"]["content"] for o in outputs] == ["split: a, b, c"]


# -- Microsoft Agent Framework (Python >= 3.11) ---------------------------------------------------


def _agent_framework():
    from conftest import need_agent_framework

    need_agent_framework()
    from orch_otel.integrations.agent_framework import AgentFrameworkInstrumentor

    return AgentFrameworkInstrumentor()


def _maf_case(app_prefix: str):
    from fidelity_cases_maf import CASES

    return next(c for c in CASES if c.truth.app.startswith(app_prefix))


def test_agent_framework_parallel_tool_calls_views_are_faithful(tmp_path):
    instrumentor = _agent_framework()
    case = _maf_case("agent framework agent: weather")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    (first, second) = [t for t in views["turns"] if t["agent"] == "weather"]
    assert [c["id"] for c in first["output_tool_calls"]] == ["w1", "w2"]  # one model turn, two parallel calls
    assert [(m["role"], m.get("tool_call_id")) for m in second["input_messages"][-2:]] == [
        ("tool", "w1"), ("tool", "w2")]
    (row,) = [r for r in views["chat"] if r["agent"] == "weather"]
    assert [f["function"]["name"] for f in row["tools"]] == ["get_weather"]
    assert [m["content"] for m in row["messages"] if m.get("trainable")] == ["", "Paris and Rome are sunny."]


def test_agent_framework_agent_as_tool_views_are_faithful(tmp_path):
    instrumentor = _agent_framework()
    case = _maf_case("agent framework agent as a tool")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    researcher = next(r for r in views["chat"] if r["agent"] == "researcher")
    assert [m["content"] for m in researcher["messages"] if m.get("trainable")] == ["", "Oslo is sunny."]


def test_agent_framework_sequential_views_are_faithful(tmp_path):
    instrumentor = _agent_framework()
    case = _maf_case("agent framework Sequential")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    reviewer = next(r for r in views["chat"] if r["agent"] == "reviewer")
    # the drafter's reply is input the reviewer read, in the drafter's name (also in the text, for templates
    # that drop `name`), never the reviewer's own turn
    assert reviewer["messages"] == [{"role": "user", "content": "go"},
                                    {"role": "user", "content": "drafter: a draft", "name": "drafter"},
                                    {"role": "assistant", "content": "looks good", "trainable": True, "weight": 1}]


# Not the Handoff builder here: each of its agents is offered a handoff to every other agent and takes one
# at most, and view_errors holds that a chat row offers only tools its agent called.
@pytest.mark.parametrize("app_prefix", [
    "agent framework Concurrent", "agent framework switch-case", "agent framework GroupChat, manager agent",
    "agent framework Magentic: the manager plans",
])
def test_agent_framework_builder_views_are_faithful(app_prefix, tmp_path):
    instrumentor = _agent_framework()
    case = _maf_case(app_prefix)
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []


def _openai_agents():
    pytest.importorskip("agents", reason="needs the optional extra: pip install 'orch-otel[openai-agents]'")
    from orch_otel.integrations.openai_agents import OpenAIAgentsInstrumentor

    return OpenAIAgentsInstrumentor()


def _openai_agents_case(prefix: str):
    from fidelity_cases_openai_agents import CASES

    return next(c for c in CASES if c.truth.app.startswith(prefix))


def test_openai_agents_handoff_views_are_faithful(tmp_path):
    instrumentor = _openai_agents()
    case = _openai_agents_case("openai-agents handoffs")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    triage, billing, triage_again = [r for r in views["chat"] if r["agent"] in ("triage", "billing")]
    # the SDK's Responses items read as chat: the customer's question, then triage's own handoff call
    assert triage["messages"][:2] == [{"role": "system", "content": "Route the customer."},
                                      {"role": "user", "content": "Is invoice 42 paid?"}]
    assert [(m["role"], m.get("trainable")) for m in triage["messages"][2:]] == [("assistant", True)]
    assert [c["id"] for m in billing["messages"] for c in m.get("tool_calls") or ()] == ["t1", "h2"]
    # billing read triage's handoff as input (not its own turn), and its lookup's result answers its call
    assert any(m["role"] == "user" and "transfer_to_billing" in m["content"] for m in billing["messages"])
    assert {"role": "tool", "content": "invoice 42: paid", "tool_call_id": "t1"} in billing["messages"]
    assert [m["content"] for m in triage_again["messages"] if m.get("trainable")] == ["Your invoice is paid."]


SESSION_RUN_2 = Truth(  # openai_agents_apps.handoffs_in_one_session, its second run
    app="openai-agents session, second run: triage hands off again (h2), billing answers from the history",
    instances={},
    delegations=(Delegation("triage", "billing", frozenset({"billing"})),),
    # the first run's handoff and lookup, in the second run's prompts
    earlier_tool_calls=(("triage", "transfer_to_billing", "h1"), ("billing", "lookup_invoice", "t1")),
    tool_calls=(("triage", "transfer_to_billing", "h2"),),
    stop=Stop("billing", "end"),
)


def test_openai_agents_session_second_run_views_are_faithful(tmp_path):
    """Every view of the session's second run, built from both runs' traces:
    in its prompts the first run's turns are their own agents' (the turns
    view's input of billing's call: its own lookup and answer, triage's
    handoff as triage's input)."""
    instrumentor = _openai_agents()
    import openai_agents_apps as apps

    first, second = record_instrumented(tmp_path / "traces", instrumentor, apps.handoffs_in_one_session)
    assert first["task_id"] == second["task_id"] == "conv-8"  # the session's id: both runs are one task
    views = {}
    for view in VIEWS:
        tokenizer = _tokenizer(tmp_path / "tokenizer") if view == "triplets" else None
        build([tmp_path / "traces"], tmp_path / view, Config(view=view, tokenizer=tokenizer))
        rows = [json.loads(line) for line in (tmp_path / view / f"{view}.jsonl").read_text().splitlines()]
        views[view] = [r for r in rows if (r.get("trace_id") or r.get("metadata", {}).get("trace_id")) == second["trace_id"]]
    assert view_errors(views, SESSION_RUN_2) == []
    (billing,) = [r for r in views["turns"] if r["agent"] == "billing"]
    assert [(m["role"], m["content"], [c["id"] for c in m.get("tool_calls") or ()], m.get("name"))
            for m in billing["input_messages"]] == [
        ("user", "Is invoice 42 paid?", [], None),
        ("user", "[tool call transfer_to_billing] {}", [], "triage"),
        ("user", '[tool result transfer_to_billing] {"assistant": "billing"}', [], None),
        ("assistant", "", ["t1"], None),
        ("tool", "invoice 42: paid", [], None),
        ("assistant", "Invoice 42 is paid.", [], None),
        ("user", "And invoice 43?", [], None),
        ("user", "[tool call transfer_to_billing] {}", [], "triage"),
        ("user", '[tool result transfer_to_billing] {"assistant": "billing"}', [], None)]
    (triplet,) = [r for r in views["triplets"] if r["metadata"]["agent_name"] == "billing"]
    assert [m["role"] for m in triplet["prompt"]["messages"]] == [
        "user", "user", "user", "assistant", "tool", "assistant", "user", "user", "user"]


def test_openai_agents_as_tools_views_are_faithful(tmp_path):
    instrumentor = _openai_agents()
    case = _openai_agents_case("openai-agents agents as tools")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    researcher = next(r for r in views["chat"] if r["agent"] == "researcher")
    assert [m["content"] for m in researcher["messages"] if m.get("trainable")] == ["facts"]


def test_openai_agents_parallel_tools_views_are_faithful(tmp_path):
    instrumentor = _openai_agents()
    case = _openai_agents_case("openai-agents parallel tools")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    (row,) = views["chat"]
    assert [m.get("tool_call_id") for m in row["messages"] if m["role"] == "tool"] == ["p1", "p2", "p3"]


def test_openai_agents_hosted_tools_views_are_faithful(tmp_path):
    """Every view of a run whose first reply holds three hosted calls and a function call."""
    instrumentor = _openai_agents()
    case = _openai_agents_case("openai-agents hosted tools")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
    (row,) = views["chat"]  # the hosted calls are no chat turns: both replies make one row
    assert [t["function"]["name"] for t in row["tools"]] == ["lookup_invoice"]
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_openai_agents_tool_guardrails_views_are_faithful(tmp_path):
    instrumentor = _openai_agents()
    case = _openai_agents_case("openai-agents tool guardrails")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []


def test_openai_agents_local_tools_views_are_faithful(tmp_path):
    instrumentor = _openai_agents()
    case = _openai_agents_case("openai-agents local tools")
    views = _views(tmp_path, instrumentor, case.run)
    assert view_errors(views, case.truth) == []
