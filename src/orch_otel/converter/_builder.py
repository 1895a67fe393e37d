"""The tree walk of the converter: span records in, events under construction
out (one ``Ev`` per event, with the scope whose work it is), plus the
scopes (agent invocations and workflow runs) the events belong to."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

from ..spans import EventRecord, SpanRecord
from ..vocabulary import FORCED_STOP_REASONS, HUMAN_AGENT, INSTRUMENTATION_NAME, Attr, DecisionKind, SpanEvent
from ._common import (
    AGENT_OPS,
    CH_AGENT,
    CH_LLM,
    CONTENT_PAIRS,
    CONTENT_TEXTS,
    D_AGGREGATE,
    D_COMMUNICATE,
    D_DELEGATE,
    D_SPAWN,
    D_STOP,
    DEFAULT_ACTOR,
    E_AGGREGATE,
    E_HUMAN_INTERVENTION,
    E_MESSAGE,
    E_ORCHESTRATOR_DECISION,
    E_RETURN,
    E_SAFETY_EVENT,
    E_SPAWN,
    E_TOOL_CALL,
    E_TOOL_RESULT,
    OP_CHAT,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OP_INVOKE_WORKFLOW,
    R_END,
    R_ERROR,
    R_INCOMPLETE,
    S_ERROR,
    S_OK,
    Ev,
    Scope,
    names,
    number,
    put,
    put_text,
    seconds,
    text,
)

_DECISIONS = frozenset(k.value for k in DecisionKind)
_OWN_SCOPES = ("", INSTRUMENTATION_NAME)  # "": records whose source did not say
SPAN_ORDER = attrgetter("start_ns", "span_id")
END = attrgetter("end_ns")


class Builder:
    def __init__(self, spans: Iterable[SpanRecord]):
        self.by_id: dict[str, SpanRecord] = {}
        for span in spans:
            self.by_id.setdefault(span.span_id, span)  # duplicates: first copy wins
        if not self.by_id:
            raise ValueError("a trace needs at least one span")
        self.events: list[Ev] = []
        self.contents: dict[str, str] = {}
        self.rewards: dict[str, float] = {}
        self.orphans = 0
        self.problems: list[str] = []
        self.spawn_links: list[tuple[Ev, Ev]] = []
        self.spawn_of_scope: dict[str, Ev] = {}
        self.agent_spans: list[tuple[SpanRecord, int]] = []
        self.scopes: dict[str, Scope] = {}  # span id -> the agent invocation or workflow run it is
        self.roots: list[SpanRecord] = []  # spans walked as roots (true roots, orphans, cycle breaks)
        self.has_stop = False  # a stop decision was recorded
        self.incomplete = False  # a stop decision has reason "incomplete"
        self._seq = 0

    # -- tree walk -------------------------------------------------------------------

    def walk(self) -> None:
        children: dict[str, list[SpanRecord]] = defaultdict(list)
        roots: list[SpanRecord] = []
        for span in self.by_id.values():
            parent = span.parent_id
            if parent is not None and parent in self.by_id and parent != span.span_id:
                children[parent].append(span)
            else:
                roots.append(span)
                if parent is not None and not span.parent_is_remote:
                    self.orphans += 1
                    if parent == span.span_id:
                        self._cycle(span)
        for kids in children.values():
            kids.sort(key=SPAN_ORDER)
        visited: set[str] = set()
        pending = sorted(roots, key=SPAN_ORDER)
        while True:
            self.roots.extend(pending)
            for root in pending:
                self._visit(root, children, visited, None, None, None, 0)
            if len(visited) == len(self.by_id):
                break
            # Spans caught in a parent cycle: break it at the earliest one.
            rest = [s for s in self.by_id.values() if s.span_id not in visited]
            self.orphans += 1
            pending = [min(rest, key=SPAN_ORDER)]
            self._cycle(pending[0])

    def _cycle(self, span: SpanRecord) -> None:
        self.problems.append(f"parent links form a cycle through span {span.span_id}; written as incomplete")

    def _visit(self, span: SpanRecord, children: Mapping[str, list[SpanRecord]], visited: set[str],
               actor: str | None, role: str | None, scope: str | None, depth: int) -> None:
        stack = [(span, actor, role, scope, depth)]
        while stack:
            span, actor, role, scope, depth = stack.pop()
            span_id = span.span_id
            if span_id in visited:
                continue
            visited.add(span_id)
            attrs = span.attributes
            # Only orch-otel's own spans play orchestration roles: other GenAI
            # instrumentations use the same operation names for their own spans.
            op = attrs.get(Attr.OPERATION) if span.scope in _OWN_SCOPES else None
            if op is not None:
                parent_actor = actor
                if op in AGENT_OPS:
                    name = text(attrs.get(Attr.AGENT_NAME)) or text(attrs.get(Attr.WORKFLOW_NAME)) or span.name or DEFAULT_ACTOR
                    actor, role, depth = str(name), text(attrs.get(Attr.AGENT_ROLE)), depth + 1
                    if op == OP_INVOKE_AGENT:
                        self._agent(span, parent_actor, scope, actor, role)
                        self.agent_spans.append((span, depth))
                    self.scopes[span_id] = Scope(span_id, actor, role, scope, span.start_ns, span.end_ns,
                                                 op == OP_INVOKE_WORKFLOW)
                    scope = span_id
                elif op == OP_EXECUTE_TOOL:
                    self._tool(span, actor or DEFAULT_ACTOR, role, scope)
                elif op == OP_CHAT:
                    self._llm(span, actor or DEFAULT_ACTOR, role, scope)
                if not CONTENT_TEXTS.isdisjoint(attrs):
                    self._collect_content(attrs)
            for event in span.events:
                self._span_event(span, event, actor or DEFAULT_ACTOR, role, scope)
            kids = children.get(span_id)
            if kids:
                for child in reversed(kids):
                    stack.append((child, actor, role, scope, depth))

    # -- events from spans -------------------------------------------------------------
    # Event dicts start with "id" and "t" so that those come first in the output;
    # both are filled in once the events are ordered.

    def _add(self, t_ns: int, span: SpanRecord, data: dict[str, Any], scope: str | None,
             status: str = S_OK) -> Ev:
        data["span_id"] = span.span_id
        if scope is not None:
            data["agent_span_id"] = scope
        data["status"] = status
        self._seq += 1
        ev = Ev(t_ns, self._seq, data, scope)
        self.events.append(ev)
        return ev

    def _agent(self, span: SpanRecord, parent: str | None, scope: str | None, name: str, role: Any) -> None:
        if parent is None:
            return
        attrs = span.attributes
        if attrs.get(Attr.AGENT_SPAWNED):
            data = {"id": None, "t": None, "type": E_SPAWN, "agent": parent, "to": name}
            put(data, "role", role)
            put(data, "fanout_index", number(attrs.get(Attr.FANOUT_INDEX)))
            put(data, "fanout_size", number(attrs.get(Attr.FANOUT_SIZE)))
            self.spawn_of_scope[span.span_id] = self._add(span.start_ns, span, data, scope)
        data = {"id": None, "t": None, "type": E_RETURN, "agent": name, "from": name, "to": parent}
        if role is not None:
            data["role"] = role
        put_text(data, "content_ref", attrs.get(Attr.OUTPUT_REF))
        put_text(data, "outcome", attrs.get(Attr.OUTCOME))
        self._add(span.end_ns, span, data, span.span_id, _status(span))

    def _tool(self, span: SpanRecord, actor: str, role: Any, scope: str | None) -> None:
        attrs = span.attributes
        tool = str(attrs.get(Attr.TOOL_NAME) or span.name)
        call_id = text(attrs.get(Attr.TOOL_CALL_ID))
        call = {"id": None, "t": None, "type": E_TOOL_CALL, "agent": actor, "tool": tool}
        if role is not None:
            call["role"] = role
        if call_id is not None:
            call["call_id"] = call_id
        put_text(call, "content_ref", attrs.get(Attr.INPUT_REF))
        self._add(span.start_ns, span, call, scope)
        result = {"id": None, "t": None, "type": E_TOOL_RESULT, "agent": tool, "tool": tool, "to": actor}
        if call_id is not None:
            result["call_id"] = call_id
        put_text(result, "content_ref", attrs.get(Attr.OUTPUT_REF))
        put_text(result, "outcome", attrs.get(Attr.OUTCOME))
        self._add(span.end_ns, span, result, scope, _status(span))

    def _llm(self, span: SpanRecord, actor: str, role: Any, scope: str | None) -> None:
        attrs = span.attributes
        get = attrs.get
        model = str(get(Attr.RESPONSE_MODEL) or get(Attr.REQUEST_MODEL) or "unknown")
        data: dict[str, Any] = {
            "id": None,
            "t": None,
            "type": E_MESSAGE,
            "channel": CH_LLM,
            "agent": actor,
            "from": actor,
            "to": model,
            "model": model,
            "duration_s": seconds(span.end_ns - span.start_ns),
        }
        if role is not None:
            data["role"] = role
        put_text(data, "provider", get(Attr.PROVIDER))
        put(data, "input_tokens", number(get(Attr.INPUT_TOKENS)))
        put(data, "output_tokens", number(get(Attr.OUTPUT_TOKENS)))
        put_text(data, "input_ref", get(Attr.INPUT_REF))
        put_text(data, "tools_ref", get(Attr.TOOLS_REF))
        put_text(data, "content_ref", get(Attr.OUTPUT_REF))
        self._add(span.start_ns, span, data, scope, _status(span))

    def _span_event(self, span: SpanRecord, event: EventRecord, actor: str, role: Any, scope: str | None) -> None:
        attrs = event.attributes
        name = event.name
        if name == SpanEvent.DECISION:
            decision = attrs.get(Attr.DECISION)
            if decision not in _DECISIONS:
                self.problems.append(f"span {span.span_id}: unknown decision kind {decision!r}; event left out")
                return
            targets = names(attrs.get(Attr.TARGETS))
            data: dict[str, Any] = {"id": None, "t": None, "type": E_ORCHESTRATOR_DECISION, "agent": actor, "decision": decision}
            put(data, "role", role)
            put(data, "to", ",".join(targets))
            put(data, "targets", targets)
            if Attr.OPTIONS in attrs:
                data["options"] = names(attrs.get(Attr.OPTIONS))
            reason = text(attrs.get(Attr.STOP_REASON))
            if decision == D_STOP and reason is None:
                reason = "unspecified"
                self.problems.append(f"span {span.span_id}: stop decision without a reason; reason set to 'unspecified'")
            put(data, "reason", reason)
            put_text(data, "source", attrs.get(Attr.STOP_SOURCE))
            if decision == D_STOP:
                data["forced"] = attrs.get(Attr.STOP_FORCED) is True or reason in FORCED_STOP_REASONS
            put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            status = S_ERROR if reason == R_ERROR else S_OK
            self._add(event.time_ns, span, data, scope, status)
            if decision == D_STOP:
                self.has_stop = True
                self.incomplete = self.incomplete or reason == R_INCOMPLETE
            self._collect_content(attrs)
        elif name == SpanEvent.MESSAGE:
            sender = str(attrs.get(Attr.SENDER) or actor)
            recipients = names(attrs.get(Attr.RECIPIENTS))
            data = {
                "id": None,
                "t": None,
                "type": E_MESSAGE,
                "channel": CH_AGENT,
                "agent": sender,
                "from": sender,
                "decision": D_COMMUNICATE,
            }
            put(data, "to", ",".join(recipients))
            put(data, "recipients", recipients)
            put_text(data, "message_type", attrs.get(Attr.MESSAGE_TYPE))
            put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            self._add(event.time_ns, span, data, scope)
            self._collect_content(attrs)
        elif name == SpanEvent.AGGREGATE:
            data = {"id": None, "t": None, "type": E_AGGREGATE, "agent": actor, "decision": D_AGGREGATE}
            put(data, "role", role)
            if Attr.SOURCES in attrs:
                data["sources"] = names(attrs.get(Attr.SOURCES))
            put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            self._add(event.time_ns, span, data, scope)
            self._collect_content(attrs)
        elif name == SpanEvent.HUMAN_INTERVENTION:
            data = {"id": None, "t": None, "type": E_HUMAN_INTERVENTION, "agent": HUMAN_AGENT, "from": HUMAN_AGENT, "to": actor}
            put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            put_text(data, "resume_of", attrs.get(Attr.RESUME_OF))
            self._add(event.time_ns, span, data, scope)
            self._collect_content(attrs)
        elif name == SpanEvent.SAFETY:
            data = {"id": None, "t": None, "type": E_SAFETY_EVENT, "agent": actor}
            put_text(data, "kind", attrs.get(Attr.SAFETY_KIND))
            put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            self._add(event.time_ns, span, data, scope)
        elif name == SpanEvent.REWARD:
            try:
                value = float(attrs.get(Attr.REWARD_VALUE))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return
            key = str(attrs.get(Attr.REWARD_NAME) or "reward")
            target = text(attrs.get(Attr.REWARD_TARGET))
            if target is not None:  # a reward for one agent (or role, tool...): "name@target"
                key = f"{key}@{target}"
            self.rewards[key] = self.rewards.get(key, 0.0) + value

    def _collect_content(self, attrs: Mapping[str, Any]) -> None:
        for ref_key, text_key in CONTENT_PAIRS:
            value = attrs.get(text_key)
            if value is not None:
                ref = attrs.get(ref_key)
                if ref is not None:
                    self.contents[str(ref)] = str(value)

    # -- completion ---------------------------------------------------------------------

    def ensure_stop(self, complete: bool) -> None:
        """A finished run has a stop decision; an incomplete one gets one saying so."""
        root = min(self.roots, key=SPAN_ORDER)
        incomplete = not complete or self.orphans > 0
        if self.has_stop and not incomplete:
            return
        if incomplete:
            reason = R_INCOMPLETE
            self.incomplete = True
        elif root.status == "error":
            reason = R_ERROR
        else:
            reason = R_END
        end = max(map(END, self.by_id.values()))
        run = self.scopes.get(root.span_id)
        attrs = root.attributes
        actor = run.name if run is not None else str(attrs.get(Attr.AGENT_NAME) or attrs.get(Attr.WORKFLOW_NAME) or DEFAULT_ACTOR)
        data = {
            "id": None,
            "t": None,
            "type": E_ORCHESTRATOR_DECISION,
            "agent": actor,
            "decision": D_STOP,
            "reason": reason,
            "implied": True,
        }
        status = S_ERROR if reason == R_ERROR else S_OK
        # the root run decides: its invocation, when the root is one
        self._add(end, root, data, None if run is None else run.span_id, status)

    def cover_spawns(self) -> list[Ev]:
        """Pair each spawn event with the decision that covers it (the parent's
        spawn decision, or any earlier delegation naming the spawned agent: in
        graph frameworks an agent delegates and the runtime spawns), adding an implied spawn decision
        where none was recorded. Spawns that start while an implied group's
        first child still runs join that group: one decision per fan-out.
        Returns every event in time order."""
        ordered = sorted(self.events)
        implied = False
        # (decision, targets it has not covered yet)
        spawns_by: dict[str, list[tuple[Ev, list[str]]]] = defaultdict(list)  # decider -> spawn decisions
        delegations: list[tuple[Ev, list[str]]] = []  # whoever delegated: the runtime may do the spawning
        for ev in ordered:
            data = ev.data
            if data["type"] != E_ORCHESTRATOR_DECISION:
                continue
            if data.get("decision") == D_SPAWN:
                spawns_by[data["agent"]].append((ev, list(data.get("targets", ()))))
            elif data.get("decision") == D_DELEGATE:
                delegations.append((ev, list(data.get("targets", ()))))
        groups: dict[str, tuple[Ev, int]] = {}  # parent -> (implied decision, earliest child end)
        for ev in ordered:
            data = ev.data
            if data["type"] != E_SPAWN:
                continue
            parent, target = data["agent"], data["to"]
            match = None
            for decision, left in [*spawns_by.get(parent, ()), *delegations]:
                if decision.t_ns <= ev.t_ns and target in left:
                    left.remove(target)
                    match = decision
                    break
            if match is None:
                child_end = self.by_id[data["span_id"]].end_ns
                group = groups.get(parent)
                if group is not None and ev.t_ns < group[1]:  # started while the group runs: same fan-out
                    match = group[0]
                    groups[parent] = (match, min(group[1], child_end))
                else:
                    decision_data = {
                        "id": None,
                        "t": None,
                        "type": E_ORCHESTRATOR_DECISION,
                        "agent": parent,
                        "decision": D_SPAWN,
                        "targets": [],
                        "implied": True,
                        "span_id": ev.scope or data["span_id"],  # the parent's span
                        "status": S_OK,
                    }
                    if ev.scope is not None:
                        decision_data["agent_span_id"] = ev.scope
                    match = Ev(ev.t_ns, ev.seq - 0.5, decision_data, ev.scope)  # sorts just before the spawn
                    self.events.append(match)
                    implied = True
                    groups[parent] = (match, child_end)
                match.data["targets"].append(target)
                match.data["to"] = ",".join(match.data["targets"])
            if match.data["decision"] == D_SPAWN:  # a delegation has its causal edge
                self.spawn_links.append((match, ev))
        return sorted(self.events) if implied else ordered


def _status(span: SpanRecord) -> str:
    return S_ERROR if span.status == "error" else S_OK
