"""The bundled offline LangGraph demo: a supervisor, a research team and a writer.

- ``supervisor`` (a ``create_agent`` agent) hands off with handoff tools
  (``Command(goto=..., graph=Command.PARENT)``) to the research team, then to
  the writer, then answers and the run ends;
- ``research_team`` (a subgraph) fans out with ``Send`` to three ``worker``
  agents; each asks its model, which calls the ``search`` tool, then
  summarises; ``merge`` fans the notes back in;
- ``writer`` (a ``create_agent`` agent) formats the report with a tool.

All models are :class:`~orch_otel.integrations.langgraph.testing.FakeToolCallingModel`
scripts, so it runs with no network and no keys. It does not instrument
anything itself: ``orch-otel demo`` (or your own ``orch_otel.instrument()``)
does that.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import InjectedState
from langgraph.types import Command, Send
from typing_extensions import TypedDict

from .testing import FakeToolCallingModel, ai, tool_call

TOPICS = ("web", "papers", "code")
QUESTION = "How do agent teams decide when to stop?"


class TeamState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: Annotated[list[str], operator.add]


def handoff_tool(agent_name: str) -> BaseTool:
    """A handoff tool: moves the conversation to ``agent_name`` in the parent graph."""

    @tool(f"transfer_to_{agent_name}", description=f"Hand the task over to {agent_name}.")
    def transfer(state: Annotated[dict, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        done = ToolMessage(f"Transferred to {agent_name}", name=f"transfer_to_{agent_name}", tool_call_id=tool_call_id)
        return Command(goto=agent_name, graph=Command.PARENT, update={"messages": [*state["messages"], done]})

    transfer.metadata = {"__handoff_destination": agent_name}
    return transfer


@tool
def search(query: str) -> str:
    """Search the offline corpus."""
    return f"3 findings about {query}"


@tool
def format_report(notes: str) -> str:
    """Format notes as a short report."""
    return "REPORT\n" + notes


def _plan(state: TeamState) -> dict[str, Any]:
    return {}


def build_research_team(topics: tuple[str, ...] = TOPICS, name: str = "research_team") -> Any:
    """A team subgraph: ``plan`` fans out with ``Send`` to one ``worker`` agent
    per topic (model -> ``search`` -> model), ``merge`` fans the notes in."""

    def fan_out(state: TeamState) -> list[Send]:
        return [Send("worker", {"messages": [HumanMessage(f"research {topic}")]}) for topic in topics]

    def merge(state: TeamState) -> dict[str, Any]:
        findings = [m for m in state.get("messages", []) if isinstance(m, ToolMessage) and m.name == "search"]
        return {"messages": [AIMessage(f"team notes: {len(findings)} findings", name=name)]}

    worker_model = FakeToolCallingModel(model_name="worker-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("search", {"query": "agent stopping rules"}, "call_search")]),
        ai("summary of the findings"),
    ])
    worker = create_agent(worker_model, [search], name="worker")
    team = StateGraph(TeamState)
    team.add_node("plan", _plan)
    team.add_node("worker", worker)
    team.add_node("merge", merge)
    team.add_edge(START, "plan")
    team.add_conditional_edges("plan", fan_out, ["worker"])
    team.add_edge("worker", "merge")
    team.add_edge("merge", END)
    return team.compile(name=name)


def build_demo_graph(name: str = "research_workflow") -> Any:
    """The compiled demo app (a fresh instance per call)."""
    supervisor_model = FakeToolCallingModel(model_name="supervisor-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("transfer_to_research_team", {}, "call_to_team")]),
        ai(tool_calls=[tool_call("transfer_to_writer", {}, "call_to_writer")]),
        ai("The report is ready."),
    ])
    writer_model = FakeToolCallingModel(model_name="writer-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("format_report", {"notes": "team notes"}, "call_format")]),
        ai("Here is the report."),
    ])
    supervisor = create_agent(
        supervisor_model, [handoff_tool("research_team"), handoff_tool("writer")], name="supervisor"
    )
    writer = create_agent(writer_model, [format_report], name="writer")
    graph = StateGraph(TeamState)
    graph.add_node("supervisor", supervisor, destinations=("research_team", "writer", END))
    graph.add_node("research_team", build_research_team())
    graph.add_node("writer", writer)
    graph.add_edge(START, "supervisor")
    graph.add_edge("research_team", "supervisor")
    graph.add_edge("writer", "supervisor")
    return graph.compile(name=name)


async def run_demo_app(task_id: str = "demo-task-1") -> dict:
    """Run the demo once (offline); returns the final graph state."""
    app = build_demo_graph()
    config = {"metadata": {"orch.task_id": task_id, "orch.topology": "hierarchical"}}
    return await app.ainvoke({"messages": [HumanMessage(QUESTION)]}, config=config)
