"""Offline LangGraph apps shared by the LangGraph tests and benchmarks.

Every model is a scripted ``FakeToolCallingModel``; each builder returns a
fresh compiled graph, so runs do not share model state.
"""

from __future__ import annotations

import operator
import warnings
from typing import Annotated, Any, Literal

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import Command, Send, interrupt
from typing_extensions import TypedDict

from orch_otel.integrations.langgraph.testing import FakeToolCallingModel, ai, tool_call

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent


class MessagesState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


class CountState(TypedDict, total=False):
    count: int
    log: Annotated[list[str], operator.add]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"facts about {query}"


def user_input(text: str = "hello") -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


# -- langgraph-supervisor: a supervisor hands off to two workers ---------------------------------

def build_supervisor() -> Any:
    """Supervisor -> math_expert (deprecated create_react_agent, calls ``add``) ->
    supervisor -> research_expert (create_agent, calls ``lookup``) -> supervisor -> end."""
    from langgraph_supervisor import create_supervisor

    math_model = FakeToolCallingModel(model_name="math-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("add", {"a": 1, "b": 2}, "call_add")]), ai("1 + 2 = 3")])
    research_model = FakeToolCallingModel(model_name="research-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "otel"}, "call_lookup")]), ai("otel is a standard")])
    supervisor_model = FakeToolCallingModel(model_name="supervisor-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("transfer_to_math_expert", {}, "call_to_math")]),
        ai(tool_calls=[tool_call("transfer_to_research_expert", {}, "call_to_research")]),
        ai("all done")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        math_expert = create_react_agent(math_model, [add], name="math_expert")
    research_expert = create_agent(research_model, [lookup], name="research_expert")
    return create_supervisor([math_expert, research_expert], model=supervisor_model).compile(name="supervision")


# -- langgraph-swarm: Alice hands off to Bob -------------------------------------------------------

def build_swarm() -> Any:
    from langgraph_swarm import create_handoff_tool, create_swarm

    alice_model = FakeToolCallingModel(model_name="alice-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("transfer_to_bob", {}, "call_to_bob")])])
    bob_model = FakeToolCallingModel(model_name="bob-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("add", {"a": 2, "b": 2}, "call_bob_add")]), ai("bob: 4")])
    alice = create_agent(alice_model, [create_handoff_tool(agent_name="Bob", name="transfer_to_bob")], name="Alice")
    bob = create_agent(bob_model, [add, create_handoff_tool(agent_name="Alice")], name="Bob")
    return create_swarm([alice, bob], default_active_agent="Alice").compile(name="swarm", checkpointer=MemorySaver())


# -- Send fan-out to N workers, then a fan-in node -----------------------------------------------

class FanState(TypedDict, total=False):
    topics: list[str]
    notes: Annotated[list[str], operator.add]
    summary: str


class WorkerState(TypedDict):
    topic: str


def build_fanout(n: int = 4) -> Any:
    """prepare -> Send x n -> worker (model calls ``lookup``, which the worker runs) -> merge -> end."""
    model = FakeToolCallingModel(model_name="worker-llm", responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "topic"}, "call_w")])])

    def prepare(state: FanState) -> dict[str, Any]:
        return {"topics": [f"t{i}" for i in range(n)]}

    def fan_out(state: FanState) -> list[Send]:
        return [Send("worker", {"topic": t}) for t in state["topics"]]

    def worker(state: WorkerState) -> dict[str, Any]:
        reply = model.invoke([HumanMessage(f"research {state['topic']}")])
        (call,) = reply.tool_calls
        result = lookup.invoke(call)
        return {"notes": [result.content]}

    def merge(state: FanState) -> dict[str, Any]:
        return {"summary": " | ".join(sorted(state["notes"]))}

    graph = StateGraph(FanState)
    graph.add_node("prepare", prepare)
    graph.add_node("worker", worker)
    graph.add_node("merge", merge)
    graph.add_edge(START, "prepare")
    graph.add_conditional_edges("prepare", fan_out, ["worker"])
    graph.add_edge("worker", "merge")
    graph.add_edge("merge", END)
    return graph.compile(name="fanout")


# -- 3 levels of subgraphs (one as a node, one invoked inside a node function) ----------------------

