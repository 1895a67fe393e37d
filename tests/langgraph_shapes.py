"""LangGraph apps written the way the LangGraph and LangChain docs teach them
(issue 32): the hand-written tool loop, agents as tools, the Functional API,
a planner that fans out with ``Command(goto=[Send...])``, a single
``create_agent``, and langgraph-supervisor with models whose ``bind_tools``
returns the model itself or with a worker that never runs (for forks).
Every model is a scripted ``FakeToolCallingModel``; each builder returns a
fresh app, so runs do not share model state.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, Send
from langgraph_apps import RouteState, add, lookup
from typing_extensions import TypedDict

from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call


@tool
def run_code(code: str) -> str:
    """Run a snippet of Python."""
    return f"ran {code}"


# -- 1. the hand-written tool loop (model node + ToolNode + tools_condition) inside a router app ------

def build_tool_loop_router() -> Any:
    """triage (model) answers ``coder``; the router sends it there. coder's model
    calls ``run_code``; ``tools_condition`` routes to the ToolNode ``tools``, which
    goes back to coder; coder's model answers; ``tools_condition`` ends the run."""
    triage_model = FakeToolCallingModel(model_name="triage-llm", responses=[ai("coder")])
    coder_model = FakeToolCallingModel(model_name="coder-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("run_code", {"code": "print(1)"}, "call_run")]), ai("it prints 1")])
    writer_model = FakeToolCallingModel(model_name="writer-llm", responses=[ai("an essay")])

    def triage(state: RouteState) -> dict[str, Any]:
        reply = triage_model.invoke(state["messages"])
        return {"messages": [reply], "route": str(reply.content)}

    def coder(state: RouteState) -> dict[str, Any]:
        return {"messages": [coder_model.bind_tools([run_code]).invoke(state["messages"])]}

    def writer(state: RouteState) -> dict[str, Any]:
        return {"messages": [writer_model.invoke(state["messages"])]}

    graph = StateGraph(RouteState)
    graph.add_node("triage", triage)
    graph.add_node("coder", coder)
    graph.add_node("writer", writer)
    graph.add_node("tools", ToolNode([run_code]))
    graph.add_edge(START, "triage")
    graph.add_conditional_edges("triage", lambda s: s["route"], ["coder", "writer"])
    graph.add_conditional_edges("coder", tools_condition)
    graph.add_edge("tools", "coder")
    graph.add_edge("writer", END)
    return graph.compile(name="dev_desk")


# -- 2. agents as tools: LangChain v1's subagents, and a task tool that starts them --------------------

def _subagents() -> tuple[Any, Any]:
    researcher_model = FakeToolCallingModel(model_name="researcher-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "otel"}, "call_lookup")]), ai("otel is a standard")])
    writer_model = FakeToolCallingModel(model_name="writer-llm", by_turn=True, responses=[ai("a summary")])
    researcher = create_agent(researcher_model, [lookup], name="researcher")
    writer = create_agent(writer_model, [], name="writer")
    return researcher, writer


def _answer(agent: Any, text: str) -> str:
    return str(agent.invoke({"messages": [HumanMessage(text)]})["messages"][-1].content)


def build_agents_as_tools() -> Any:
    """The main agent (``create_agent(name="lead")``) calls ``research`` twice and
    ``write`` once; each tool invokes a ``create_agent`` sub-agent (researcher,
    writer); then it answers."""
    researcher, writer = _subagents()

    @tool
    def research(query: str) -> str:
        """Ask the research agent."""
        return _answer(researcher, query)

    @tool
    def write(topic: str) -> str:
        """Ask the writing agent."""
        return _answer(writer, topic)

    lead_model = FakeToolCallingModel(model_name="lead-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("research", {"query": "otel"}, "call_r1")]),
        ai(tool_calls=[tool_call("research", {"query": "spans"}, "call_r2"),
                       tool_call("write", {"topic": "otel"}, "call_w1")]),
        ai("here is the report")])
    return create_agent(lead_model, [research, write], name="lead")


def build_task_tool() -> Any:
    """A deep-agents style ``task`` tool: the main agent names the sub-agent
    (``subagent_type``); the tool starts it. Two calls: researcher, then writer."""
    researcher, writer = _subagents()
    subagents = {"researcher": researcher, "writer": writer}

    @tool
    def task(description: str, subagent_type: str) -> str:
        """Start a sub-agent on a task."""
        return _answer(subagents[subagent_type], description)

    lead_model = FakeToolCallingModel(model_name="lead-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("task", {"description": "find otel", "subagent_type": "researcher"}, "call_t1")]),
        ai(tool_calls=[tool_call("task", {"description": "sum it up", "subagent_type": "writer"}, "call_t2")]),
        ai("done")])
    return create_agent(lead_model, [task], name="lead")


# -- 3. the Functional API ------------------------------------------------------------------------

def build_functional_reviews() -> Any:
    """One generic ``@task`` runs two different ``create_agent`` reviewers."""
    style = create_agent(FakeToolCallingModel(model_name="style-llm", responses=[ai("style ok")]), [],
                         name="style_reviewer")
    facts = create_agent(FakeToolCallingModel(model_name="facts-llm", responses=[ai("facts ok")]), [],
                         name="fact_reviewer")

    @task
    def review(reviewer: Any, text: str) -> str:
        return _answer(reviewer, text)

    @entrypoint()
    def reviews(text: str) -> list[str]:
        return [f.result() for f in [review(style, text), review(facts, text)]]

    return reviews


@tool(return_direct=True)
def transfer_to_hotel_advisor() -> str:
    """Ask the hotel advisor for help."""
    return "Successfully transferred to hotel advisor"


