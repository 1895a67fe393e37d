"""The pieces every foreign mapper builds: a foreign span rewritten as one of
orch-otel's own (the converter reads only those), and the span events that
carry orchestration moments, each marked ``implied`` when it is inferred."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..content import ContentPolicy
from ..spans import EventRecord, SpanRecord
from ..vocabulary import INSTRUMENTATION_NAME, Attr, DecisionKind, Operation, SpanEvent


def native(span: SpanRecord, attrs: Mapping[str, Any], events: Iterable[EventRecord] = ()) -> SpanRecord:
    """``span`` as orch-otel would have written it: the given attributes, its own events plus ``events``."""
    return dataclasses.replace(span, scope=INSTRUMENTATION_NAME, attributes=dict(attrs),
                               events=span.events + tuple(events))


def operation(attrs: Mapping[str, Any]) -> str | None:
    """The span's ``gen_ai.operation.name``, when it is text (foreign data may carry anything)."""
    op = attrs.get(Attr.OPERATION)
    return op if isinstance(op, str) else None


def count(value: Any) -> int | None:
    """A token count or step number: an int in a sane range, else None (left out, not guessed)."""
    return value if type(value) is int and 0 <= value < 1 << 53 else None


def has_cycle(spans: Iterable[SpanRecord]) -> bool:
    """Whether parent links loop (the mappers walk up parents, so they need a forest); linear."""
    parent = {s.span_id: s.parent_id for s in spans}
    settled: set[str] = set()
    for start in parent:
        path: set[str] = set()
        cur: str | None = start
        while cur is not None and cur in parent and cur not in settled:
            if cur in path:
                return True
            path.add(cur)
            cur = parent[cur]
        settled |= path
    return False


def rehang(span: SpanRecord, parent_id: str | None) -> SpanRecord:
    """``span`` under another parent, everything else as it was."""
    return dataclasses.replace(span, parent_id=parent_id, parent_is_remote=False)


def agent_attrs(name: str, *, workflow: bool = False, spawned: bool = False, role: str | None = None,
                extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    if workflow:
        attrs: dict[str, Any] = {Attr.OPERATION: Operation.INVOKE_WORKFLOW.value, Attr.WORKFLOW_NAME: name}
    else:
        attrs = {Attr.OPERATION: Operation.INVOKE_AGENT.value, Attr.AGENT_NAME: name}
    if spawned:
        attrs[Attr.AGENT_SPAWNED] = True
    if role:
        attrs[Attr.AGENT_ROLE] = role
    attrs.update(extra or {})
    return attrs


def decision(time_ns: int, kind: DecisionKind, targets: Iterable[str] = (), *, options: Iterable[str] | None = None,
             reason: str | None = None, forced: bool | None = None, implied: bool = False) -> EventRecord:
    attrs: dict[str, Any] = {Attr.DECISION: kind.value}
    targets = tuple(targets)
    if targets:
        attrs[Attr.TARGETS] = targets
    if options is not None:
        attrs[Attr.OPTIONS] = tuple(options)
    if reason is not None:
        attrs[Attr.STOP_REASON] = reason
    if forced is not None:
        attrs[Attr.STOP_FORCED] = forced
    if implied:
        attrs[Attr.IMPLIED] = True
    return EventRecord(SpanEvent.DECISION, time_ns, attrs)


def message(time_ns: int, sender: str, recipients: Iterable[str], message_type: str | None = None,
            implied: bool = False) -> EventRecord:
    attrs: dict[str, Any] = {Attr.SENDER: sender, Attr.RECIPIENTS: tuple(recipients)}
    if message_type:
        attrs[Attr.MESSAGE_TYPE] = message_type
    if implied:
        attrs[Attr.IMPLIED] = True
    return EventRecord(SpanEvent.MESSAGE, time_ns, attrs)


def aggregate(time_ns: int, sources: Iterable[str], implied: bool = False) -> EventRecord:
    attrs: dict[str, Any] = {Attr.SOURCES: tuple(sources)}
    if implied:
        attrs[Attr.IMPLIED] = True
    return EventRecord(SpanEvent.AGGREGATE, time_ns, attrs)


def put_content(attrs: dict[str, Any], ref_key: str, text_key: str, value: Any, policy: ContentPolicy | None) -> None:
    """Content a peer captured, kept only under the user's content policy:
    dropped when capture is off (the default), redacted when on."""
    if policy is None or not policy.capture or value is None or value == "":
        return
    if isinstance(value, str) and value[:1] in ("{", "["):  # peers log JSON as text: kept as the JSON it is
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    content = policy.apply(value)
    if content is not None and content.text is not None:
        attrs[ref_key] = content.ref
        attrs[text_key] = content.text
