"""Routing decisions of the LangGraph handler (a mixin of
``OrchestrationHandler``): what a router, a ``Command`` or a handoff chose,
among which candidates, and which agent stopped its graph.

The candidates come from the compiled graph (``_graphs.py``); a decision
whose graph is unknown keeps its target and has no ``options``.
"""

from __future__ import annotations

from typing import Any

from ...recorder import Recorder
from ...vocabulary import StopReason
from . import _extract as ex
from . import _graphs as gr
from ._runs import NODE, ROUTER, SUBGRAPH, Run

COMMAND_END = "Command(goto=END)"
ANSWER = "answer"  # an agent that could hand off finished without doing so


def node_spec(node: Run | None) -> Any:
    """The compiled graph's ``PregelNode`` of a node run, when the graph is known."""
    if node is None or node.kind != NODE or node.parent is None:
        return None
    graph = node.parent.graph
    nodes = getattr(graph, "nodes", None)
    return nodes.get(node.name) if isinstance(nodes, dict) else None


def _nearest_node(run: Run | None) -> Run | None:
    while run is not None and run.kind != NODE:
        run = run.parent
    return run


class RoutesMixin:
    """Delegations, fan-outs and agent stops; needs ``recorder``."""

    @property
    def recorder(self) -> Recorder:  # pragma: no cover - overridden
        raise NotImplementedError

    def _route(self, run: Run, goto: Any) -> None:
        """A router's result or a node's ``Command(goto=...)``: delegation, a
        ``Send`` fan-out, or a stop (a route to END)."""
        node = run if run.kind == NODE else run.parent
        graph = node.parent if node is not None else None
        if node is None or graph is None or graph.prebuilt:
            return  # a prebuilt agent's own loop (model -> tools) is not orchestration
        spec = node_spec(node)
        if run.kind == ROUTER:
            branch = gr.branch_of(spec, run.name) if spec is not None else None
            names, sends, labels = gr.resolve(branch, goto)
            options = gr.path_map_targets(branch)
            source = f"{run.name}:{','.join(labels)}" if labels else run.name
        else:
            names, sends = ex.goto_targets(goto)
            options = gr.command_destinations(spec)
            source = COMMAND_END
        targets = [name for name in names if name != gr.END]
        scope = node.scope()
        if scope is None or scope.inv is None:
            return
        if not targets:
            if names:  # only END: the deciding agent ends its graph
                scope.inv.stop(StopReason.END.value, source=source)
            return
        if sends:
            graph.fanout_size = sends
            graph_scope = graph.scope()
            if graph_scope is not None and graph_scope.inv is not None:
                self.recorder.spawn(names, options=gr.without_end(options), span=graph_scope.inv.span)
            return
        self.recorder.delegate(targets[0] if len(targets) == 1 else targets, options=gr.without_end(options),
                               span=scope.inv.span)

    def _parent_handoff(self, run: Run, command: Any) -> None:
        """A ``Command(graph=PARENT)`` from node ``run``: the candidates are the
        node's declared destinations, else those the parent graph declares for
        the node that hosts this graph."""
        names, _ = ex.goto_targets(getattr(command, "goto", None))
        scope = run.scope()
        if not names or scope is None or scope.inv is None:
            return
        targets = [name for name in names if name != gr.END]
        if not targets:
            scope.inv.stop(StopReason.END.value, source=COMMAND_END)
            return
        options = gr.without_end(gr.command_destinations(node_spec(_nearest_node(run))))
        if options is None and run.parent is not None:
            options = gr.without_end(gr.command_destinations(node_spec(run.parent.enclosing_node())))
        self.recorder.delegate(targets[0] if len(targets) == 1 else targets, options=options, span=scope.inv.span)

    def _handoff_options(self, tool_run: Run, scope: Run) -> list[str] | None:
        """The candidates of a handoff tool: the handoff tools of the tool node
        it ran in, else the destinations declared for the agent's node."""
        options = gr.handoff_destinations(node_spec(_nearest_node(tool_run.parent)))
        if options is None:
            host = scope.parent if scope.why == SUBGRAPH else scope
            options = gr.without_end(gr.command_destinations(node_spec(_nearest_node(host))))
        return options

    def _answer_stop(self, agent: Run, node: Run | None, subgraph: Any = None) -> None:
        """An agent whose node may leave only by a ``Command`` (declared
        destinations, no edge out) finished without one: it ended its graph.
        ``subgraph``: the compiled graph the agent is, when it is a subgraph run;
        it must be the node itself (a graph invoked inside the node's own code
        leaves the routing to that code)."""
        spec = node_spec(node)
        if spec is None or agent.inv is None:
            return
        if agent.why == SUBGRAPH and (subgraph is None or getattr(spec, "bound", None) is not subgraph):
            return
        if gr.command_destinations(spec) and not gr.has_edges(spec):
            agent.inv.stop(StopReason.END.value, source=ANSWER)
