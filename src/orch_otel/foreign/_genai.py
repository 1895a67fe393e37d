"""Spans that follow the OpenTelemetry GenAI semantic conventions, whoever
wrote them (Microsoft Agent Framework, Google ADK, pydantic-ai, AutoGen's
tool spans, ...): the reader other frameworks reach first.

The operation name says what a span is: ``invoke_workflow`` and
``invoke_agent`` are agent runs (an invocation inside another agent's is its
sub-agent, so spawned), ``execute_tool`` a tool call (``gen_ai.tool.call.id``),
``chat`` / ``text_completion`` / ``generate_content`` a model call. The
handoff proposal's ``gen_ai.agent.handoff.source.name`` / ``.target.name``
is a delegation. ``create_agent`` defines an agent; it is not part of a run.
Content attributes are kept only under the content policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..content import ContentPolicy
from ..spans import SpanRecord
from ..vocabulary import Attr, DecisionKind, Operation
from ._native import count, decision, native, operation, put_content

_MODEL_OPS = frozenset({"chat", "text_completion", "generate_content"})
_AGENT_OPS = frozenset({Operation.INVOKE_AGENT.value, Operation.INVOKE_WORKFLOW.value})
DEFINITION_OPS = frozenset({"create_agent"})
HANDOFF_SOURCE = "gen_ai.agent.handoff.source.name"
HANDOFF_TARGET = "gen_ai.agent.handoff.target.name"
_KEPT = (Attr.AGENT_NAME, Attr.AGENT_ID, Attr.AGENT_DESCRIPTION, Attr.WORKFLOW_NAME, Attr.CONVERSATION_ID,
         Attr.TOOL_NAME, Attr.TOOL_CALL_ID, Attr.TOOL_TYPE, Attr.REQUEST_MODEL, Attr.RESPONSE_MODEL,
         Attr.PROVIDER, Attr.INPUT_TOKENS, Attr.OUTPUT_TOKENS, Attr.ERROR_TYPE)
_COUNTS = frozenset({Attr.INPUT_TOKENS, Attr.OUTPUT_TOKENS})
_CONTENT = ((Attr.INPUT_REF, Attr.INPUT_MESSAGES), (Attr.OUTPUT_REF, Attr.OUTPUT_MESSAGES),
            (Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS), (Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT))


def genai_span(span: SpanRecord, policy: ContentPolicy | None, **extra: Any) -> SpanRecord | None:
    """One GenAI-convention span as orch-otel's own, or None when it plays no role."""
    attrs = span.attributes
    op = operation(attrs)
    if op in _MODEL_OPS:
        op = Operation.CHAT.value
    elif op not in _AGENT_OPS and op != Operation.EXECUTE_TOOL.value:
        return None
    out: dict[str, Any] = {Attr.OPERATION: op}
    if Attr.PROVIDER not in attrs and isinstance(attrs.get("gen_ai.system"), str):
        out[Attr.PROVIDER] = attrs["gen_ai.system"]  # the name before semconv 1.37
    for key in _KEPT:
        if key in attrs:
            out[key] = count(attrs[key]) if key in _COUNTS else attrs[key]
    for ref_key, text_key in _CONTENT:
        put_content(out, ref_key, text_key, attrs.get(text_key), policy)
    out.update(extra)
    events = []
    source, target = attrs.get(HANDOFF_SOURCE), attrs.get(HANDOFF_TARGET)
    if isinstance(target, str) and target:
        events.append(decision(span.start_ns, DecisionKind.DELEGATE, [target]))
        if isinstance(source, str) and Attr.AGENT_NAME not in out and op not in _AGENT_OPS:
            out[Attr.SENDER] = source
    return native(span, out, events)


def map_genai(spans: list[SpanRecord], recorded_by: str, policy: ContentPolicy | None) -> list[SpanRecord]:
    by_id = {s.span_id: s for s in spans}

    def enclosing(span: SpanRecord) -> str | None:
        """The name of the agent run above ``span`` (agent spans are few: no memo)."""
        cur = by_id.get(span.parent_id or "")
        while cur is not None:
            if operation(cur.attributes) in _AGENT_OPS:
                return _agent_name(cur.attributes) or cur.name
            cur = by_id.get(cur.parent_id or "")
        return None

    out = []
    root = min(spans, key=lambda s: (s.parent_id in by_id, s.start_ns, s.span_id))
    for span in spans:
        attrs = span.attributes
        extra: dict[str, Any] = {}
        if operation(attrs) in _AGENT_OPS:
            above = enclosing(span)
            if above is not None and above == (_agent_name(attrs) or span.name):
                out.append(span)  # the same run logged twice (an outer and an inner span): one invocation
                continue
            if above is not None:
                extra[Attr.AGENT_SPAWNED] = True
        mapped = genai_span(span, policy, **extra)
        if span is root:  # the trace says who wrote it
            base = mapped if mapped is not None else native(span, {})
            mapped = native(base, {**base.attributes, Attr.RECORDED_BY: recorded_by})
        out.append(mapped if mapped is not None else span)
    return out


def _agent_name(attrs: Mapping[str, Any]) -> str | None:
    name = attrs.get(Attr.AGENT_NAME) or attrs.get(Attr.WORKFLOW_NAME)
    return str(name) if name else None
