"""What the handler knows about one LangChain run, and how it classifies runs.

LangGraph reports every graph, node, router, tool and model call as a
LangChain run (``run_id`` / ``parent_run_id``). The handler keeps one small
``Run`` per open run and decides from tags, metadata and the tree itself
what the run is (rules in ``docs/langgraph.md``):

- a **node** run carries a ``graph:step:N`` tag; its parent run is the graph;
- a **graph** run is the parent of a node run (found at its first node), or a
  parentless run whose metadata says LangGraph started it;
- a **router** (conditional edge) is a child of a node with a ``seq:step:N``
  tag, N >= 2; its output is the routing decision;
- tool and model runs come through their own callbacks.

Only some runs own a span (the workflow, agents, tools, model calls); every
other run belongs to the nearest ancestor that owns one.
"""

from __future__ import annotations

from typing import Any, NamedTuple
from uuid import UUID

from opentelemetry.context import Context
from opentelemetry.trace import SpanContext

from ..._invocation import Invocation

OTHER, GRAPH, NODE, ROUTER, TOOL, LLM = range(6)

# Why a node or graph run owns an agent span. TOOLS: a tool node that runs the
# tool calls of the agent node that routed to it holds that agent's span.
# SPAWNED: a top-level graph run inside a run the app (or another framework) records.
SEND, SUBGRAPH, CALLS_LLM, WORKFLOW, TOOLS, SPAWNED = "send", "subgraph", "llm", "workflow", "tools", "spawned"
RUN_ROOTS = frozenset({WORKFLOW, SPAWNED})  # the graph runs that end a LangGraph run (interrupts, limits)

SYSTEM = "langgraph"  # the orch.system of every run this integration records
GRAPH_INTEGRATIONS = frozenset({"langgraph", "langchain_create_agent"})
CREATE_AGENT = "langchain_create_agent"
DEFAULT_GRAPH_NAME = "LangGraph"
END = "__end__"
PUSH = "__pregel_push"
# The model-calling runnable of langgraph.prebuilt.create_react_agent's "agent" node.
REACT_MODEL_STEPS = frozenset({"call_model", "acall_model"})
NO_RESUME = object()


TASK_ID_KEY = "orch.task_id"  # optional run metadata: the trace's task id (precedence: _task.root_task_id)
TOPOLOGY_KEY = "orch.topology"  # optional run metadata: the trace's topology
_NO_METADATA: dict[str, Any] = {}


class Interrupt(NamedTuple):
    """An interrupted run a resume on its thread links to, and its task (the resume joins it)."""

    span: SpanContext
    task_id: str | None


class Run:
    """One open LangChain run, created on every callback's hot path: ``__init__``
    sets four fields, everything else is a class-level default until a run
    needs its own value, and metadata is read only by the few runs that become
    graphs, nodes or roots."""

    # what the run is, and the span it owns (if any)
    kind = OTHER
    inv: Invocation | None = None
    why: str | None = None
    step: int | None = None
    push_index: int | None = None
    triggers: Any = None
    # graph runs
    graph: Any = None  # the compiled graph (Pregel), when known
    prebuilt = False
    fanout_size: int | None = None
    finished: list[tuple[Any, str, bool]] | None = None
    # an agent node's span kept open across its tool loop: node key expected next -> (span, agent, its step)
    loops: dict[str, tuple[Invocation, str, int]] | None = None
    handed_off = False  # a prebuilt agent ran one of its return_direct handoff tools
    # node runs: the agent this node is or hosts
    agent_name: str | None = None
    absorbed = False
    loop_to: str | None = None  # an agent node routed to this tool node: its span stays open
    # run roots: how many times each routing function ran
    router_calls: dict[str, int] | None = None
    # run roots
    ambient: Context | None = None
    inputs: Any = None  # kept only while content is captured: the run's input, for replay
    resume: Any = NO_RESUME
    interrupted = False
    # control flow already recorded by a descendant (handoff)
    handoff_done = False
    handoff_to: str | None = None

    metadata: dict[str, Any] = _NO_METADATA  # LangChain's own dict for the run, never copied

    def __init__(self, run_id: UUID, parent: Run | None, name: str) -> None:
        self.run_id = run_id
        self.parent = parent
        self.name = name
        self.root: Run = parent.root if parent is not None else self

    @property
    def node_key(self) -> str | None:
        return self.metadata.get("langgraph_node")

    @property
    def integration(self) -> str | None:
        return self.metadata.get("ls_integration")

    @property
    def lc_agent(self) -> str | None:
        return self.metadata.get("lc_agent_name")

    @property
    def thread_id(self) -> str | None:
        return _text(self.metadata.get("thread_id"))

    @property
    def task_id(self) -> str | None:
        return _text(self.metadata.get(TASK_ID_KEY))

    @property
    def topology(self) -> str | None:
        return _text(self.metadata.get(TOPOLOGY_KEY))

    def scope(self) -> Run | None:
        """The nearest run, this one included, that owns a span."""
        run: Run | None = self
        while run is not None and run.inv is None:
            run = run.parent
        return run

    def enclosing_node(self) -> Run | None:
        run = self.parent
        while run is not None and run.kind != NODE:
            run = run.parent
        return run

    def hosting_call(self, node: Run | None) -> Run | None:
        """The tool run, or the Functional API ``@task`` run, between this
        (graph) run and its enclosing ``node``: the graph is that call's, not the node's."""
        run: Run | None = self
        while run is not None and run is not node:
            if run.kind == TOOL:
                return run
            key = run.node_key
            if key is not None and node is not None and key != node.name:
                return run  # a task the node's code called (its run, or the graph's, names it)
            run = run.parent
        return None

    def count_router(self) -> int:
        """This router run's call number among the run's calls of its routing function."""
        root = self.root
        if root.router_calls is None:
            root.router_calls = {}
        n = root.router_calls[self.name] = root.router_calls.get(self.name, 0) + 1
        return n

    def within(self, ancestor: Run) -> bool:
        run: Run | None = self
        while run is not None:
            if run is ancestor:
                return True
            run = run.parent
        return False


def has_step_tag(tags: list[str] | None) -> bool:
    if tags:
        for tag in tags:
            if tag.startswith("graph:step:"):
                return True
    return False


def is_router_tag(tags: list[str] | None) -> bool:
    if tags:
        for tag in tags:
            if tag.startswith("seq:step:") and tag != "seq:step:1":
                return True
    return False


def push_index(triggers: Any, path: Any) -> int | None:
    """The Send index of a pushed task (``langgraph_path == ("__pregel_push", i, ...)``)."""
    if triggers and triggers[0] == PUSH and path and len(path) > 1 and path[0] == PUSH:
        index = path[1]
        if isinstance(index, int) and not isinstance(index, bool):
            return index
    return None


def joins(triggers: Any) -> bool:
    if triggers:
        for trigger in triggers:
            if isinstance(trigger, str) and trigger.startswith("join:"):
                return True
    return False


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
