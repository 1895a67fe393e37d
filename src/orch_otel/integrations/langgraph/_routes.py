"""Routing decisions of the LangGraph handler (a mixin of
``OrchestrationHandler``): what a router, a ``Command`` or a handoff chose,
among which candidates, and which agent stopped its graph.

The candidates come from the compiled graph (``_graphs.py``); a decision
whose graph is unknown keeps its target and has no ``options``.
"""

from __future__ import annotations

from typing import Any

from ..._invocation import Route
from ...recorder import Recorder
from ...vocabulary import StopReason
from . import _extract as ex
from . import _graphs as gr
from ._runs import CALLS_LLM, NODE, ROUTER, SUBGRAPH, Run

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

    def _route(self, run: Run, goto: Any, call: int | None = None) -> None:
        """A router's result (``call``: its call number in the run) or a node's
        ``Command(goto=...)``: delegation, a ``Send`` fan-out, or a stop (a route to END).
        A route to a tool node is no decision: the tools run the agent's calls."""
        node = run if run.kind == NODE else run.parent
        graph = node.parent if node is not None else None
        if node is None or graph is None or graph.prebuilt:
            return  # a prebuilt agent's own loop (model -> tools) is not orchestration
        spec = node_spec(node)
        route = None
        if run.kind == ROUTER:
            branch = gr.branch_of(spec, run.name) if spec is not None else None
            names, sends, labels = gr.resolve(branch, goto)
            options = gr.path_map_targets(branch)
            source = f"{run.name}:{','.join(labels)}" if labels else run.name
            route = Route(router=run.name, router_call=call)
        else:
            names, sends = ex.goto_targets(goto)
            options = gr.command_destinations(spec)
            source = COMMAND_END
        if not sends:
            tool_nodes = {n for n in names if gr.is_tool_node(gr.node_named(graph.graph, n))}
            if tool_nodes:
                if node.why == CALLS_LLM:
                    node.loop_to = min(tool_nodes)  # the agent's span stays open while its tools run
                names = [n for n in names if n not in tool_nodes]
                if not names:
                    return
            if options is not None:
                options = [n for n in options if not gr.is_tool_node(gr.node_named(graph.graph, n))]
        targets = [name for name in names if name != gr.END]
        scope = node.scope()
        if scope is None or scope.inv is None:
            return
        if not targets:
            if names:  # only END: the deciding agent ends its graph
                scope.inv.stop(StopReason.END.value, source=source, route=route,
                               options=gr.without_end(options) if route is not None else None)
            return
        if sends:  # a fan-out, decided by the agent of the node that sent it
            graph.fanout_size = sends
            self.recorder.spawn(names, options=gr.without_end(options), span=scope.inv.span, route=route)
            return
        self.recorder.delegate(targets[0] if len(targets) == 1 else targets, options=gr.without_end(options),
                               span=scope.inv.span, route=route)

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

    def _direct_handoff(self, tool_run: Run, output: Any) -> bool:
        """A ``return_direct`` handoff tool (``transfer_to_<agent>``) ended its
        agent's turn: the app's code runs that agent next. Recorded as the
        calling agent's delegation, with a handoff message (the tool's
        output); True when it was one."""
        node = _nearest_node(tool_run.parent)
        spec = node_spec(node)
        target = gr.direct_handoff(spec, tool_run.name)
        scope = tool_run.parent.scope() if tool_run.parent is not None else None
        if target is None or scope is None or scope.inv is None:
            return False
        tools = gr.handoff_tools(spec)
        span = scope.inv.span
        self.recorder.delegate(target, options=gr.without_end(_unique(tools.values())), span=span,
                               route=Route(handoff_tools=tools))
        self.recorder.message(ex.tool_output(output), recipients=[target], sender=scope.agent_name or scope.name,
                              message_type="handoff", span=span)
        scope.handed_off = True
        return True

    def _handoff_route(self, tool_run: Run) -> Route | None:
        """The handoff tools of the tool node a handoff tool ran in (for a fork to pick another)."""
        tools = gr.handoff_tools(node_spec(_nearest_node(tool_run.parent)))
        return Route(handoff_tools=tools) if tools else None

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
        if agent.inv is None:
            return
        if agent.why == SUBGRAPH and agent.prebuilt and not agent.handed_off and gr.direct_handoff_tools(agent.graph):
            # it could have handed off through a return_direct tool and answered instead
            tools = gr.agent_handoff_tools(agent.graph)
            agent.inv.stop(StopReason.END.value, source=ANSWER, route=Route(handoff_tools=tools))
            return
        spec = node_spec(node)
        if spec is None:
            return
        if agent.why == SUBGRAPH and (subgraph is None or getattr(spec, "bound", None) is not subgraph):
            return
        if gr.command_destinations(spec) and not gr.has_edges(spec):
            declared = gr.agent_handoff_tools(subgraph)  # the agent's own handoff tools, for a fork
            agent.inv.stop(StopReason.END.value, source=ANSWER, route=Route(handoff_tools=declared) if declared else None)


def _unique(names: Any) -> list[str]:
    return list(dict.fromkeys(names))
