"""LangGraph app shapes of the fidelity suite, each with its truth written by
hand from the app's code (see tests/fidelity.py for what each field means;
the apps are in tests/langgraph_apps.py).

Conventions of these truths, from LangGraph's semantics:
- every agent a graph runs (a subgraph node, a prebuilt agent, a ``Send``
  target, a node that calls a model) is an instance spawned by the graph's
  agent (the workflow for the top-level graph);
- a conditional edge decides for the agent of its source node (the workflow
  when that node is no agent); its options are the nodes its path map or
  its return type declares, END left out; a route to END is that agent's stop;
- a ``Command`` decides for the node that returns it; its options are the
  node's declared destinations; a handoff tool's options are the handoff
  tools its agent was given;
- an agent that may leave only by a ``Command`` (langgraph-supervisor's
  supervisor, swarm agents) and answers instead ends the run itself;
- a tool node (``ToolNode``) is no agent: routing to it is no delegation, and
  the tool calls it runs are the agent's whose model asked for them (one
  instance across its tool loop);
- a graph that a tool or a Functional API ``@task`` invokes is an agent named
  by the graph's own name, spawned by the agent that called the tool (its
  spawn decision: the model asked for that call) or by the entrypoint for a
  task, one instance per call;
- a ``Send`` fan-out is the spawn decision of the node that sent it;
- a top-level graph run inside a run the app records (``orch_otel.workflow``)
  is an agent named by the graph's name, spawned by that run's agent.
"""

from __future__ import annotations

import langgraph_apps as apps
import langgraph_shapes as shapes
from fidelity import Aggregate, Case, Delegation, Spawn, Stop, Truth
from langchain_core.messages import HumanMessage
from langgraph.errors import GraphRecursionError

import orch_otel


def _supervisor() -> None:
    apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))


def _swarm() -> None:
    apps.build_swarm().invoke(apps.user_input("what is 2+2?"), {"configurable": {"thread_id": "swarm-1"}})


def _fanout() -> None:
    apps.build_fanout(3).invoke({})


def _nested() -> None:
    apps.build_nested().invoke(apps.user_input())


def _path_map_router() -> None:
    apps.build_path_map_router().invoke(apps.user_input("find out"))


def _list_router() -> None:
    apps.build_router("billing").invoke(apps.user_input("my bill"))


def _literal_router() -> None:
    apps.build_literal_router("tech").invoke(apps.user_input("it is broken"))


def _command_handoffs() -> None:
    apps.build_command_handoffs().invoke(apps.user_input())


def _command_end() -> None:
    apps.build_command_end().invoke(apps.user_input("it crashes"))


def _interrupted() -> None:
    apps.build_interrupt().invoke(apps.user_input("write a post"), {"configurable": {"thread_id": "fid-interrupt"}})


def _recursion_limit() -> None:
    try:
        apps.build_loop().invoke({}, {"recursion_limit": 4})
    except GraphRecursionError:
        pass  # the app's caller sees the limit; the trace must say it was forced


def _agent_pipeline() -> None:
    apps.build_agent_pipeline().invoke(apps.user_input("research langgraph"))


SUPERVISOR_WORKERS = frozenset({"math_expert", "research_expert"})
# build_supervisor's run: supervisor -> math_expert (add) -> supervisor -> research_expert (lookup) -> supervisor
SUPERVISOR_DELEGATIONS = (
    Delegation("supervisor", "math_expert", SUPERVISOR_WORKERS),
    Delegation("supervisor", "research_expert", SUPERVISOR_WORKERS),
)
SUPERVISOR_TOOL_CALLS = (
    ("supervisor", "transfer_to_math_expert", "call_to_math"),
    ("math_expert", "add", "call_add"),
    ("supervisor", "transfer_to_research_expert", "call_to_research"),
    ("research_expert", "lookup", "call_lookup"),
)

