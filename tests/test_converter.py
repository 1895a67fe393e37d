"""The span-tree -> trace converter on recorded and on hand-made span records."""

from __future__ import annotations

import random

from conftest import check_trace, decisions_of, events_of

import orch_otel
from orch_otel import convert
from orch_otel.spans import EventRecord, SpanRecord
from orch_otel.vocabulary import Attr, SpanEvent

T0 = 1_700_000_000_000_000_000
TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(span_id: str, parent: str | None, name: str, start: int, end: int, attrs: dict | None = None,
         events: tuple = (), status: str = "unset") -> SpanRecord:
    return SpanRecord(TRACE, span_id, parent, name, T0 + start, T0 + end, status=status,
                      attributes=attrs or {}, events=events)


def agent_attrs(name: str, **extra) -> dict:
    return {Attr.OPERATION: "invoke_agent", Attr.AGENT_NAME: name, **extra}


def make_tree() -> list[SpanRecord]:
    """lead -> (worker A with a tool and an LLM call), decision events on lead."""
    decide = EventRecord(SpanEvent.DECISION, T0 + 5, {Attr.DECISION: "delegate", Attr.TARGETS: ["a"], Attr.OPTIONS: ["a", "b"]})
    stop = EventRecord(SpanEvent.DECISION, T0 + 95, {Attr.DECISION: "stop", Attr.STOP_REASON: "end"})
    return [
        span("1000000000000001", None, "invoke_agent lead", 0, 100, agent_attrs("lead", **{Attr.TASK_ID: "t-1"}), (decide, stop)),
        span("1000000000000002", "1000000000000001", "invoke_agent a", 10, 80, agent_attrs("a", **{Attr.AGENT_SPAWNED: True})),
        span("1000000000000003", "1000000000000002", "chat m", 20, 30,
             {Attr.OPERATION: "chat", Attr.REQUEST_MODEL: "m", Attr.INPUT_TOKENS: 7, Attr.OUTPUT_TOKENS: 3}),
        span("1000000000000004", "1000000000000002", "execute_tool search", 40, 60,
             {Attr.OPERATION: "execute_tool", Attr.TOOL_NAME: "search", Attr.TOOL_CALL_ID: "c1"}),
    ]


def test_mapping_of_a_small_tree():
    trace = check_trace(convert(make_tree()).trace)
    assert trace["trace_id"] == TRACE and trace["task_id"] == "t-1"
    kinds = [e["type"] for e in trace["events"]]
    assert kinds == ["orchestrator_decision", "spawn", "message", "tool_call", "tool_result", "return", "orchestrator_decision"]
    assert trace["events"][0]["t"] == round(5 / 1e9, 6)
    assert [e["t"] for e in trace["events"]] == sorted(e["t"] for e in trace["events"])
    (llm,) = events_of(trace, "message", channel="llm")
    assert (llm["agent"], llm["to"], llm["input_tokens"], llm["output_tokens"]) == ("a", "m", 7, 3)
    (result,) = events_of(trace, "tool_result")
    assert (result["agent"], result["to"], result["call_id"]) == ("search", "a", "c1")
    assert trace["costs"] == {"tokens": 10, "wall_clock_s": round(100 / 1e9, 6), "tool_calls": 1, "messages": 0}
    spans_of = {e["type"]: e["span_id"] for e in trace["events"]}
    assert spans_of["tool_call"] == "1000000000000004" and spans_of["spawn"] == "1000000000000002"
    assert trace["metrics"]["tool_success_rate"] == 1.0 and trace["metrics"]["max_depth"] == 2


def test_edges_follow_structure():
    trace = convert(make_tree()).trace
    ids = {e.get("decision", e["type"]) + ":" + e["agent"]: e["id"] for e in trace["events"]}
    edges = {(e["src"], e["dst"], e["type"]) for e in trace["edges"]}
    assert (ids["delegate:lead"], ids["spawn:lead"], "causal") in edges  # delegate -> spawn of a
    assert (ids["tool_call:a"], ids["tool_result:search"], "tool_dependency") in edges
    assert (ids["spawn:lead"], ids["message:a"], "spawn") in edges  # spawn -> child's first event
    assert (ids["return:a"], trace["events"][-1]["id"], "return") in edges  # back to lead's next event


def test_input_order_and_duplicates_do_not_matter():
    spans = make_tree()
    expected = convert(spans).trace
    shuffled = spans + spans[:2]
    random.Random(7).shuffle(shuffled)
    assert convert(shuffled).trace == expected