def build_nested() -> Any:
    """level1 -> node ``middle`` (level2 as a node) -> node ``call_inner`` invokes level3
    -> node ``leaf`` asks a model; ``tidy`` (plain) runs after, at level 1."""
    leaf_model = FakeToolCallingModel(model_name="leaf-llm", responses=[ai("leaf answer")])

    def leaf(state: MessagesState) -> dict[str, Any]:
        return {"messages": [leaf_model.invoke(state["messages"])]}

    level3 = StateGraph(MessagesState)
    level3.add_node("leaf", leaf)
    level3.add_edge(START, "leaf")
    level3 = level3.compile(name="level3")

    def call_inner(state: MessagesState) -> dict[str, Any]:
        return level3.invoke(state)

    level2 = StateGraph(MessagesState)
    level2.add_node("call_inner", call_inner)
    level2.add_edge(START, "call_inner")
    level2 = level2.compile(name="level2")

    def tidy(state: MessagesState) -> dict[str, Any]:
        return {}

    level1 = StateGraph(MessagesState)
    level1.add_node("middle", level2)
    level1.add_node("tidy", tidy)
    level1.add_edge(START, "middle")
    level1.add_edge("middle", "tidy")
    return level1.compile(name="level1")


# -- conditional routing between model-calling nodes, and Command goto -----------------------------

class RouteState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    route: str


def build_router(route: str = "billing") -> Any:
    """triage (model) -> router picks ``billing`` or ``tech`` (each a model node) -> end."""
    triage_model = FakeToolCallingModel(model_name="triage-llm", responses=[ai(route)])
    billing_model = FakeToolCallingModel(model_name="billing-llm", responses=[ai("refund issued")])
    tech_model = FakeToolCallingModel(model_name="tech-llm", responses=[ai("rebooted")])

    def triage(state: RouteState) -> dict[str, Any]:
        reply = triage_model.invoke(state["messages"])
        return {"messages": [reply], "route": str(reply.content)}

    def pick(state: RouteState) -> str:
        return state["route"]

    def billing(state: RouteState) -> dict[str, Any]:
        return {"messages": [billing_model.invoke(state["messages"])]}

    def tech(state: RouteState) -> dict[str, Any]:
        return {"messages": [tech_model.invoke(state["messages"])]}

    graph = StateGraph(RouteState)
    graph.add_node("triage", triage)
    graph.add_node("billing", billing)
    graph.add_node("tech", tech)
    graph.add_edge(START, "triage")
    graph.add_conditional_edges("triage", pick, ["billing", "tech"])
    graph.add_edge("billing", END)
    graph.add_edge("tech", END)
    return graph.compile(name="helpdesk")


def build_command_handoffs() -> Any:
    """planner (model) returns ``Command(goto="team")``; inside the ``team`` subgraph,
    ``lead`` (model) hands off to the parent's ``reviewer`` with
    ``Command(goto="reviewer", graph=Command.PARENT)``; reviewer (model) ends."""
    planner_model = FakeToolCallingModel(model_name="planner-llm", responses=[ai("send it to the team")])
    lead_model = FakeToolCallingModel(model_name="lead-llm", responses=[ai("needs review")])
    reviewer_model = FakeToolCallingModel(model_name="reviewer-llm", responses=[ai("approved")])

    def planner(state: MessagesState) -> Command:
        return Command(goto="team", update={"messages": [planner_model.invoke(state["messages"])]})

    def lead(state: MessagesState) -> Command:
        reply = lead_model.invoke(state["messages"])
        return Command(goto="reviewer", graph=Command.PARENT, update={"messages": [reply]})

    team = StateGraph(MessagesState)
    team.add_node("lead", lead)
    team.add_edge(START, "lead")
    team = team.compile(name="team")

    def reviewer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [reviewer_model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("planner", planner, destinations=("team",))
    graph.add_node("team", team, destinations=("reviewer",))
    graph.add_node("reviewer", reviewer)
    graph.add_edge(START, "planner")
    graph.add_edge("reviewer", END)
    return graph.compile(name="handoffs")


# -- interrupt and resume ---------------------------------------------------------------------------

def build_interrupt() -> Any:
    """draft (model) -> approval subgraph: ``ask`` calls interrupt() -> publish (plain). Checkpointed."""
    draft_model = FakeToolCallingModel(model_name="draft-llm", responses=[ai("a draft")])

    def draft(state: MessagesState) -> dict[str, Any]:
        return {"messages": [draft_model.invoke(state["messages"])]}

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": "publish this draft?"})
        return {"messages": [HumanMessage(f"reviewer says {answer}")]}

    approval = StateGraph(MessagesState)
    approval.add_node("ask", ask)
    approval.add_edge(START, "ask")
    approval = approval.compile(name="approval")

    def publish(state: MessagesState) -> dict[str, Any]:
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("draft", draft)
    graph.add_node("approval", approval)
    graph.add_node("publish", publish)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "approval")
    graph.add_edge("approval", "publish")
    return graph.compile(name="publishing", checkpointer=MemorySaver())


