"""The single mapping from a tree of finished spans to a replayable trace.

The live exporter and the offline readers both call :func:`convert`, so live
and offline output cannot drift apart. The function is pure: span records in,
a trace dict (shaped by :mod:`orch_otel.models`) and the captured contents out.
The mapping rules are documented in ``docs/trace-format.md``.

Modules: ``_intake`` checks the spans first (no orch-otel span: not a run;
context above the run; clock steps; sizes), ``_builder`` walks the span tree into events (``_values``: the
strings, records and coercers the modules share), ``_spawns`` pairs
spawns with their decisions, ``_instances`` names each agent invocation,
``_edges`` derives edges, costs and metrics, and ``topology`` infers the
topology an app did not state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from ..spans import SpanRecord
from ..vocabulary import Attr, Topology
from ._builder import _END, _Builder
from ._edges import costs_and_metrics, edges
from ._instances import assign_instances, number_instances
from ._intake import NotOrchestration, intake
from ._spawns import cover_spawns
from ._values import _put, _seconds
from .topology import infer_topology

__all__ = ["Conversion", "NotOrchestration", "content_refs", "convert"]

_START = attrgetter("start_ns")
_TOPOLOGIES = frozenset(t.value for t in Topology)


@dataclass
class Conversion:
    trace: dict[str, Any]
    contents: dict[str, str]  # content ref -> JSON text (only what was captured)
    orphans: int = 0  # spans whose parent was missing, plus parent cycles broken
    problems: list[str] = field(default_factory=list)  # data the converter had to leave out or repair
    incomplete: bool = False  # a stop decision has reason "incomplete"


def convert(spans: Iterable[SpanRecord], *, complete: bool = True) -> Conversion:
    """Map the finished spans of one trace to a replayable trace.

    ``complete=False`` marks a trace written before its root ended (memory
    bound, shutdown, crash); it then gets a stop decision with reason
    ``incomplete``. Raises :class:`NotOrchestration` when no span is
    orch-otel's (an HTTP request's spans, a peer's): no run to write. Spans
    of other instrumentations above the run (a web server's) are left out,
    and times and sizes are checked first (``_intake``; repairs in ``problems``).
    """
    repairs: list[str] = []
    b = _Builder(intake(spans, repairs))
    b.problems.extend(repairs)
    b.walk()
    b.ensure_stop(complete)
    ordered = cover_spawns(b)
    instance_of, children = number_instances(b.scopes)
    assign_instances(ordered, b.scopes, instance_of, children)
    t0 = min(map(_START, b.by_id.values()))
    t_end = max(map(_END, b.by_id.values()))
    events: list[dict[str, Any]] = []
    for index, ev in enumerate(ordered, start=1):
        data = ev.data
        data["id"] = f"e{index}"
        data["t"] = _seconds(ev.t_ns - t0)
        events.append(data)
    trace_id = next(iter(b.by_id.values())).trace_id
    roots_first = sorted(b.by_id.values(), key=lambda s: (s.parent_id is not None, s.start_ns))
    run_input = roots_first[0].attributes.get(Attr.INPUT_REF)
    if run_input and roots_first[0].span_id in b.scopes:  # the run's input, on the trace's first event
        events[0]["run_input_ref"] = str(run_input)
    recorded_by = roots_first[0].attributes.get(Attr.RECORDED_BY)
    if recorded_by:  # a foreign log: which instrumentation wrote it, on the first event (the trace has no free field)
        events[0]["recorded_by"] = str(recorded_by)
    trace: dict[str, Any] = {
        "trace_id": trace_id,
        "task_id": _first_attr(roots_first, Attr.TASK_ID) or _first_attr(roots_first, Attr.CONVERSATION_ID) or trace_id,
    }
    _put(trace, "system", _first_attr(roots_first, Attr.SYSTEM))
    stated = _first_attr(roots_first, Attr.TOPOLOGY)
    if stated is not None and stated not in _TOPOLOGIES:
        b.problems.append(f"{Attr.TOPOLOGY} {stated!r} is not one of {', '.join(sorted(_TOPOLOGIES))}; "
                          "the topology was inferred instead")
        stated = None
    trace["topology"] = stated or infer_topology(b.scopes, instance_of, children, events)
    trace["events"] = events
    trace["edges"] = edges(ordered, b)
    trace["rewards"] = b.rewards
    trace["costs"], trace["metrics"] = costs_and_metrics(b, events, t_end - t0)
    return Conversion(trace, b.contents, b.orphans, b.problems, b.incomplete)


def content_refs(trace: dict[str, Any]) -> set[str]:
    """Every content ref a trace's events name (``content_ref``, ``input_ref``, ...)."""
    return {value for event in trace["events"] for key, value in event.items()
            if key.endswith("_ref") and isinstance(value, str)}


def _first_attr(roots_first: list[SpanRecord], key: str) -> str | None:
    for span in roots_first:
        value = span.attributes.get(key)
        if value:
            return str(value)
    return None