def test_task_id_falls_back_to_conversation_then_trace_id():
    spans = make_tree()
    root = spans[0]
    no_task = {k: v for k, v in root.attributes.items() if k != Attr.TASK_ID}
    with_thread = [SpanRecord(**{**_fields(root), "attributes": {**no_task, Attr.CONVERSATION_ID: "thread-9"}})] + spans[1:]
    assert convert(with_thread).trace["task_id"] == "thread-9"
    bare = [SpanRecord(**{**_fields(root), "attributes": no_task})] + spans[1:]
    assert convert(bare).trace["task_id"] == TRACE


def _fields(record: SpanRecord) -> dict:
    return {f: getattr(record, f) for f in record.__dataclass_fields__}


def test_missing_root_gives_incomplete_stop():
    orphans = make_tree()[1:]  # the root never arrived
    trace = check_trace(convert(orphans).trace)
    (stop,) = decisions_of(trace, "stop")
    assert stop["reason"] == "incomplete" and stop["implied"] is True


def test_complete_false_marks_incomplete_even_with_a_recorded_stop():
    trace = check_trace(convert(make_tree(), complete=False).trace)
    assert [s["reason"] for s in decisions_of(trace, "stop")] == ["end", "incomplete"]


def test_parent_cycle_is_broken_not_looped():
    a = span("2000000000000001", "2000000000000002", "invoke_agent x", 0, 10, agent_attrs("x"))
    b = span("2000000000000002", "2000000000000001", "invoke_agent y", 1, 9, agent_attrs("y"))
    conversion = convert([a, b])
    assert decisions_of(check_trace(conversion.trace), "stop")[0]["reason"] == "incomplete"
    assert conversion.problems == ["parent links form a cycle through span 2000000000000001; written as incomplete"]


def test_error_root_without_stop_gets_error_stop():
    root = span("3000000000000001", None, "invoke_agent solo", 0, 10, agent_attrs("solo"), status="error")
    trace = check_trace(convert([root]).trace)
    (stop,) = decisions_of(trace, "stop")
    assert stop["reason"] == "error" and stop["status"] == "error"


def test_live_recording_round_trip(captured):
    with orch_otel.agent("boss"):
        orch_otel.spawn(["w1", "w2"])
        with orch_otel.agent("w1"):
            pass
        with orch_otel.agent("w2"):
            orch_otel.message("done", recipients=["boss"])
        orch_otel.aggregate(sources=["w1", "w2"])
    (trace,) = captured.traces()
    check_trace(trace)
    (decision,) = decisions_of(trace, "spawn")
    spawns = events_of(trace, "spawn")
    assert [s["to"] for s in spawns] == ["w1", "w2"]
    assert all({"src": decision["id"], "dst": s["id"], "type": "spawn"} in trace["edges"] for s in spawns)
    (agg,) = events_of(trace, "aggregate")
    returns = events_of(trace, "return")
    assert all({"src": r["id"], "dst": agg["id"], "type": "aggregate"} in trace["edges"] for r in returns)
    (msg,) = events_of(trace, "message", channel="agent")
    assert (msg["from"], msg["to"]) == ("w2", "boss")


def test_other_instrumentations_genai_spans_play_no_orchestration_role():
    spans = make_tree()
    foreign = SpanRecord(TRACE, "1000000000000009", "1000000000000002", "chat gpt", T0 + 31, T0 + 35,
                         attributes={Attr.OPERATION: "chat", Attr.REQUEST_MODEL: "gpt", Attr.INPUT_TOKENS: 100},
                         scope="opentelemetry.instrumentation.langchain")
    ours = convert(spans).trace
    with_foreign = convert(spans + [foreign]).trace
    assert with_foreign["events"] == ours["events"]
    assert with_foreign["costs"] == ours["costs"]


def test_aggregate_links_every_branch_return_of_a_repeated_source(captured):
    with orch_otel.agent("fan"):
        orch_otel.spawn(["worker"] * 3)
        for _ in range(3):
            with orch_otel.agent("worker"):
                pass
        orch_otel.aggregate(sources=["worker", "worker", "worker"])
    (trace,) = captured.traces()
    (agg,) = events_of(trace, "aggregate")
    returns = {r["id"] for r in events_of(trace, "return", agent="worker")}
    linked = {e["src"] for e in trace["edges"] if e["type"] == "aggregate" and e["dst"] == agg["id"]}
    assert len(returns) == 3 and linked == returns
