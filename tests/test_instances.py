"""Agent instances (docs/trace-format.md#instances): every event names the
invocation whose work it is (``name#k``), spawns and returns name the other
end, aggregates name the invocations they combine; ``show``, edges,
validation and per-agent credit tell instances apart."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import sys
from collections import defaultdict

import autogen_apps
import langgraph_apps
import orjson
from conftest import check_trace, decisions_of, events_of, instrumentor_fixture
from fidelity_cases_custom import CASES
from offline_support import otlp_line

import orch_otel
from orch_otel import Attr, convert
from orch_otel._validation import contract_errors
from orch_otel.datasets.credit import Credit
from orch_otel.datasets.metrics import count_steps
from orch_otel.integrations.autogen import AutoGenInstrumentor
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.offline import convert_inputs
from orch_otel.spans import SpanRecord
from orch_otel.tracefiles import read_lines

langgraph_instrumented = instrumentor_fixture(LangGraphInstrumentor)
autogen_instrumented = instrumentor_fixture(AutoGenInstrumentor)


def one_trace(captured) -> dict:
    (trace,) = captured.traces()
    return check_trace(trace)


def fanout_trace(captured, n: int = 3) -> dict:
    langgraph_apps.build_fanout(n).invoke({})
    return one_trace(captured)


def test_send_fanout_gives_each_worker_invocation_its_own_instance(captured):
    trace = fanout_trace(captured)
    spawns = events_of(trace, "spawn", to="worker")
    assert [s["to_instance"] for s in spawns] == ["worker#1", "worker#2", "worker#3"]  # in order of start
    assert all(s["instance"] == "fanout#1" for s in spawns)
    by_instance: dict[str, set[str]] = defaultdict(set)
    for e in trace["events"]:
        by_instance[e["instance"]].add(e["agent_span_id"])
    assert all(len(spans) == 1 for spans in by_instance.values())  # one span per instance ...
    assert len({next(iter(s)) for s in by_instance.values()}) == len(by_instance)  # ... and one instance per span
    for spawn in spawns:  # each worker's model call, tool call, result and return carry its instance
        own = [e for e in trace["events"] if e["span_id"] != spawn["span_id"] and e["agent_span_id"] == spawn["span_id"]]
        assert {e["instance"] for e in own} == {spawn["to_instance"]}
        assert sorted(e["type"] for e in own) == ["message", "tool_call", "tool_result"]
    returns = events_of(trace, "return", agent="worker")
    assert sorted(r["instance"] for r in returns) == ["worker#1", "worker#2", "worker#3"]
    assert {r["to_instance"] for r in returns} == {"fanout#1"}


def test_aggregate_names_the_worker_instances_and_links_their_returns(captured):
    trace = fanout_trace(captured)
    (agg,) = events_of(trace, "aggregate")
    assert agg["sources"] == ["worker"] * 3
    assert sorted(agg["source_instances"]) == ["worker#1", "worker#2", "worker#3"]
    returns = {r["instance"]: r["id"] for r in events_of(trace, "return", agent="worker")}
    linked = {e["src"] for e in trace["edges"] if e["type"] == "aggregate" and e["dst"] == agg["id"]}
    assert linked == {returns[i] for i in agg["source_instances"]}


def test_parallel_instances_have_separate_timelines(captured):
    """Temporal edges join consecutive events of one invocation, never two parallel workers."""
    trace = fanout_trace(captured)
    instance = {e["id"]: (e["agent"], e["instance"]) for e in trace["events"]}
    temporal = [(e["src"], e["dst"]) for e in trace["edges"] if e["type"] == "temporal"]
    assert temporal and all(instance[s] == instance[d] for s, d in temporal)
    llm = events_of(trace, "message", channel="llm")
    assert len({m["instance"] for m in llm}) == 3  # three model calls, three timelines


def test_supervisor_turns_are_three_instances_in_order(captured):
    langgraph_apps.build_supervisor().invoke(langgraph_apps.user_input("what is 1+2?"))
    trace = one_trace(captured)
    turns = [s["to_instance"] for s in events_of(trace, "spawn", to="supervisor")]
    assert turns == ["supervisor#1", "supervisor#2", "supervisor#3"]
    assert [(d["instance"], d["to"]) for d in decisions_of(trace, "delegate")] == [
        ("supervisor#1", "math_expert"), ("supervisor#2", "research_expert")]
    # the supervisor's last turn answers (its own stop), then the run root ends (it has an instance too)
    assert [(d["agent"], d["instance"]) for d in decisions_of(trace, "stop")] == [
        ("supervisor", "supervisor#3"), ("supervision", "supervision#1")]


def test_autogen_relayed_message_is_the_speakers_work(captured):
    """The team relays what a member said on the team's span; the message is
    still the member's: its instance and agent_span_id are the member's turn."""
    asyncio.run(asyncio.wait_for(autogen_apps.two_agent_round_robin().run(task="go"), 20))
    trace = one_trace(captured)
    turn = {r["agent"]: r for r in events_of(trace, "return")}
    said = events_of(trace, "message", channel="agent")
    assert [(m["agent"], m["instance"]) for m in said] == [("a", "a#1"), ("b", "b#1")]
    assert all(m["agent_span_id"] == turn[m["agent"]]["agent_span_id"] for m in said)
    assert {d["instance"] for d in decisions_of(trace, "delegate")} == {"RoundRobinGroupChat#1"}


def test_implied_stop_carries_the_root_instance():
    root = SpanRecord("0af7651916cd43dd8448eb211c80319c", "1000000000000001", None, "invoke_agent solo", 0, 10,
                      attributes={Attr.OPERATION: "invoke_agent", Attr.AGENT_NAME: "solo"})
    (stop,) = decisions_of(check_trace(convert([root]).trace), "stop")
    assert (stop["implied"], stop["instance"], stop["agent_span_id"]) == (True, "solo#1", root.span_id)


def test_uncertain_sources_get_no_source_instances(captured):
    """Two workers returned, the aggregate names one: which one is not certain."""
    with orch_otel.agent("boss"):
        for _ in range(2):
            with orch_otel.agent("worker"):
                pass
        orch_otel.aggregate(sources=["worker"])
    (agg,) = events_of(one_trace(captured), "aggregate")
    assert agg["sources"] == ["worker"] and "source_instances" not in agg


def test_live_equals_offline_for_the_decorator_apps(captured, tmp_path):
    for case in CASES:
        case.run()
    live = sorted(captured.traces(), key=lambda t: t["trace_id"])
    src = tmp_path / "spans.json"
    src.write_bytes(otlp_line(captured.spans))
    convert_inputs([src], tmp_path / "out.jsonl")
    offline = sorted((line.trace for line in read_lines(tmp_path / "out.jsonl")), key=lambda t: t["trace_id"])
    assert len(live) == len(CASES) and offline == live


# -- validation ------------------------------------------------------------------------------------


def test_contract_checks_instances(captured):
    trace = fanout_trace(captured)
    assert contract_errors(trace) == []
    bad = copy.deepcopy(trace)
    events = bad["events"]
    k_spawn, spawn = next((k, e) for k, e in enumerate(events) if e["type"] == "spawn")
    spawn["to_instance"] = "merge#1"
    k_llm, llm = next((k, e) for k, e in enumerate(events) if e.get("channel") == "llm")
    llm["instance"] = "fanout#1"  # the root's instance, on a worker's span
    k_agg, agg = next((k, e) for k, e in enumerate(events) if e["type"] == "aggregate")
    agg["source_instances"] = agg["source_instances"][:2]
    assert contract_errors(bad) == [
        f"events[{k_spawn}].to_instance: 'merge#1' is not an instance of 'worker'",
        f"events[{k_llm}].instance: 'fanout#1' is also the instance of span {events[0]['agent_span_id']!r}, "
        f"not {llm['agent_span_id']!r} (one instance per agent_span_id)",
        f"events[{k_agg}].source_instances: 2 instance(s) for 3 source(s) (one per source)",
    ]


# -- credit ----------------------------------------------------------------------------------------


def test_a_reward_for_one_instance_credits_that_instance_only(captured):
    with orch_otel.agent("lead"):
        for i in range(2):
            with orch_otel.agent("analyst"):
                for _ in range(i + 1):  # analyst#1 takes 1 step, analyst#2 takes 2
                    with orch_otel.llm_call("m") as call:
                        call.set_response("x", input_tokens=1, output_tokens=1)
                if i == 1:
                    orch_otel.reward(0.9, target="analyst#2")
    trace = one_trace(captured)
    assert trace["rewards"] == {"reward@analyst#2": 0.9}
    events = trace["events"]
    credit = Credit(events, count_steps(events), 1.0, trace["rewards"], strategies=("per_agent",))
    second = [i for i, e in enumerate(events) if e.get("channel") == "llm" and e["instance"] == "analyst#2"]
    first = [i for i, e in enumerate(events) if e.get("channel") == "llm" and e["instance"] == "analyst#1"]
    # analyst#2's two steps share its own 0.9; analyst#1 keeps its share of the team reward split by work
    assert credit.unit("analyst", 1, second[0], "analyst#2") == {"credit_per_agent": 0.45}
    steps = count_steps(events)
    share = 1.0 * steps.by_agent["analyst"] / steps.total * 1 / steps.by_agent["analyst"]
    assert credit.unit("analyst", 1, first[0], "analyst#1") == {"credit_per_agent": round(share, 9)}
    summary = credit.summary(events)
    assert summary["credit.per_agent.instance.analyst#2"] == 0.9
    assert "credit.per_agent.instance.lead#1" not in summary  # lead ran once: its agent total says it all


def test_without_instance_rewards_per_agent_credit_is_unchanged_by_instances(captured):
    """Splitting C(a) over instances by their steps gives each unit what the
    per-name formula gives: instances refine, they do not move credit."""
    fanout_trace(captured)
    trace = captured.traces()[0]
    events = trace["events"]
    credit = Credit(events, count_steps(events), 1.0, {}, strategies=("per_agent",))
    for i, e in enumerate(events):
        if e["type"] == "tool_call":
            assert credit.unit("worker", 1, i, e["instance"]) == credit.unit("worker", 1, i)
    summary = credit.summary(events)
    parts = [v for k, v in summary.items() if k.startswith("credit.per_agent.instance.worker#")]
    assert len(parts) == 3 and abs(sum(parts) - summary["credit.per_agent.agent.worker"]) < 1e-8  # each rounded to 1e-9


# -- orch-otel show --------------------------------------------------------------------------------


def _show(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orch_otel.cli", "show", *args], capture_output=True,
                          text=True, timeout=120)


def test_show_draws_one_node_per_instance_and_lets_you_pick_the_trace(captured, tmp_path):
    fanout_trace(captured, 2)
    langgraph_apps.build_supervisor().invoke(langgraph_apps.user_input("q"))
    fanout, supervisor = captured.traces()
    path = tmp_path / "traces-x.jsonl"
    path.write_bytes(orjson.dumps(fanout) + b"\n" + orjson.dumps(supervisor) + b"\n")

    first = _show(str(path))
    assert first.returncode == 0, first.stderr
    assert f"{path} holds 2 traces: {fanout['trace_id']}, {supervisor['trace_id']}" in first.stderr
    assert f"showing {fanout['trace_id']} ({path}:1); pick another with --trace-id ID" in first.stderr
    assert "worker#1" in first.stdout and "worker#2" in first.stdout

    second = _show(str(path), "--trace-id", supervisor["trace_id"])
    assert second.returncode == 0, second.stderr
    nodes = [line.strip(" │├└─") for line in second.stdout.splitlines()]
    for turn in ("supervision#1", "supervisor#1", "supervisor#2", "supervisor#3", "math_expert#1"):
        assert turn in nodes  # a node of its own
    assert "supervisor=3" in second.stdout  # the summary counts each agent's instances
    assert f"showing {supervisor['trace_id']} ({path}:2)" in second.stderr

    missing = _show(str(path), "--trace-id", "nope")
    assert missing.returncode == 2  # docs/cli.md: no such trace is a usage error
    assert f"no trace with id nope in {path}; its traces: {fanout['trace_id']}, {supervisor['trace_id']}" in missing.stderr
