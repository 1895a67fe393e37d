"""Decorators and helpers: sync, async, generators, threads, errors, control flow."""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import check_trace, decisions_of, events_of

import orch_otel
from orch_otel import Attr, testing
from orch_otel.recorder import get_recorder


@orch_otel.tool
def add(a: int, b: int) -> int:
    return a + b


@orch_otel.agent(role="worker")
def worker(x: int) -> int:
    return add(x, 1)


@orch_otel.agent(role="lead")
def lead_sync() -> int:
    orch_otel.spawn("worker")
    result = worker(1)
    orch_otel.aggregate(result, sources=["worker"])
    orch_otel.stop("end")
    return result


def test_sync_agent_tool_and_helpers(captured):
    assert lead_sync() == 2
    (trace,) = captured.traces()
    check_trace(trace)
    (spawn,) = events_of(trace, "spawn")
    assert (spawn["agent"], spawn["to"]) == ("lead_sync", "worker")
    (decision,) = decisions_of(trace, "spawn")
    assert decision["targets"] == ["worker"] and not decision.get("implied")
    assert {"src": decision["id"], "dst": spawn["id"], "type": "spawn"} in trace["edges"]
    (call,) = events_of(trace, "tool_call")
    (result,) = events_of(trace, "tool_result")
    assert call["agent"] == "worker" and call["tool"] == result["tool"] == "add"
    assert call["call_id"] == result["call_id"]
    (ret,) = events_of(trace, "return")
    assert (ret["from"], ret["to"]) == ("worker", "lead_sync")
    (agg,) = events_of(trace, "aggregate")
    assert {"src": ret["id"], "dst": agg["id"], "type": "aggregate"} in trace["edges"]
    (stop,) = decisions_of(trace, "stop")
    assert stop["reason"] == "end" and stop["agent"] == "lead_sync"
    assert trace["costs"]["tool_calls"] == 1


async def test_async_agents_nest_across_gather(captured):
    @orch_otel.agent("child")
    async def child(i: int) -> int:
        await asyncio.sleep(0)
        return i

    @orch_otel.agent("parent")
    async def parent() -> list[int]:
        return await asyncio.gather(*(child(i) for i in range(3)))

    assert await parent() == [0, 1, 2]
    (trace,) = captured.traces()
    check_trace(trace)
    spawns = events_of(trace, "spawn", agent="parent", to="child")
    assert len(spawns) == 3
    assert len(events_of(trace, "return", to="parent")) == 3
    (implied,) = decisions_of(trace, "spawn")  # no explicit decision: one implied per spawn group
    assert implied["implied"] is True


def test_generator_agent_keeps_its_span_current_across_yields(captured):
    @orch_otel.agent("streamer")
    def streamer(n: int):
        for i in range(n):
            yield add(i, 0)

    assert list(streamer(3)) == [0, 1, 2]
    spans = {s.name: s for s in captured.spans}
    agent_span = spans["invoke_agent streamer"]
    tool_spans = [s for s in captured.spans if s.name == "execute_tool add"]
    assert len(tool_spans) == 3
    assert all(s.parent_id == agent_span.span_id for s in tool_spans)
    check_trace(captured.traces()[0])


async def test_async_generator_agent(captured):
    @orch_otel.agent("astreamer")
    async def astreamer(n: int):
        for i in range(n):
            await asyncio.sleep(0)
            yield add(i, 10)

    assert [x async for x in astreamer(2)] == [10, 11]
    agent_span = next(s for s in captured.spans if s.name == "invoke_agent astreamer")
    tool_spans = [s for s in captured.spans if s.name == "execute_tool add"]
    assert len(tool_spans) == 2 and all(s.parent_id == agent_span.span_id for s in tool_spans)


def test_threads_follow_the_otel_context(captured):
    @orch_otel.agent("pool_lead")
    def pool_lead() -> list[int]:
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = [pool.submit(contextvars.copy_context().run, worker, i) for i in range(4)]
            return [f.result() for f in futures]

    assert pool_lead() == [1, 2, 3, 4]
    (trace,) = captured.traces()
    check_trace(trace)
    assert len(events_of(trace, "spawn", agent="pool_lead", to="worker")) == 4
    assert len(events_of(trace, "tool_call", agent="worker")) == 4


def test_exception_in_tool_is_an_error_and_passes_through_untouched(captured):
    boom = ValueError("bad input")

    @orch_otel.tool
    def fails():
        raise boom

    @orch_otel.agent("failing")
    def failing():
        fails()

    with pytest.raises(ValueError) as caught:
        failing()
    assert caught.value is boom
    (trace,) = captured.traces()
    check_trace(trace)
    (result,) = events_of(trace, "tool_result")
    assert result["status"] == "error"
    (stop,) = decisions_of(trace, "stop")
    assert stop["reason"] == "error" and stop["status"] == "error"
    span = next(s for s in captured.spans if s.name == "invoke_agent failing")
    assert span.status == "error" and span.attributes[Attr.ERROR_TYPE] == "ValueError"


class Handoff(Exception):
    """Stands in for a framework's control-flow exception."""