CASES: list[Case] = [
    Case(
        framework="langgraph",
        run=_supervisor,
        truth=Truth(
            app="langgraph-supervisor: supervisor -> math_expert -> supervisor -> research_expert -> supervisor ends",
            instances={"supervisor": 3, "math_expert": 1, "research_expert": 1},
            delegations=SUPERVISOR_DELEGATIONS,
            tool_calls=SUPERVISOR_TOOL_CALLS,
            # its last turn answers with no handoff: the supervisor itself ends the run
            stop=Stop("supervisor", reason="", forced=False),
            topology="centralized",
        ),
    ),
    Case(
        framework="langgraph",
        run=_swarm,
        truth=Truth(
            app="langgraph-swarm: the active-agent router picks Alice; Alice hands off to Bob; Bob adds and answers",
            instances={"Alice": 1, "Bob": 1},
            delegations=(
                # create_swarm's START router, path map = the agents
                Delegation("swarm", "Alice", frozenset({"Alice", "Bob"})),
                # Alice was given one handoff tool
                Delegation("Alice", "Bob", frozenset({"Bob"})),
            ),
            tool_calls=(("Alice", "transfer_to_bob", "call_to_bob"), ("Bob", "add", "call_bob_add")),
            stop=Stop("Bob", reason="", forced=False),  # Bob could hand back to Alice; he answers instead
            topology="swarm",
        ),
    ),
    Case(
        framework="langgraph",
        run=_fanout,
        truth=Truth(
            app="Send fan-out: prepare sends 3 worker branches (each: model, lookup); merge fans them in",
            instances={"worker": 3},
            tool_calls=(("worker", "lookup", "call_w"),) * 3,
            aggregates=(Aggregate("fanout", ("worker", "worker", "worker")),),  # merge is a plain node
            stop=Stop("fanout", reason="end"),
            spawned_by={"worker": "fanout"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_nested,
        truth=Truth(
            app="3 levels of graphs: level1 -> middle (level2 as a node) -> call_inner invokes level3 -> leaf asks a model",
            instances={"middle": 1, "call_inner": 1, "leaf": 1},
            stop=Stop("level1", reason="end"),
            topology="hierarchical",
            spawned_by={"middle": "level1", "call_inner": "middle", "leaf": "call_inner"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_path_map_router,
        truth=Truth(
            app="router with a path map: supervisor -go_research-> researcher -> supervisor -FINISH-> END",
            instances={"supervisor": 2, "researcher": 1},
            delegations=(Delegation("supervisor", "researcher", frozenset({"researcher"})),),
            stop=Stop("supervisor", reason="end"),  # FINISH maps to END: the supervisor's router ends the run
        ),
    ),
    Case(
        framework="langgraph",
        run=_list_router,
        truth=Truth(
            app="router with a list of targets: triage -> billing -> END (static edge)",
            instances={"triage": 1, "billing": 1},
            delegations=(Delegation("triage", "billing", frozenset({"billing", "tech"})),),
            stop=Stop("helpdesk", reason="end"),
        ),
    ),
    Case(
        framework="langgraph",
        run=_literal_router,
        truth=Truth(
            app="router with no path map, targets from its Literal return type: triage -> tech -> END",
            instances={"triage": 1, "tech": 1},
            delegations=(Delegation("triage", "tech", frozenset({"billing", "tech"})),),
            stop=Stop("literal_router", reason="end"),
        ),
    ),
    Case(
        framework="langgraph",
        run=_command_handoffs,
        truth=Truth(
            app="Command goto: planner -> team; inside team, lead hands off to the parent's reviewer (Command.PARENT)",
            instances={"planner": 1, "team": 1, "lead": 1, "reviewer": 1},
            delegations=(
                Delegation("planner", "team", frozenset({"team"})),  # destinations=("team",)
                Delegation("lead", "reviewer", frozenset({"reviewer"})),  # the parent declares team -> reviewer
            ),
            stop=Stop("handoffs", reason="end"),
            spawned_by={"lead": "team", "team": "handoffs"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_command_end,
        truth=Truth(
            app="Command[Literal] destinations: triager -> fixer; fixer ends with Command(goto=END)",
            instances={"triager": 1, "fixer": 1},
            delegations=(Delegation("triager", "fixer", frozenset({"fixer"})),),  # Literal["fixer", "__end__"]
            stop=Stop("fixer", reason="end"),
        ),
    ),
    Case(
        framework="langgraph",
        run=_interrupted,
        truth=Truth(
            app="interrupt: draft -> approval subgraph, whose ask node calls interrupt(); the run pauses",
            instances={"draft": 1, "approval": 1},
            stop=Stop("publishing", reason="interrupt", forced=True),  # a pause is not the app's end
        ),
    ),
    Case(
        framework="langgraph",
        run=_recursion_limit,
        truth=Truth(
            app="recursion limit: thinker routes to itself until LangGraph's limit (4 steps) stops the run",
            instances={"thinker": 4},
            delegations=(Delegation("thinker", "thinker", frozenset({"thinker"})),) * 4,
            stop=Stop("loop", reason="recursion_limit", forced=True),
        ),
    ),
    Case(
        framework="langgraph",
        run=_agent_pipeline,
        truth=Truth(
            app="create_agent as a node: researcher (model, lookup, model) -> format (plain) -> END",
            instances={"researcher": 1},
            tool_calls=(("researcher", "lookup", "call_lookup"),),
            stop=Stop("pipeline", reason="end"),
        ),
    ),
]


def _tool_loop_router() -> None:
    shapes.build_tool_loop_router().invoke(apps.user_input("fix it"))


def _agents_as_tools() -> None:
    shapes.build_agents_as_tools().invoke(apps.user_input("report on otel"))


def _task_tool() -> None:
    shapes.build_task_tool().invoke(apps.user_input("report on otel"))


def _functional_reviews() -> None:
    shapes.build_functional_reviews().invoke("a text")


def _advisor_network() -> None:
    shapes.build_advisor_network().invoke([HumanMessage("a trip to Aruba")])


def _planner_split() -> None:
    shapes.build_planner_split().invoke(apps.user_input("plan it"))


def _single_agent() -> None:
    shapes.build_single_agent().invoke(apps.user_input("find otel"))


def _supervisor_self_binding() -> None:
    shapes.build_supervisor(bind_returns_self=True).invoke(apps.user_input("what is 1+2?"))


def _supervisor_math_only() -> None:
    shapes.build_supervisor(math_only=True).invoke(apps.user_input("what is 1+2?"))


def _inside_workflow() -> None:
    with orch_otel.workflow("support", task_id="ticket-40"):
        apps.build_supervisor().invoke(apps.user_input("what is 1+2?"))


# the shapes the LangGraph and LangChain docs teach (issue 32)
DOCS_SHAPES: list[Case] = [
    Case(
        framework="langgraph",
        run=_tool_loop_router,
        truth=Truth(
            app="hand-written tool loop in a router app: triage -> coder (model, ToolNode, tools_condition) -> END",
            instances={"triage": 1, "coder": 1},  # coder's second model turn, after its tools, is the same instance
            delegations=(Delegation("triage", "coder", frozenset({"coder", "writer"})),),  # the router's list
            tool_calls=(("coder", "run_code", "call_run"),),  # coder's model asked for it; the ToolNode ran it
            stop=Stop("coder", reason="end"),  # tools_condition sends coder's answer to END
            topology="centralized",  # the graph's router sends the work to its own agents; no peer handoff
            spawned_by={"triage": "dev_desk", "coder": "dev_desk"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_agents_as_tools,
        truth=Truth(
            app="agents as tools: lead calls research (researcher agent), then research + write in parallel",
            instances={"researcher": 2, "writer": 1},  # create_agent(name=...), one instance per call
            tool_calls=(
                ("lead", "research", "call_r1"), ("lead", "research", "call_r2"), ("lead", "write", "call_w1"),
                ("researcher", "lookup", "call_lookup"), ("researcher", "lookup", "call_lookup"),
            ),
            # each tool call the lead's model made starts its agent
            spawns=(Spawn("lead", ("researcher",)), Spawn("lead", ("researcher",)), Spawn("lead", ("writer",))),
            stop=Stop("lead", reason="end"),
            topology="centralized",
            spawned_by={"researcher": "lead", "writer": "lead"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_task_tool,
        truth=Truth(
            app="a task tool starting sub-agents by type: lead -> task(researcher) -> task(writer)",
            instances={"researcher": 1, "writer": 1},
            tool_calls=(("lead", "task", "call_t1"), ("lead", "task", "call_t2"),
                        ("researcher", "lookup", "call_lookup")),
            spawns=(Spawn("lead", ("researcher",)), Spawn("lead", ("writer",))),
            stop=Stop("lead", reason="end"),
            spawned_by={"researcher": "lead", "writer": "lead"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_functional_reviews,
        truth=Truth(
            app="Functional API: one generic @task runs two create_agent reviewers",
            instances={"style_reviewer": 1, "fact_reviewer": 1},
            spawns=(Spawn("LangGraph", ("style_reviewer",)), Spawn("LangGraph", ("fact_reviewer",))),
            stop=Stop("LangGraph", reason="end"),  # @entrypoint() gives the graph LangGraph's default name
            spawned_by={"style_reviewer": "LangGraph", "fact_reviewer": "LangGraph"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_advisor_network,
        truth=Truth(
            app="Functional API network: travel_advisor hands off (return_direct tool) to hotel_advisor, who answers",
            instances={"travel_advisor": 1, "hotel_advisor": 1},
            delegations=(Delegation("travel_advisor", "hotel_advisor", frozenset({"hotel_advisor"})),),
            tool_calls=(("travel_advisor", "transfer_to_hotel_advisor", "call_to_hotel"),
                        ("hotel_advisor", "hotels", "call_hotels")),
            stop=Stop("hotel_advisor", reason="end"),  # it could hand back to travel; it answers: the loop ends
            topology="swarm",
            tools_given={"hotel_advisor": frozenset({"hotels", "transfer_to_travel_advisor"})},
        ),
    ),
    Case(
        framework="langgraph",
        run=_planner_split,
        truth=Truth(
            app="a model-calling planner returns Command(goto=[Send(worker)] * 3); merge fans in",
            instances={"planner": 1, "worker": 3},
            tool_calls=(("worker", "lookup", "call_w"),) * 3,
            spawns=(Spawn("plan_split", ("planner",)), Spawn("planner", ("worker", "worker", "worker"))),
            aggregates=(Aggregate("plan_split", ("worker", "worker", "worker")),),  # merge is a plain node
            stop=Stop("plan_split", reason="end"),
            spawned_by={"planner": "plan_split", "worker": "plan_split"},
        ),
    ),
    Case(
        framework="langgraph",
        run=_single_agent,
        truth=Truth(
            app="a single create_agent: solo calls lookup and answers",
            instances={},
            tool_calls=(("solo", "lookup", "call_solo"),),
            stop=Stop("solo", reason="end"),
            topology="harness",
            metrics={"agents": 1, "max_depth": 1},  # the run is one agent, at the root
        ),
    ),
    Case(
        framework="langgraph",
        run=_supervisor_self_binding,
        truth=Truth(
            app="langgraph-supervisor whose models' bind_tools return the model itself: as the standard supervisor",
            instances={"supervisor": 3, "math_expert": 1, "research_expert": 1},
            delegations=SUPERVISOR_DELEGATIONS,
            tool_calls=SUPERVISOR_TOOL_CALLS,
            stop=Stop("supervisor", reason="end"),
            topology="centralized",
        ),
    ),
    Case(
        framework="langgraph",
        run=_supervisor_math_only,
        truth=Truth(
            app="langgraph-supervisor: supervisor -> math_expert -> supervisor answers; research_expert never runs",
            instances={"supervisor": 2, "math_expert": 1},
            delegations=(Delegation("supervisor", "math_expert", SUPERVISOR_WORKERS),),
            tool_calls=(("supervisor", "transfer_to_math_expert", "call_to_math"), ("math_expert", "add", "call_add")),
            stop=Stop("supervisor", reason="end"),
            topology="centralized",
            tools_given={"supervisor": frozenset({"transfer_to_math_expert", "transfer_to_research_expert"})},
        ),
    ),
    Case(
        framework="langgraph",
        run=_inside_workflow,
        truth=Truth(
            app="langgraph-supervisor inside the app's orch_otel.workflow('support'): the app's run spawns the graph",
            # the graph is one agent of the app's run; the supervisor and its workers are the graph's
            instances={"supervision": 1, "supervisor": 3, "math_expert": 1, "research_expert": 1},
            spawned_by={"supervision": "support", "supervisor": "supervision", "math_expert": "supervision",
                        "research_expert": "supervision"},
            delegations=SUPERVISOR_DELEGATIONS,
            tool_calls=SUPERVISOR_TOOL_CALLS,
            stop=Stop("supervisor", reason="end"),  # its answer ends the graph; the app's block then ends its run
            # the app's workflow only wraps the graph (no model, no decision of its own): not a level
            topology="centralized",
            task_id="ticket-40",
            system="custom",
        ),
    ),
]
CASES += DOCS_SHAPES
