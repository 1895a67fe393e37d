"""100 concurrent asyncio runs give 100 separate, correct traces."""

from __future__ import annotations

import asyncio

from conftest import check_trace, decisions_of, events_of

import orch_otel

RUNS = 100


@orch_otel.tool
async def lookup(key: str) -> str:
    await asyncio.sleep(0)
    return key.upper()


@orch_otel.agent(role="worker")
async def helper(key: str) -> str:
    return await lookup(key)


async def one_run(i: int) -> list[str]:
    with orch_otel.workflow("batch", task_id=f"task-{i}"):
        with orch_otel.agent("lead"):
            orch_otel.spawn(["helper"] * (i % 3 + 1))
            results = await asyncio.gather(*(helper(f"{i}-{k}") for k in range(i % 3 + 1)))
            orch_otel.aggregate(sources=["helper"])
            orch_otel.stop("end")
            return results


async def test_hundred_concurrent_runs_make_hundred_traces(captured):
    results = await asyncio.gather(*(one_run(i) for i in range(RUNS)))
    assert results[5] == ["5-0", "5-1", "5-2"]
    traces = captured.traces()
    assert len(traces) == RUNS
    assert len({t["trace_id"] for t in traces}) == RUNS
    by_task = {t["task_id"]: t for t in traces}
    assert set(by_task) == {f"task-{i}" for i in range(RUNS)}
    for i in range(RUNS):
        trace = check_trace(by_task[f"task-{i}"])
        fanout = i % 3 + 1
        assert len(events_of(trace, "spawn", agent="lead", to="helper")) == fanout
        assert len(events_of(trace, "tool_call", agent="helper", tool="lookup")) == fanout
        assert len(events_of(trace, "return", agent="helper", to="lead")) == fanout
        (spawn_decision,) = decisions_of(trace, "spawn")
        assert spawn_decision["targets"] == ["helper"] * fanout
        assert [d["reason"] for d in decisions_of(trace, "stop")] == ["end"]
