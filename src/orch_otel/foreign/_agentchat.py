"""AutoGen teams as OpenInference's autogen-agentchat instrumentor logs them
(read from its wrappers, 0.1.x): a ``<TeamClass>.run_stream`` chain with the
team's participants, an ``<agent>.on_messages_stream`` AGENT span per turn
(``graph.node.id``; ``graph.node.parent_id`` is the previous speaker), a
``<agent>.<tool>`` TOOL span per tool call (no call id), and the model
clients' ``create`` LLM spans.

Each turn is a delegation by the team (implied: the log shows the turn, not
the choice), with the participants as the candidates only when there is one
(a team of one has no choice). A ``transfer_to_X`` tool followed by X's turn
is a handoff (implied). No stop is logged: the converter's implied end.
"""

from __future__ import annotations

from typing import Any

from ..content import ContentPolicy
from ..spans import SpanRecord
from ..vocabulary import Attr, DecisionKind, Operation
from ._langchain_views import openinference_view
from ._langgraph import model_attrs
from ._native import agent_attrs, decision, message, native, put_content

SCOPE = "openinference.instrumentation.autogen_agentchat"
_HANDOFF_PREFIX = "transfer_to_"


def map_agentchat(spans: list[SpanRecord], recorded_by: str, policy: ContentPolicy | None) -> list[SpanRecord]:
    by_id = {s.span_id: s for s in spans}
    root = min((s for s in spans if s.parent_id not in by_id), key=lambda s: (s.start_ns, s.span_id))
    names = root.attributes.get("participant_names")
    participants = [str(p) for p in names] if isinstance(names, (list, tuple)) else []
    turns = sorted((s for s in spans if s.attributes.get("openinference.span.kind") == "AGENT"),
                   key=lambda s: (s.start_ns, s.span_id))
    team = root.name.removesuffix(".run_stream")
    out: dict[str, SpanRecord] = {}
    root_events = []
    for turn in turns:
        name = str(turn.attributes.get("graph.node.id") or turn.name.removesuffix(".on_messages_stream"))
        out[turn.span_id] = native(turn, agent_attrs(name))
        if turn.parent_id == root.span_id:
            root_events.append(decision(turn.start_ns, DecisionKind.DELEGATE, [name], implied=True,
                                        options=participants if len(participants) == 1 else None))
    for span in spans:
        seen = openinference_view(span)
        if span.span_id in out or span is root or seen.kind == "chain":
            continue
        attrs: dict[str, Any]
        if seen.kind == "tool":
            tool = seen.tool or span.name
            attrs = {Attr.OPERATION: Operation.EXECUTE_TOOL.value, Attr.TOOL_NAME: tool}
            put_content(attrs, Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS, span.attributes.get("tool.parameters"), policy)
            out[span.span_id] = native(span, attrs, _handoff(span, tool, turns, participants))
        else:
            out[span.span_id] = native(span, model_attrs(seen, policy))
    root_attrs = agent_attrs(team, workflow=True, extra={Attr.SYSTEM: "autogen", Attr.RECORDED_BY: recorded_by})
    put_content(root_attrs, Attr.INPUT_REF, Attr.RUN_INPUT, root.attributes.get("input.value"), policy)
    out[root.span_id] = native(root, root_attrs, root_events)
    return [out.get(s.span_id, s) for s in spans]


def _handoff(tool_span: SpanRecord, tool: str, turns: list[SpanRecord], participants: list[str]) -> list:
    """A handoff tool whose target takes the next turn: the agent delegated to it."""
    wanted = tool.removeprefix(_HANDOFF_PREFIX) if tool.startswith(_HANDOFF_PREFIX) else None
    if wanted is None or wanted not in participants:
        return []
    after = [t for t in turns if t.start_ns >= tool_span.end_ns]
    if not after or after[0].attributes.get("graph.node.id") != wanted:
        return []
    sender = tool_span.name.split(".", 1)[0]
    return [decision(tool_span.end_ns, DecisionKind.DELEGATE, [wanted], implied=True),
            message(tool_span.end_ns, sender, [wanted], "handoff", implied=True)]