# -- failures -------------------------------------------------------------------------------------

class BrokenNode(Exception):
    pass


def build_failing() -> Any:
    """ask (model) -> explode raises BrokenNode."""
    model = FakeToolCallingModel(model_name="ask-llm", responses=[ai("fine so far")])

    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def explode(state: MessagesState) -> dict[str, Any]:
        raise BrokenNode("the node broke")

    graph = StateGraph(MessagesState)
    graph.add_node("ask", ask)
    graph.add_node("explode", explode)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "explode")
    return graph.compile(name="failing")


def build_loop() -> Any:
    """thinker (model) loops on itself forever: only the recursion limit stops it."""
    model = FakeToolCallingModel(model_name="loop-llm", responses=[ai("again")])

    def thinker(state: CountState) -> dict[str, Any]:
        model.invoke([HumanMessage("think")])
        return {"count": state.get("count", 0) + 1}

    graph = StateGraph(CountState)
    graph.add_node("thinker", thinker)
    graph.add_edge(START, "thinker")
    graph.add_conditional_edges("thinker", lambda s: "thinker", ["thinker"])
    return graph.compile(name="loop")


# -- an agent app for stream modes and concurrency --------------------------------------------------

def build_agent_pipeline() -> Any:
    """A create_agent ``researcher`` node (calls ``lookup``) then a plain ``format`` node."""
    model = FakeToolCallingModel(model_name="researcher-llm", by_turn=True, responses=[
        ai(tool_calls=[tool_call("lookup", {"query": "langgraph"}, "call_lookup")]), ai("found it")])
    researcher = create_agent(model, [lookup], name="researcher")

    def format_(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("formatted")]}

    graph = StateGraph(MessagesState)
    graph.add_node("researcher", researcher)
    graph.add_node("format", format_)
    graph.add_edge(START, "researcher")
    graph.add_edge("researcher", "format")
    graph.add_edge("format", END)
    return graph.compile(name="pipeline")


# -- routing decisions with declared candidates (issue 13) ------------------------------------------

def build_path_map_router() -> Any:
    """supervisor (model) -> router with a path map: ``go_research`` -> researcher (model) ->
    supervisor -> ``FINISH`` -> END. The supervisor's model says which, turn by turn."""
    supervisor_model = FakeToolCallingModel(model_name="supervisor-llm", responses=[ai("research"), ai("finish")])
    researcher_model = FakeToolCallingModel(model_name="researcher-llm", responses=[ai("notes")])

    def supervisor(state: RouteState) -> dict[str, Any]:
        reply = supervisor_model.invoke(state["messages"])
        return {"messages": [reply], "route": str(reply.content)}

    def route(state: RouteState) -> str:
        return "go_research" if state["route"] == "research" else "FINISH"

    def researcher(state: RouteState) -> dict[str, Any]:
        return {"messages": [researcher_model.invoke(state["messages"])]}

    graph = StateGraph(RouteState)
    graph.add_node("supervisor", supervisor)
    graph.add_node("researcher", researcher)
    graph.add_edge(START, "supervisor")
    graph.add_conditional_edges("supervisor", route, {"go_research": "researcher", "FINISH": END})
    graph.add_edge("researcher", "supervisor")
    return graph.compile(name="path_map")


def build_literal_router(route: str = "tech") -> Any:
    """triage (model) -> a router whose targets are only its return type,
    ``Literal["billing", "tech"]`` (no path map) -> the chosen model node -> END."""
    triage_model = FakeToolCallingModel(model_name="triage-llm", responses=[ai(route)])
    billing_model = FakeToolCallingModel(model_name="billing-llm", responses=[ai("refund issued")])
    tech_model = FakeToolCallingModel(model_name="tech-llm", responses=[ai("rebooted")])

    def triage(state: RouteState) -> dict[str, Any]:
        reply = triage_model.invoke(state["messages"])
        return {"messages": [reply], "route": str(reply.content)}

    def pick(state: RouteState) -> Literal["billing", "tech"]:
        return "billing" if state["route"] == "billing" else "tech"

    def billing(state: RouteState) -> dict[str, Any]:
        return {"messages": [billing_model.invoke(state["messages"])]}

    def tech(state: RouteState) -> dict[str, Any]:
        return {"messages": [tech_model.invoke(state["messages"])]}

    graph = StateGraph(RouteState)
    graph.add_node("triage", triage)
    graph.add_node("billing", billing)
    graph.add_node("tech", tech)
    graph.add_edge(START, "triage")
    graph.add_conditional_edges("triage", pick)
    graph.add_edge("billing", END)
    graph.add_edge("tech", END)
    return graph.compile(name="literal_router")