def test_registered_control_flow_is_not_an_error(captured):
    recorder = get_recorder()
    recorder.register_control_flow(Handoff, "handoff")
    try:

        @orch_otel.agent("hands_off")
        def hands_off():
            raise Handoff()

        with pytest.raises(Handoff):
            hands_off()
    finally:
        recorder.unregister_control_flow(Handoff)
    (trace,) = captured.traces()
    check_trace(trace)
    assert all(e["status"] == "ok" for e in trace["events"])
    span = captured.spans[0]
    assert span.status == "unset" and span.attributes[Attr.OUTCOME] == "handoff"


async def test_cancellation_stops_with_reason_cancelled(captured):
    @orch_otel.agent("sleeper")
    async def sleeper():
        await asyncio.sleep(10)

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    (trace,) = captured.traces()
    check_trace(trace)
    (stop,) = decisions_of(trace, "stop")
    assert stop["reason"] == "cancelled" and stop["status"] == "ok"


def test_context_manager_forms_and_message_defaults(captured):
    with orch_otel.workflow("flow", task_id="task-42"):
        with orch_otel.agent("alice", role="planner"):
            orch_otel.message("hi", recipients=["bob", "carol"])
            orch_otel.delegate("bob", options=["bob", "carol"])
            with orch_otel.agent("bob"):
                orch_otel.reward(0.5, name="team")
                orch_otel.reward(0.25, name="team")
    (trace,) = captured.traces()
    check_trace(trace)
    assert trace["task_id"] == "task-42"
    (msg,) = events_of(trace, "message", channel="agent")
    assert (msg["from"], msg["to"], msg["recipients"]) == ("alice", "bob,carol", ["bob", "carol"])
    assert msg["decision"] == "communicate"
    (delegate,) = decisions_of(trace, "delegate")
    assert (delegate["agent"], delegate["to"], delegate["options"]) == ("alice", "bob", ["bob", "carol"])
    # the delegation covers bob's spawn: no implied spawn decision is added
    assert decisions_of(trace, "spawn") == []
    assert trace["rewards"] == {"team": 0.75}
    (stop,) = decisions_of(trace, "stop")
    assert (stop["agent"], stop["reason"], stop["implied"] if "implied" in stop else False) == ("flow", "end", False)


def test_helpers_outside_any_span_warn_once(caplog):
    with testing.capture() as captured:
        orch_otel.delegate("nobody")
        orch_otel.delegate("nobody")
    assert captured.spans == []
    warnings = [r for r in caplog.records if "delegate() called outside" in r.getMessage()]
    assert len(warnings) <= 1  # once per process; an earlier test may already have triggered it


def test_throw_into_a_generator_agent_reaches_the_wrapped_generator(captured):
    @orch_otel.agent("catcher")
    def catcher():
        try:
            yield 1
        except KeyError:
            yield "caught"

    gen = catcher()
    assert next(gen) == 1
    assert gen.throw(KeyError("x")) == "caught"
    gen.close()
    (trace,) = captured.traces()
    assert check_trace(trace)["events"][-1]["reason"] == "end"


def test_one_context_manager_object_shared_by_threads(captured):
    shared = orch_otel.agent("shared")

    def work(i: int) -> None:
        with shared:
            orch_otel.reward(i, name="r")

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(work, range(8)))
    traces = captured.traces()
    assert len(traces) == 8
    assert sorted(t["rewards"]["r"] for t in traces) == list(range(8))


def test_a_task_block_names_the_workflows_inside_it_and_no_other(captured, caplog):
    with orch_otel.task("ticket-7"):
        with orch_otel.workflow("inside"):
            orch_otel.stop("end")
        with orch_otel.workflow("own", task_id="mine"):  # an explicit task id wins
            orch_otel.stop("end")
        with orch_otel.agent("lead"):  # a top-level agent is a root too
            orch_otel.stop("end")
        with orch_otel.agent("lead", task_id="its-own"):
            orch_otel.stop("end")
    with orch_otel.workflow("after"):
        orch_otel.stop("end")
    with orch_otel.task(""):  # an empty id names nothing (logged)
        with orch_otel.workflow("empty"):
            orch_otel.stop("end")
    inside, own, lead, lead_own, after, empty = captured.traces()
    assert (inside["task_id"], own["task_id"]) == ("ticket-7", "mine")
    assert (lead["task_id"], lead_own["task_id"]) == ("ticket-7", "its-own")
    assert after["task_id"] == after["trace_id"] and empty["task_id"] == empty["trace_id"]
    assert inside["system"] == "custom" and len(captured.spans) == 6  # task() makes no span
    assert "task() needs a non-empty task id" in caplog.text


def test_a_human_intervention_names_the_calls_the_human_approved_and_rejected(captured):
    """An app with its own approval step records which tool calls a human let run."""
    with orch_otel.workflow("refunds"):
        with orch_otel.agent("cashier"):
            orch_otel.human_intervention(approved=["a1"], rejected=["a2"])
    (trace,) = captured.traces()
    (intervention,) = events_of(check_trace(trace), "human_intervention")
    assert (intervention["from"], intervention["to"]) == ("human", "cashier")
    assert (intervention["approved"], intervention["rejected"]) == (["a1"], ["a2"])
