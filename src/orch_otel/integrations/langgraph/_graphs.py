"""What a compiled graph declares about its nodes: the action space of each
routing decision.

Callbacks name the router that ran and the value it returned, but not the
graph, so neither the path map that turns that value into a node nor the
candidates the node could have chosen. Those live on the compiled graph
(``Pregel.nodes``: one ``PregelNode`` per node key). ``wrap_defaults`` tells
the handler which compiled graph each graph run is. ``Pregel.stream`` and
``Pregel.astream`` (which every invoke, batch and astream_events goes
through) call the private ``Pregel._defaults`` and then, in the same
thread and with no callback in between, start the graph's run
(``on_chain_start``, with the handler inline). The wrap of ``_defaults``
notes the graph and the run name it is about to use; the handler gives the
graph to the next graph run of that name in that thread. Nothing the graph,
the app or other handlers see changes (the config is not touched). Under
asyncio, an async inline handler ahead of ours could let another graph's
run slip in between; a run whose name does not match then simply gets no
graph (its decisions keep their targets, without options).

The readers below look at a ``PregelNode`` read-only, as LangGraph itself
builds it (``langgraph/graph/state.py``: ``attach_node``, ``attach_edge``,
``attach_branch``; ``langgraph/graph/_branch.py``: ``BranchSpec``):

- a conditional edge is a writer whose function is bound to a ``BranchSpec``;
  ``BranchSpec.ends`` is its path map (label -> node; a list of targets or a
  ``Literal`` return type becomes ``{name: name}``), ``None`` when undeclared;
- ``Command`` destinations (``add_node(..., destinations=...)`` or a
  ``Command[Literal[...]]`` return annotation) are the ``static`` writes of
  the ``ChannelWriteTupleEntry`` whose mapper handles commands;
- a static edge ``add_edge(a, b)`` is a ``ChannelWriteEntry`` to ``b``'s
  channel (an edge to END writes nothing);
- handoff tools are the tools of a ``ToolNode`` whose metadata names a
  ``__handoff_destination`` (langgraph-supervisor, langgraph-swarm), or
  ``return_direct`` tools named ``transfer_to_<agent>`` (the Functional
  API's agent networks, where the caller reads the call and runs that agent);
- a tool node is a node whose runnable has ``tools_by_name`` (``ToolNode``).
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from .._patch import Patches, after

_log = logging.getLogger(__name__)

END = "__end__"
BRANCH_CHANNEL = "branch:to:"
HANDOFF_DESTINATION = "__handoff_destination"
_TRANSFER_NAME = re.compile(r"^(?:transfer|handoff)_?to_?(.+)$", re.IGNORECASE)


def wrap_defaults(patches: Patches, note: Callable[[str, Any], None]) -> None:
    """Wrap ``Pregel._defaults`` so that ``note(name, graph)`` is called just
    before the graph's run starts, in the thread that starts it."""
    try:
        pregel = importlib.import_module("langgraph.pregel.main").Pregel
        pregel.__dict__["_defaults"]
    except (ImportError, AttributeError, KeyError):
        _log.info("orch-otel: langgraph.pregel.main.Pregel._defaults not found; routing options and "
                  "path maps will not be recorded")
        return

    def noted(graph: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        config = args[0] if args else kwargs["config"]
        note(str(config.get("run_name") or graph.get_name()), graph)  # the name Pregel.stream gives its next run

    patches.wrap(pregel, "_defaults", after(noted, "noting a LangGraph graph run"))


# -- readers of one PregelNode ----------------------------------------------------------------

def _branch_spec(writer: Any) -> Any:
    spec = getattr(getattr(writer, "func", None), "__self__", None)
    return spec if spec is not None and hasattr(spec, "ends") and hasattr(spec, "path") else None


def branches(node: Any) -> list[Any]:
    """The ``BranchSpec`` of each conditional edge out of ``node``."""
    return [spec for spec in map(_branch_spec, getattr(node, "writers", None) or ()) if spec is not None]


def branch_of(node: Any, router_name: str) -> Any:
    """The conditional edge a router run belongs to: the only one, or the one whose path has its name."""
    specs = branches(node)
    if len(specs) == 1:
        return specs[0]
    for spec in specs:
        if getattr(spec.path, "name", None) == router_name:
            return spec
    return None


def resolve(spec: Any, result: Any) -> tuple[list[str], int, list[str]]:
    """``(nodes, Send packets, labels)`` of a router result: the nodes it goes
    to through the path map, as ``BranchSpec._finish`` maps them (a ``Send``
    packet names its own node), and the labels that were mapped."""
    results = result if isinstance(result, (list, tuple)) else [result]
    ends = getattr(spec, "ends", None) if spec is not None else None
    nodes: list[str] = []
    labels: list[str] = []
    sends = 0
    for item in results:
        target = getattr(item, "node", None)
        if isinstance(target, str):
            nodes.append(target)
            sends += 1
            continue
        if ends and isinstance(item, Hashable) and item in ends:
            target = ends[item]
        else:
            target = item
        if isinstance(target, str):
            nodes.append(target)
            labels.append(str(item))
    return nodes, sends, labels


def path_map_targets(spec: Any) -> list[str] | None:
    """The nodes a conditional edge declares it may route to (END included), or None."""
    ends = getattr(spec, "ends", None) if spec is not None else None
    if not ends:
        return None
    return _unique(str(v) for v in ends.values())


def command_destinations(node: Any) -> list[str] | None:
    """The nodes a node declares its ``Command`` may go to (END included), or None."""
    targets: list[str] = []
    for writer in getattr(node, "writers", None) or ():
        for entry in getattr(writer, "writes", None) or ():
            static = getattr(entry, "static", None)
            if static and hasattr(entry, "mapper"):
                for write in static:
                    channel = write[0] if isinstance(write, Sequence) and write else None
                    if isinstance(channel, str):
                        targets.append(channel[len(BRANCH_CHANNEL):] if channel.startswith(BRANCH_CHANNEL) else channel)
    return _unique(targets) or None


def has_edges(node: Any) -> bool:
    """Does the node have a static edge (to a node) or a conditional edge out?"""
    for writer in getattr(node, "writers", None) or ():
        if _branch_spec(writer) is not None:
            return True
        for entry in getattr(writer, "writes", None) or ():
            channel = getattr(entry, "channel", None)
            if isinstance(channel, str) and not hasattr(entry, "static"):
                return True
    return False


def _tools(node: Any) -> dict[str, Any] | None:
    tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
    return tools if isinstance(tools, dict) else None


def is_tool_node(node: Any) -> bool:
    return _tools(node) is not None


def node_named(graph: Any, name: str) -> Any:
    nodes = getattr(graph, "nodes", None)
    return nodes.get(name) if isinstance(nodes, dict) else None


def _handoff_target(tool: Any) -> str | None:
    metadata = getattr(tool, "metadata", None)
    if isinstance(metadata, dict) and metadata.get(HANDOFF_DESTINATION):
        return str(metadata[HANDOFF_DESTINATION])
    if getattr(tool, "return_direct", False) is True:
        match = _TRANSFER_NAME.match(str(getattr(tool, "name", "")))
        return match.group(1) if match else None
    return None


def handoff_tools(node: Any) -> dict[str, str]:
    """Tool name -> the agent it hands off to, for the handoff tools of a tool node."""
    out = {}
    for name, tool in (_tools(node) or {}).items():
        target = _handoff_target(tool)
        if target is not None:
            out[str(name)] = target
    return out


def agent_handoff_tools(graph: Any) -> dict[str, str]:
    """The handoff tools of every tool node of a compiled agent graph."""
    out: dict[str, str] = {}
    nodes = getattr(graph, "nodes", None)
    for node in nodes.values() if isinstance(nodes, dict) else ():
        out.update(handoff_tools(node))
    return out


def direct_handoff(node: Any, tool_name: str) -> str | None:
    """The agent a ``return_direct`` handoff tool of a tool node hands off to, or None."""
    tool = (_tools(node) or {}).get(tool_name)
    return _handoff_target(tool) if getattr(tool, "return_direct", False) is True else None


def direct_handoff_tools(graph: Any) -> dict[str, str]:
    """The ``return_direct`` handoff tools of a compiled agent graph (tool -> agent)."""
    nodes = getattr(graph, "nodes", None)
    return {tool: target for node in (nodes.values() if isinstance(nodes, dict) else ())
            for tool in _tools(node) or () if (target := direct_handoff(node, tool)) is not None}


def may_go_to(node: Any, target: str) -> bool:
    """Can ``node`` go on to ``target``: a static edge to it, or a conditional
    edge (whose result is not known before it runs)?"""
    for writer in getattr(node, "writers", None) or ():
        if _branch_spec(writer) is not None:
            return True
        for entry in getattr(writer, "writes", None) or ():
            channel = getattr(entry, "channel", None)
            if isinstance(channel, str) and not hasattr(entry, "static") and channel in (target, BRANCH_CHANNEL + target):
                return True
    return False


def handoff_destinations(node: Any) -> list[str] | None:
    """The agents the handoff tools of a tool node hand off to, or None."""
    return _unique(handoff_tools(node).values()) or None


def without_end(names: list[str] | None) -> list[str] | None:
    if names is None:
        return None
    return [name for name in names if name != END] or None


def _unique(names: Any) -> list[str]:
    return list(dict.fromkeys(names))
