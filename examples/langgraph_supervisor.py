"""A langgraph-supervisor app with two workers and tools, traced by orch-otel.

Needs:   pip install -e '.[langgraph,examples,cli]'   (langchain and langgraph-supervisor come with [examples])
Run it:  python examples/langgraph_supervisor.py [trace-dir]   (then: orch-otel show orch-traces)

The supervisor hands off to a math expert (which calls an ``add`` tool), then
to a research expert (which calls ``lookup``), then answers. The models are
orch-otel's offline ``FakeToolCallingModel`` scripts, so it needs no keys and
no network. ``orch_otel.instrument()`` finds LangGraph and instruments it:
the run becomes one replayable trace (one JSON line) under ``orch-traces/``
with the handoffs as delegation decisions, the tools, the model calls and the
stop reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

# This file shares its name with the langgraph_supervisor package: keep its own
# folder off the import path so that ``import langgraph_supervisor`` finds the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import orch_otel  # noqa: E402 (after the path fix above)


def main(trace_dir: str) -> None:
    setup = orch_otel.instrument(trace_dir=trace_dir)

    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool
    from langgraph_supervisor import create_supervisor

    from orch_otel.integrations.langgraph.testing import (
        FakeToolCallingModel,
        ai,
        tool_call,
    )

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool
    def lookup(query: str) -> str:
        """Look a topic up."""
        return f"{query}: an open standard for telemetry"

    math_expert = create_agent(
        FakeToolCallingModel(model_name="math-llm", by_turn=True, responses=[
            ai(tool_calls=[tool_call("add", {"a": 19, "b": 23}, "call_add")]), ai("19 + 23 = 42")]),
        [add], name="math_expert",
    )
    research_expert = create_agent(
        FakeToolCallingModel(model_name="research-llm", by_turn=True, responses=[
            ai(tool_calls=[tool_call("lookup", {"query": "OpenTelemetry"}, "call_lookup")]),
            ai("OpenTelemetry is an open standard for telemetry")]),
        [lookup], name="research_expert",
    )
    supervisor_model = FakeToolCallingModel(model_name="supervisor-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("transfer_to_math_expert", {}, "call_to_math")]),
        ai(tool_calls=[tool_call("transfer_to_research_expert", {}, "call_to_research")]),
        ai("42, and OpenTelemetry is an open telemetry standard."),
    ])
    app = create_supervisor([math_expert, research_expert], model=supervisor_model).compile(name="supervision")

    result = app.invoke(
        {"messages": [HumanMessage("What is 19 + 23, and what is OpenTelemetry?")]},
        {"metadata": {"orch.task_id": "example-supervisor-1", "orch.topology": "centralized"}},
    )
    print(result["messages"][-1].content)
    orch_otel.flush()
    print(f"trace written under {setup.trace_dir}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "orch-traces")