def build_command_end() -> Any:
    """triager (model, returns ``Command[Literal["fixer", "__end__"]]``) goes to fixer;
    fixer (model, ``destinations=("triager", END)``) ends the run with ``Command(goto=END)``."""
    triager_model = FakeToolCallingModel(model_name="triager-llm", responses=[ai("a bug")])
    fixer_model = FakeToolCallingModel(model_name="fixer-llm", responses=[ai("fixed")])

    def triager(state: MessagesState) -> Command[Literal["fixer", "__end__"]]:
        return Command(goto="fixer", update={"messages": [triager_model.invoke(state["messages"])]})

    def fixer(state: MessagesState) -> Command:
        return Command(goto=END, update={"messages": [fixer_model.invoke(state["messages"])]})

    graph = StateGraph(MessagesState)
    graph.add_node("triager", triager)
    graph.add_node("fixer", fixer, destinations=("triager", END))
    graph.add_edge(START, "triager")
    return graph.compile(name="command_end")


# -- a ReAct agent whose pre_model_hook trims the history it sends (issue 30) -------------------

def build_trimming_agent() -> Any:
    """create_react_agent ``calc`` calls ``add(1, 2)`` (call_a), then ``add(3, 4)``
    (call_b), then answers "3 and 7". Its ``pre_model_hook`` sends the model the
    first message and the last two only, so the third call reads
    [human, the add(3, 4) call, its result]: 3 of the 5 messages, not an
    extension of what the second call read."""
    model = FakeToolCallingModel(model_name="calc-llm", responses=[  # in order: the trimmed prompts hide turns
        ai(tool_calls=[tool_call("add", {"a": 1, "b": 2}, "call_a")]),
        ai(tool_calls=[tool_call("add", {"a": 3, "b": 4}, "call_b")]),
        ai("3 and 7")])

    def trim(state: dict[str, Any]) -> dict[str, Any]:
        messages = state["messages"]
        return {"llm_input_messages": messages[:1] + messages[1:][-2:] if len(messages) > 3 else messages}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return create_react_agent(model, [add], pre_model_hook=trim, name="calc")


# -- one conversation over two runs on one thread (issue 30) -----------------------------------

def build_resumable_chat() -> Any:
    """create_agent ``chat_agent`` with a checkpointer: invoked twice on one
    thread (``{"configurable": {"thread_id": ...}}``), it answers "hello there"
    in the first run and "second answer" in the second, whose prompt holds
    the first run's question, that answer, and the new question."""
    model = FakeToolCallingModel(model_name="chat-llm", responses=[ai("hello there"), ai("second answer")])
    return create_agent(model, [add], name="chat_agent", checkpointer=MemorySaver())


def build_resumable_helpdesk() -> Any:
    """triage (model) -> billing (model) -> end, checkpointed: invoked twice on
    one thread, each run's prompts hold the earlier run's messages. triage
    answers "to billing" then "to billing again"; billing "refund issued"
    then "invoice sent". No message names its speaker (plain model nodes)."""
    triage_model = FakeToolCallingModel(model_name="triage-llm", responses=[ai("to billing"), ai("to billing again")])
    billing_model = FakeToolCallingModel(model_name="billing-llm", responses=[ai("refund issued"), ai("invoice sent")])

    def triage(state: MessagesState) -> dict[str, Any]:
        return {"messages": [triage_model.invoke(state["messages"])]}

    def billing(state: MessagesState) -> dict[str, Any]:
        return {"messages": [billing_model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("triage", triage)
    graph.add_node("billing", billing)
    graph.add_edge(START, "triage")
    graph.add_edge("triage", "billing")
    graph.add_edge("billing", END)
    return graph.compile(name="helpdesk", checkpointer=MemorySaver())
