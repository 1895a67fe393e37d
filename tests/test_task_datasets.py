"""Two LangGraph runs of one conversation inside one ``orch_otel.task()``
block are one task in the datasets: the first pass (datasets/tasks.py) reads
both traces together, so the second run's prompts know who gave the first
run's replies. Expected rows are written from the app below."""

from __future__ import annotations

import json
from typing import Any

from fixtures.dataset_runs import record_instrumented
from langchain_core.messages import HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph

import orch_otel
from orch_otel.datasets import Config, build
from orch_otel.datasets.tasks import task_replies
from orch_otel.integrations.langgraph import LangGraphInstrumentor
from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai
from orch_otel.tracefiles import ContentIndex


def drafting(draft: str, review: str) -> Any:
    """drafter (model) -> reviewer (model): each appends its model's unnamed reply to the conversation."""
    def node(model: FakeToolCallingModel):
        def call(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}
        return call

    graph = StateGraph(MessagesState)
    graph.add_node("drafter", node(FakeToolCallingModel(model_name="drafter-llm", responses=[ai(draft)])))
    graph.add_node("reviewer", node(FakeToolCallingModel(model_name="reviewer-llm", responses=[ai(review)])))
    graph.add_edge(START, "drafter")
    graph.add_edge("drafter", "reviewer")
    graph.add_edge("reviewer", END)
    return graph.compile(name="drafting")


def two_runs_in_one_task() -> None:
    """Run 2 goes on from run 1's conversation (the app passes it in); no thread, no metadata."""
    with orch_otel.task("ticket-90"):
        first = drafting("draft one", "too short").invoke({"messages": [HumanMessage("write a post")]})
        drafting("draft two", "good").invoke({"messages": [*first["messages"], HumanMessage("try again")]})


CONTEXT, TRAINED = {"trainable": False, "weight": 0}, {"trainable": True, "weight": 1}


def test_two_runs_in_one_task_block_are_one_task_in_the_chat_view(tmp_path):
    first, second = record_instrumented(tmp_path / "traces", LangGraphInstrumentor(), two_runs_in_one_task)
    assert first["task_id"] == second["task_id"] == "ticket-90"
    build([tmp_path / "traces"], tmp_path / "chat", Config(view="chat"))
    rows = [json.loads(line) for line in (tmp_path / "chat" / "chat.jsonl").read_text().splitlines()]
    assert {row["task_id"] for row in rows} == {"ticket-90"}
    by = {(row["trace_id"], row["agent"]): row for row in rows}
    assert sorted(agent for _, agent in by) == ["drafter", "drafter", "reviewer", "reviewer"]
    # run 2's drafter read its own run-1 draft (its turn, trained in run 1's row) and the reviewer's verdict
    assert by[second["trace_id"], "drafter"]["messages"] == [
        {"role": "user", "content": "write a post"},
        {"role": "assistant", "content": "draft one", **CONTEXT},
        {"role": "user", "content": "reviewer: too short", "name": "reviewer"},
        {"role": "user", "content": "try again"},
        {"role": "assistant", "content": "draft two", **TRAINED},
    ]


def test_the_first_pass_reads_the_runs_of_one_task_block_together(tmp_path):
    record_instrumented(tmp_path / "traces", LangGraphInstrumentor(), two_runs_in_one_task)
    store = ContentIndex([str(tmp_path / "traces")])
    tasks = task_replies(sorted((tmp_path / "traces").glob("traces-*.jsonl")), store)
    store.close()
    assert list(tasks) == ["ticket-90"]
    assert tasks["ticket-90"].agents == {"drafter", "reviewer"}
    # one key per distinct reply: run 1's and run 2's draft and review
    assert sorted(tasks["ticket-90"].given.values()) == [("drafter",)] * 2 + [("reviewer",)] * 2