@tool(return_direct=True)
def transfer_to_travel_advisor() -> str:
    """Ask the travel advisor for help."""
    return "Successfully transferred to travel advisor"


@tool
def hotels(area: str) -> str:
    """Hotels in an area."""
    return f"two hotels in {area}"


def build_advisor_network() -> Any:
    """The LangGraph docs' functional multi-agent network: the travel advisor
    hands off to the hotel advisor through a ``return_direct`` tool; the
    entrypoint calls whichever advisor the last tool call names; the hotel
    advisor looks up hotels and answers (no handoff): the loop ends."""
    travel_model = FakeToolCallingModel(model_name="travel-llm", responses=[
        ai(tool_calls=[tool_call("transfer_to_hotel_advisor", {}, "call_to_hotel")])])
    hotel_model = FakeToolCallingModel(model_name="hotel-llm", responses=[
        ai(tool_calls=[tool_call("hotels", {"area": "Aruba"}, "call_hotels")]), ai("stay at the beach hotel")])
    travel_advisor = create_agent(travel_model, [transfer_to_hotel_advisor], name="travel_advisor")
    hotel_advisor = create_agent(hotel_model, [hotels, transfer_to_travel_advisor], name="hotel_advisor")

    @task
    def call_travel_advisor(messages: list[Any]) -> list[Any]:
        return travel_advisor.invoke({"messages": messages})["messages"]

    @task
    def call_hotel_advisor(messages: list[Any]) -> list[Any]:
        return hotel_advisor.invoke({"messages": messages})["messages"]

    @entrypoint()
    def advisors(messages: list[Any]) -> list[Any]:
        call_active_agent = call_travel_advisor
        while True:
            agent_messages = call_active_agent(messages).result()
            messages = add_messages(messages, agent_messages)
            reply = next(m for m in reversed(agent_messages) if isinstance(m, AIMessage))
            if not reply.tool_calls:
                return messages
            name = reply.tool_calls[-1]["name"]
            if name == "transfer_to_travel_advisor":
                call_active_agent = call_travel_advisor
            elif name == "transfer_to_hotel_advisor":
                call_active_agent = call_hotel_advisor
            else:
                return messages

    return advisors


# -- 4. a model-calling planner that fans out with Command(goto=[Send...]) ---------------------------

class PlanState(TypedDict, total=False):
    messages: Annotated[list[Any], add_messages]
    notes: Annotated[list[str], operator.add]


class TopicState(TypedDict):
    topic: str


def build_planner_split() -> Any:
    """planner (model) reads its model's plan and returns ``Command(goto=[Send("worker", ...)] * 3)``;
    each worker asks its model and runs ``lookup``; ``merge`` (plain) fans in."""
    planner_model = FakeToolCallingModel(model_name="planner-llm", responses=[ai("split: a, b, c")])
    worker_model = FakeToolCallingModel(model_name="worker-llm", responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "topic"}, "call_w")])])

    def planner(state: PlanState) -> Command:
        reply = planner_model.invoke(state["messages"])
        topics = str(reply.content).split(": ", 1)[1].split(", ")
        return Command(goto=[Send("worker", {"topic": t}) for t in topics], update={"messages": [reply]})

    def worker(state: TopicState) -> dict[str, Any]:
        reply = worker_model.invoke([HumanMessage(f"research {state['topic']}")])
        return {"notes": [lookup.invoke(reply.tool_calls[0]).content]}

    def merge(state: PlanState) -> dict[str, Any]:
        return {"messages": [AIMessage(" | ".join(sorted(state["notes"])))]}

    graph = StateGraph(PlanState)
    graph.add_node("planner", planner, destinations=("worker",))
    graph.add_node("worker", worker)
    graph.add_node("merge", merge)
    graph.add_edge(START, "planner")
    graph.add_edge("worker", "merge")
    graph.add_edge("merge", END)
    return graph.compile(name="plan_split")


# -- 5. one create_agent, nothing around it ----------------------------------------------------------

def build_single_agent() -> Any:
    model = FakeToolCallingModel(model_name="solo-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "otel"}, "call_solo")]), ai("found it")])
    return create_agent(model, [lookup], name="solo")



# -- 13/14. langgraph-supervisor with models that bind tools their own way, and a worker that never runs ---

class SelfBindingModel(FakeToolCallingModel):
    """A chat model whose ``bind_tools`` returns the model itself, as many
    wrappers and test doubles do: the tools never reach its invocation parameters."""

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self


def build_supervisor(*, bind_returns_self: bool = False, math_only: bool = False) -> Any:
    """``langgraph_apps.build_supervisor``'s app; ``bind_returns_self``: every model
    is a ``SelfBindingModel``; ``math_only``: the supervisor answers after the
    math expert, and the research expert never runs."""
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    model = SelfBindingModel if bind_returns_self else FakeToolCallingModel
    math_model = model(model_name="math-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("add", {"a": 1, "b": 2}, "call_add")]), ai("1 + 2 = 3")])
    research_model = model(model_name="research-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "otel"}, "call_lookup")]), ai("otel is a standard")])
    turns = [ai(tool_calls=[tool_call("transfer_to_math_expert", {}, "call_to_math")])]
    if not math_only:
        turns.append(ai(tool_calls=[tool_call("transfer_to_research_expert", {}, "call_to_research")]))
    supervisor_model = model(model_name="supervisor-llm", by_turn=True, responses=[*turns, ai("all done")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        math_expert = create_react_agent(math_model, [add], name="math_expert")
    research_expert = create_agent(research_model, [lookup], name="research_expert")
    return create_supervisor([math_expert, research_expert], model=supervisor_model).compile(name="supervision")
