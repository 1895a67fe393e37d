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
  ``__handoff_destination`` (langgraph-supervisor, langgraph-swarm).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from .._patch import Patches, after

_log = logging.getLogger(__name__)

END = "__end__"
BRANCH_CHANNEL = "branch:to:"
HANDOFF_DESTINATION = "__handoff_destination"


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


def handoff_destinations(node: Any) -> list[str] | None:
    """The agents the handoff tools of a tool node hand off to, or None."""
    tools = getattr(getattr(node, "bound", None), "tools_by_name", None)
    if not isinstance(tools, dict):
        return None
    targets = []
    for tool in tools.values():
        metadata = getattr(tool, "metadata", None)
        if isinstance(metadata, dict) and metadata.get(HANDOFF_DESTINATION):
            targets.append(str(metadata[HANDOFF_DESTINATION]))
    return _unique(targets) or None


def without_end(names: list[str] | None) -> list[str] | None:
    if names is None:
        return None
    return [name for name in names if name != END] or None


def _unique(names: Any) -> list[str]:
    return list(dict.fromkeys(names))
