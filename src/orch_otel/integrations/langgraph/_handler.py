"""The LangChain callback handler that turns a LangGraph run into orch-otel spans.

It is injected into every callback manager through LangChain's configure hook
and runs inline (``run_inline``), so under asyncio its methods run in the
event-loop thread in callback order. The span tree is built only from
``run_id`` / ``parent_run_id``; the handler never attaches or detaches the
ambient OpenTelemetry context (see ``_context.py`` for how code inside a node
sees the node's span). Being inline would hide async completion LLMs' starts
from the app's other handlers in langchain-core; ``_llm_start.py`` keeps them.

Every callback does O(1) work (plus a walk up the few open ancestors of the
run); control flow (``ParentCommand`` handoffs, ``GraphInterrupt``) is
recognised before any error work, and nothing of the graph state is read.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langgraph.errors import (
    GraphDrained,
    GraphRecursionError,
)
from langgraph.types import Command
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link

from ..._faults import log_fault
from ..._invocation import ERROR, HANDOFF, INTERRUPTED, OK, in_run
from ..._task import root_task_id
from ...recorder import Recorder, get_recorder
from ...vocabulary import Attr, StopReason
from . import _graphs as gr
from ._calls import CallsMixin, context_of, outcome_of, private_run
from ._extract import run_input_view
from ._routes import RoutesMixin, node_spec
from ._runs import (
    CALLS_LLM,
    CREATE_AGENT,
    DEFAULT_GRAPH_NAME,
    GRAPH,
    GRAPH_INTEGRATIONS,
    NO_RESUME,
    NODE,
    REACT_MODEL_STEPS,
    ROUTER,
    RUN_ROOTS,
    SEND,
    SPAWNED,
    SUBGRAPH,
    SYSTEM,
    TOOL,
    TOOLS,
    WORKFLOW,
    Interrupt,
    Run,
    has_step_tag,
    is_router_tag,
    joins,
    push_index,
)

_log = logging.getLogger(__name__)

_MAX_INTERRUPTED = 10_000

class OrchestrationHandler(RoutesMixin, CallsMixin, BaseCallbackHandler):
    """Maps LangChain/LangGraph callbacks to orch-otel spans and span events."""

    run_inline = True  # async runs: call us in the event loop, in order, not in an executor
    raise_error = False

    def __init__(self, recorder: Recorder | None = None) -> None:
        super().__init__()
        self.enabled = True
        self._recorder = recorder
        self._runs: dict[UUID, Run] = {}
        self._interrupted: OrderedDict[str, Interrupt] = OrderedDict()
        self._next_graph = threading.local()  # (run name, compiled graph) about to start, per thread

    def note_graph(self, name: str, graph: Any) -> None:
        """``graph`` (a compiled ``Pregel``) starts its run, named ``name``, next in this thread."""
        if self.enabled:
            self._next_graph.value = (name, graph)

    @property
    def recorder(self) -> Recorder:
        return self._recorder or get_recorder()

    # -- chains: graphs, nodes, routers --------------------------------------------------

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                       tags: list[str] | None = None, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not self.enabled:
            return
        try:
            self._chain_start(inputs, run_id, parent_run_id, tags, metadata or {}, kwargs.get("name"), serialized)
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph on_chain_start failed")

    def _chain_start(self, inputs: Any, run_id: UUID, parent_run_id: UUID | None, tags: list[str] | None,
                     md: dict[str, Any], name: Any, serialized: Any) -> None:
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        if not name and serialized:
            name = serialized.get("name")
        run = Run(run_id, parent, str(name) if name else "chain")
        self._runs[run_id] = run
        upcoming = getattr(self._next_graph, "value", None)
        if upcoming is not None and upcoming[0] == run.name and not has_step_tag(tags):
            run.graph = upcoming[1]
            self._next_graph.value = None
        if parent is not None and has_step_tag(tags):
            self._node_start(run, parent, md)
            return
        run.metadata = md  # a node's metadata is read in _node_start only
        if isinstance(inputs, Command) and inputs.resume is not None:
            run.resume = inputs.resume
        if parent is None:
            run.ambient = otel_context.get_current()
            if self.recorder.content.capture:
                run.inputs = inputs
            if run.integration in GRAPH_INTEGRATIONS:
                self._become_graph(run)
        elif parent.kind == NODE:
            if is_router_tag(tags):
                run.kind = ROUTER
            elif run.name in REACT_MODEL_STEPS and parent.name == "agent" and parent.parent is not None:
                parent.parent.prebuilt = True  # langgraph.prebuilt.create_react_agent's model step
                if parent.parent.inv is not None and parent.parent.why in (SUBGRAPH, SPAWNED):
                    parent.parent.inv.set(Attr.AGENT_ROLE, "agent")

    def _node_start(self, run: Run, graph: Run, md: dict[str, Any]) -> None:
        run.kind = NODE
        if graph.kind != GRAPH:
            self._become_graph(graph)
        run.step = md.get("langgraph_step")
        run.triggers = md.get("langgraph_triggers")
        run.push_index = push_index(run.triggers, md.get("langgraph_path"))
        if graph.loops:
            self._resume_loop(run, graph)
        if graph.finished and run.push_index is None:
            self._maybe_aggregate(run, graph)
        if run.push_index is not None and not graph.prebuilt and not run.name.startswith("__"):
            scope = graph.scope()
            run.inv = self.recorder.agent(
                run.name, role="worker", spawned=True, fanout_index=run.push_index,
                fanout_size=graph.fanout_size, system=SYSTEM,
            ).start(attach=False, parent=context_of(scope, graph.root))
            run.why = SEND
            run.agent_name = run.name

    @staticmethod
    def _resume_loop(run: Run, graph: Run) -> None:
        """An agent node's tool loop: the tool node it routed to runs under the
        agent's open span, and the agent node, back from its tools, is the same
        instance. A loop that does not come back next step ends the span."""
        loops = graph.loops
        assert loops is not None
        entry = loops.pop(run.name, None)
        if entry is not None:
            run.inv, agent, _ = entry
            if run.name == agent:
                run.why, run.agent_name = CALLS_LLM, agent
            else:
                run.why, run.loop_to = TOOLS, agent
        for key, (inv, _, step) in list(loops.items()):
            if run.step is not None and run.step > step + 1:
                del loops[key]
                inv.end()

    @staticmethod
    def _park_loop(run: Run) -> bool:
        """Keep the span of an agent node that routed to its tool node (or of
        the tool node that may go back to it) open for the next step's node."""
        graph = run.parent
        if graph is None or run.inv is None or run.loop_to is None or run.why not in (CALLS_LLM, TOOLS):
            return False
        if run.why == TOOLS and not gr.may_go_to(node_spec(run), run.loop_to):
            return False  # the tools lead elsewhere: the agent's turn is over
        agent = run.name if run.why == CALLS_LLM else run.loop_to
        if graph.loops is None:
            graph.loops = {}
        graph.loops[run.loop_to] = (run.inv, agent, run.step or 0)
        return True

    @staticmethod
    def _end_loops(graph: Run, outcome: str = OK, error: BaseException | None = None) -> None:
        for inv, _, _ in (graph.loops or {}).values():
            inv.end(outcome=outcome, error=error if outcome == ERROR else None)
        graph.loops = None

    def _become_graph(self, run: Run) -> None:
        """``run`` is a (sub)graph: the run root becomes the workflow, a nested
        graph an agent spawned by its enclosing agent."""
        run.kind = GRAPH
        run.finished = []
        outer = run.parent
        if run.integration == CREATE_AGENT and (
            outer is None or outer.integration != CREATE_AGENT or outer.lc_agent != run.lc_agent
        ):
            run.prebuilt = True
        scope = outer.scope() if outer is not None else None
        if scope is None:
            ambient = run.ambient if run.ambient is not None else run.root.ambient
            if in_run(ambient):  # the app's run (or another framework's) runs the graph: a sub-agent it spawned
                self._start_spawned(run, ambient)
            else:
                self._start_workflow(run)
            return
        node = run.enclosing_node()
        if scope is node and node is not None and node.why == SEND and not node.absorbed:
            node.absorbed = True  # a Send target that runs a subgraph: one agent, the node's
            return
        call = run.hosting_call(node)  # a tool or a @task runs the graph: it is named by its own name
        if call is None:
            name = run.node_key or run.name
        else:
            name = run.name if run.name != DEFAULT_GRAPH_NAME else (call.name if call.kind == TOOL else
                                                                    call.node_key or call.name)
            # one spawn decision per call: the model that called the tool (the code that called the task) chose it
            self.recorder.spawn(name, span=scope.inv.span)  # type: ignore[union-attr]
        run.inv = self.recorder.agent(
            name, agent_id=run.name if run.name not in (DEFAULT_GRAPH_NAME, name) else None,
            role="agent" if run.prebuilt else "team", spawned=True, system=SYSTEM,
        ).start(attach=False, parent=scope.inv.context)  # type: ignore[union-attr]
        run.why = SUBGRAPH
        run.agent_name = name
        if node is not None and node.agent_name is None and call is None:
            node.agent_name = name

    def _resumed(self, run: Run) -> Interrupt | None:
        """The root span (and task) of the interrupted run this run resumes, if known."""
        if run.resume is NO_RESUME or run.thread_id is None:
            return None
        return self._interrupted.pop(run.thread_id, None)

    def _start_spawned(self, run: Run, ambient: Any) -> None:
        """A top-level graph inside the app's run: an agent that run's current
        agent spawned, named after the graph; the app's root stays the trace's
        root (its task id, its system, its replay input)."""
        recorder = self.recorder
        span = trace.get_current_span(ambient)
        recorder.spawn(run.name, span=span)
        run.inv = recorder.agent(
            run.name, role="agent" if run.prebuilt else "team", spawned=True, system=SYSTEM,
        ).start(attach=False, parent=ambient)
        run.root.inputs = None
        run.why = SPAWNED
        run.agent_name = run.name
        if run.resume is not NO_RESUME:
            previous = self._resumed(run)
            # an interrupt in this same trace is not another run to chain a replay to
            resume_of = None
            if previous is not None and previous.span.trace_id != span.get_span_context().trace_id:
                resume_of = format(previous.span.trace_id, "032x")
            recorder.human_intervention(run.resume, resume_of=resume_of, span=run.inv.span)

    def _start_workflow(self, run: Run) -> None:
        recorder = self.recorder
        thread_id = run.thread_id
        links = None
        resume_of = None
        previous = self._resumed(run)
        if previous is not None:
            links = [Link(previous.span, {"orch.link": "resume_of"})]
            resume_of = format(previous.span.trace_id, "032x")
        task_id = root_task_id(run.task_id, previous.task_id if previous is not None else None, thread_id)
        run.inv = recorder.workflow(
            run.name, task_id=task_id, conversation_id=thread_id, system=SYSTEM,
            topology=run.topology, links=links, input=run_input_view(run.root.inputs, thread_id),
        ).start(attach=False, parent=run.ambient if run.ambient is not None else run.root.ambient)
        run.root.inputs = None
        run.why = WORKFLOW
        if run.resume is not NO_RESUME:
            recorder.human_intervention(run.resume, resume_of=resume_of, span=run.inv.span)

    def _maybe_aggregate(self, run: Run, graph: Run) -> None:
        """Fan-in: a pulled node after Send branches (or a join after parallel agents)."""
        finished = graph.finished or []
        previous = [(name, pushed) for step, name, pushed in finished if step is not None and step == (run.step or 0) - 1]
        graph.finished = []
        if not previous:
            return
        if any(pushed for _, pushed in previous) or (len(previous) > 1 and joins(run.triggers)):
            scope = graph.scope()
            if scope is not None:
                sources = [name for name, _ in previous]  # one per branch: the fan-in's width
                self.recorder.aggregate(sources=sources, span=scope.inv.span)  # type: ignore[union-attr]

    def on_chain_end(self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None or not self.enabled:
            return
        try:
            kind = run.kind
            if kind == ROUTER:
                self._route(run, outputs, run.count_router())
            elif kind == NODE:
                if isinstance(outputs, Command) and outputs.goto:
                    self._route(run, outputs.goto)
                elif run.inv is not None and run.why == CALLS_LLM:
                    self._answer_stop(run, run)
                self._node_end(run)
            elif kind == GRAPH and run.inv is not None:
                self._end_loops(run)
                if run.parent is None or run.why in RUN_ROOTS:
                    self._end_root(run, OK)
                else:
                    if run.why == SUBGRAPH:
                        self._answer_stop(run, run.parent, run.graph)
                    run.inv.end()
            elif run.inv is not None:
                run.inv.end()
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph on_chain_end failed")

    def _node_end(self, run: Run, outcome: str = OK, error: BaseException | None = None) -> None:
        if run.inv is not None and not (outcome == OK and self._park_loop(run)):
            run.inv.end(outcome=outcome, error=error if outcome == ERROR else None)
        if run.agent_name is not None and run.parent is not None and run.parent.finished is not None:
            run.parent.finished.append((run.step, run.agent_name, run.push_index is not None))

    def on_chain_error(self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None,
                       **kwargs: Any) -> None:
        run = self._runs.pop(run_id, None)
        if run is None or not self.enabled:
            return
        try:
            outcome = outcome_of(error)
            if outcome == HANDOFF:
                self._handoff(run, error)
            elif outcome == INTERRUPTED:
                run.root.interrupted = True
            if run.kind == GRAPH:
                self._end_loops(run, outcome, error)
            if run.kind == NODE:
                self._node_end(run, outcome, error)
            elif run.inv is not None:
                if run.why in RUN_ROOTS:
                    self._end_root(run, outcome, error)
                else:
                    run.inv.end(outcome=outcome, error=error if outcome == ERROR else None)
        except Exception:
            log_fault(_log, logging.DEBUG, "orch-otel: langgraph on_chain_error failed")

    def _handoff(self, run: Run, error: BaseException) -> None:
        """A ``Command(graph=PARENT)`` travelling up: record the delegation once, at its origin."""
        if not run.handoff_done:
            self._parent_handoff(run, error.args[0] if error.args else None)
        if run.parent is not None:
            run.parent.handoff_done = True

    def _end_root(self, run: Run, outcome: str, error: BaseException | None = None) -> None:
        inv = run.inv
        assert inv is not None
        reason = None
        if outcome == OK and run.interrupted:
            outcome = INTERRUPTED
        if outcome == INTERRUPTED:
            reason = "drained" if isinstance(error, GraphDrained) else StopReason.INTERRUPT.value
            if run.thread_id is not None:
                task_id = (getattr(inv.span, "attributes", None) or {}).get(Attr.TASK_ID)
                self._remember_interrupt(run.thread_id, Interrupt(inv.span.get_span_context(),
                                                                  str(task_id) if task_id else None))
        elif isinstance(error, GraphRecursionError):
            # the runtime's step limit, not a choice: a forced stop (recorded before the error ends the span)
            inv.stop(StopReason.RECURSION_LIMIT.value, source="GraphRecursionError", forced=True)
        inv.end(outcome=outcome, stop_reason=reason, error=error if outcome == ERROR else None)

    def _remember_interrupt(self, thread_id: str, interrupt: Interrupt) -> None:
        if not interrupt.span.is_valid:
            return
        self._interrupted[thread_id] = interrupt
        self._interrupted.move_to_end(thread_id)
        while len(self._interrupted) > _MAX_INTERRUPTED:
            self._interrupted.popitem(last=False)

    def enter_run_context(self, config: Any) -> None:
        """Called inside LangGraph's/LangChain's private context copy for a run step:
        make the span of that run (or its nearest traced ancestor) current there."""
        if not self.enabled or not config:
            return
        callbacks = config.get("callbacks")
        run_id = getattr(callbacks, "parent_run_id", None)
        if run_id is None:
            return
        run = self._runs.get(run_id)
        if run is None:
            return
        private_run.set(run)
        scope = run.scope()
        if scope is not None:
            otel_context.attach(scope.inv.context)  # type: ignore[union-attr,arg-type]  # private copy: never detached

