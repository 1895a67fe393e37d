"""The tree walk of the converter: span records in, events under construction
out (one ``_Ev`` per event, with the scope whose work it is), and the scopes
(agent invocations and workflow runs) the events belong to."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from operator import attrgetter
from typing import Any

from ..spans import EventRecord, SpanRecord
from ..vocabulary import (
    FORCED_STOP_REASONS,
    HUMAN_AGENT,
    INSTRUMENTATION_NAME,
    ROLE_TARGET,
    Attr,
    DecisionKind,
    RewardUnit,
    SpanEvent,
)
from ._values import (
    _CH_AGENT,
    _CH_LLM,
    _D_AGGREGATE,
    _D_COMMUNICATE,
    _D_STOP,
    _E_AGGREGATE,
    _E_HUMAN_INTERVENTION,
    _E_MESSAGE,
    _E_ORCHESTRATOR_DECISION,
    _E_RETURN,
    _E_SAFETY_EVENT,
    _E_SPAWN,
    _E_TOOL_CALL,
    _E_TOOL_RESULT,
    _OP_CHAT,
    _OP_EXECUTE_TOOL,
    _OP_INVOKE_AGENT,
    _OP_INVOKE_WORKFLOW,
    _R_END,
    _R_ERROR,
    _R_INCOMPLETE,
    _R_INTERRUPT,
    _S_ERROR,
    _S_OK,
    DEFAULT_ACTOR,
    Scope,
    _Ev,
    _list,
    _number,
    _put,
    _put_implied,
    _put_text,
    _seconds,
    _status,
    _text,
)

_AGENT_OPS = (_OP_INVOKE_AGENT, _OP_INVOKE_WORKFLOW)
_CONTENT_PAIRS = (
    (Attr.CONTENT_REF, Attr.CONTENT),
    (Attr.INPUT_REF, Attr.TOOL_CALL_ARGUMENTS),
    (Attr.INPUT_REF, Attr.INPUT_MESSAGES),
    (Attr.OUTPUT_REF, Attr.TOOL_CALL_RESULT),
    (Attr.OUTPUT_REF, Attr.OUTPUT_MESSAGES),
    (Attr.TOOLS_REF, Attr.TOOL_DEFINITIONS),
    (Attr.INPUT_REF, Attr.RUN_INPUT),
)


_CONTENT_TEXTS = frozenset(text_key for _, text_key in _CONTENT_PAIRS)

_DECISIONS = frozenset(k.value for k in DecisionKind)
_OWN_SCOPES = ("", INSTRUMENTATION_NAME)  # "": records whose source did not say
_SPAN_ORDER = attrgetter("start_ns", "span_id")
_START, _END = attrgetter("start_ns"), attrgetter("end_ns")


class _Builder:
    def __init__(self, spans: Iterable[SpanRecord]):
        self.by_id: dict[str, SpanRecord] = {}
        for span in spans:
            self.by_id.setdefault(span.span_id, span)  # duplicates: first copy wins
        if not self.by_id:
            raise ValueError("a trace needs at least one span")
        self.events: list[_Ev] = []
        self.contents: dict[str, str] = {}
        self.rewards: dict[str, float] = {}
        self.orphans = 0
        self.problems: list[str] = []
        self.spawn_links: list[tuple[_Ev, _Ev]] = []
        self.spawn_of_scope: dict[str, _Ev] = {}
        self.agent_spans: list[tuple[SpanRecord, int]] = []
        self.max_depth = 0  # deepest agent or workflow span (a root is 1)
        self.llm_scopes: set[str | None] = set()  # scopes that called a model themselves
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
            kids.sort(key=_SPAN_ORDER)
        visited: set[str] = set()
        pending = sorted(roots, key=_SPAN_ORDER)
        while True:
            self.roots.extend(pending)
            for root in pending:
                self._visit(root, children, visited, None, None, None, 0)
            if len(visited) == len(self.by_id):
                break
            # Spans caught in a parent cycle: break it at the earliest one.
            rest = [s for s in self.by_id.values() if s.span_id not in visited]
            self.orphans += 1
            pending = [min(rest, key=_SPAN_ORDER)]
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
                if op in _AGENT_OPS:
                    name = _text(attrs.get(Attr.AGENT_NAME)) or _text(attrs.get(Attr.WORKFLOW_NAME)) or span.name or DEFAULT_ACTOR
                    actor, role, depth = str(name), _text(attrs.get(Attr.AGENT_ROLE)), depth + 1
                    self.max_depth = max(self.max_depth, depth)
                    if op == _OP_INVOKE_AGENT:
                        self._agent(span, parent_actor, scope, actor, role)
                        self.agent_spans.append((span, depth))
                    self.scopes[span_id] = Scope(span_id, actor, role, scope, span.start_ns, span.end_ns,
                                                 op == _OP_INVOKE_WORKFLOW)
                    scope = span_id
                elif op == _OP_EXECUTE_TOOL:
                    self._tool(span, actor or DEFAULT_ACTOR, role, scope)
                elif op == _OP_CHAT:
                    self._llm(span, actor or DEFAULT_ACTOR, role, scope)
                if not _CONTENT_TEXTS.isdisjoint(attrs):
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
             status: str = _S_OK) -> _Ev:
        data["span_id"] = span.span_id
        if scope is not None:
            data["agent_span_id"] = scope
        data["status"] = status
        self._seq += 1
        ev = _Ev(t_ns, self._seq, data, scope)
        self.events.append(ev)
        return ev

    def _agent(self, span: SpanRecord, parent: str | None, scope: str | None, name: str, role: Any) -> None:
        if parent is None:
            return
        attrs = span.attributes
        if attrs.get(Attr.AGENT_SPAWNED):
            data = {"id": None, "t": None, "type": _E_SPAWN, "agent": parent, "to": name}
            _put(data, "role", role)
            _put(data, "fanout_index", _number(attrs.get(Attr.FANOUT_INDEX)))
            _put(data, "fanout_size", _number(attrs.get(Attr.FANOUT_SIZE)))
            self.spawn_of_scope[span.span_id] = self._add(span.start_ns, span, data, scope)
        data = {"id": None, "t": None, "type": _E_RETURN, "agent": name, "from": name, "to": parent}
        if role is not None:
            data["role"] = role
        _put_text(data, "content_ref", attrs.get(Attr.OUTPUT_REF))
        _put_text(data, "outcome", attrs.get(Attr.OUTCOME))
        self._add(span.end_ns, span, data, span.span_id, _status(span))

    def _tool(self, span: SpanRecord, actor: str, role: Any, scope: str | None) -> None:
        attrs = span.attributes
        tool = str(attrs.get(Attr.TOOL_NAME) or span.name)
        call_id = _text(attrs.get(Attr.TOOL_CALL_ID))
        call: dict[str, Any] = {"id": None, "t": None, "type": _E_TOOL_CALL, "agent": actor, "tool": tool}
        if role is not None:
            call["role"] = role
        if call_id is not None:
            call["call_id"] = call_id
        if attrs.get(Attr.TOOL_HOSTED) is True:  # the model's provider ran it, inside the model call
            call["hosted"] = True
        _put_text(call, "server", attrs.get(Attr.TOOL_SERVER))
        _put_text(call, "content_ref", attrs.get(Attr.INPUT_REF))
        self._add(span.start_ns, span, call, scope)
        result = {"id": None, "t": None, "type": _E_TOOL_RESULT, "agent": tool, "tool": tool, "to": actor}
        if call_id is not None:
            result["call_id"] = call_id
        _put_text(result, "content_ref", attrs.get(Attr.OUTPUT_REF))
        _put_text(result, "outcome", attrs.get(Attr.OUTCOME))
        _put_text(result, "guardrail", attrs.get(Attr.GUARDRAIL))
        self._add(span.end_ns, span, result, scope, _status(span))

    def _llm(self, span: SpanRecord, actor: str, role: Any, scope: str | None) -> None:
        self.llm_scopes.add(scope)
        attrs = span.attributes
        get = attrs.get
        model = str(get(Attr.RESPONSE_MODEL) or get(Attr.REQUEST_MODEL) or "unknown")
        data: dict[str, Any] = {
            "id": None,
            "t": None,
            "type": _E_MESSAGE,
            "channel": _CH_LLM,
            "agent": actor,
            "from": actor,
            "to": model,
            "model": model,
            "duration_s": _seconds(span.end_ns - span.start_ns),
        }
        if role is not None:
            data["role"] = role
        _put_text(data, "provider", get(Attr.PROVIDER))
        _put(data, "input_tokens", _number(get(Attr.INPUT_TOKENS)))
        _put(data, "output_tokens", _number(get(Attr.OUTPUT_TOKENS)))
        _put_text(data, "input_ref", get(Attr.INPUT_REF))
        _put_text(data, "tools_ref", get(Attr.TOOLS_REF))
        _put_text(data, "content_ref", get(Attr.OUTPUT_REF))
        _put_text(data, "tokens_ref", get(Attr.TOKENS_REF))
        self._add(span.start_ns, span, data, scope, _status(span))

    def _span_event(self, span: SpanRecord, event: EventRecord, actor: str, role: Any, scope: str | None) -> None:
        attrs = event.attributes
        name = event.name
        if name == SpanEvent.DECISION:
            decision = attrs.get(Attr.DECISION)
            if decision not in _DECISIONS:
                self.problems.append(f"span {span.span_id}: unknown decision kind {decision!r}; event left out")
                return
            targets = _list(attrs.get(Attr.TARGETS))
            data: dict[str, Any] = {"id": None, "t": None, "type": _E_ORCHESTRATOR_DECISION, "agent": actor, "decision": decision}
            _put(data, "role", role)
            _put(data, "to", ",".join(targets))
            _put(data, "targets", targets)
            if Attr.OPTIONS in attrs:
                data["options"] = _list(attrs.get(Attr.OPTIONS))
            reason = _text(attrs.get(Attr.STOP_REASON))
            if decision == _D_STOP and reason is None:
                reason = "unspecified"
                self.problems.append(f"span {span.span_id}: stop decision without a reason; reason set to 'unspecified'")
            _put(data, "reason", reason)
            _put_text(data, "source", attrs.get(Attr.STOP_SOURCE))
            if decision == _D_STOP and reason == _R_INTERRUPT and Attr.AWAITING in span.attributes:
                data["awaiting"] = _list(span.attributes.get(Attr.AWAITING))  # the calls a human must decide on
            _put_route(data, attrs)
            if decision == _D_STOP and (Attr.STOP_FORCED in attrs or reason != "unspecified"):
                # a stop of unknown reason (a foreign log's) is neither forced nor chosen: left out
                data["forced"] = attrs.get(Attr.STOP_FORCED) is True or reason in FORCED_STOP_REASONS
            _put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            _put_implied(data, attrs)
            status = _S_ERROR if reason == _R_ERROR else _S_OK
            self._add(event.time_ns, span, data, scope, status)
            if decision == _D_STOP:
                self.has_stop = True
                self.incomplete = self.incomplete or reason == _R_INCOMPLETE
            self._collect_content(attrs)
        elif name == SpanEvent.MESSAGE:
            sender = str(attrs.get(Attr.SENDER) or actor)
            recipients = _list(attrs.get(Attr.RECIPIENTS))
            data = {
                "id": None,
                "t": None,
                "type": _E_MESSAGE,
                "channel": _CH_AGENT,
                "agent": sender,
                "from": sender,
                "decision": _D_COMMUNICATE,
            }
            _put(data, "to", ",".join(recipients))
            _put(data, "recipients", recipients)
            _put_text(data, "message_type", attrs.get(Attr.MESSAGE_TYPE))
            _put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            _put_implied(data, attrs)
            self._add(event.time_ns, span, data, scope)
            self._collect_content(attrs)
        elif name == SpanEvent.AGGREGATE:
            data = {"id": None, "t": None, "type": _E_AGGREGATE, "agent": actor, "decision": _D_AGGREGATE}
            _put(data, "role", role)
            if Attr.SOURCES in attrs:
                data["sources"] = _list(attrs.get(Attr.SOURCES))
            _put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            _put_implied(data, attrs)
            self._add(event.time_ns, span, data, scope)
            self._collect_content(attrs)
        elif name == SpanEvent.HUMAN_INTERVENTION:
            data = {"id": None, "t": None, "type": _E_HUMAN_INTERVENTION, "agent": HUMAN_AGENT, "from": HUMAN_AGENT, "to": actor}
            if Attr.RECIPIENTS in attrs:  # the agents the input reaches, not the run that took it
                recipients = _list(attrs.get(Attr.RECIPIENTS))
                data["to"] = ",".join(recipients) or actor
                data["recipients"] = recipients
            _put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            _put_text(data, "resume_of", attrs.get(Attr.RESUME_OF))
            for key, attr in (("approved", Attr.APPROVED), ("rejected", Attr.REJECTED)):
                if attr in attrs:  # the tool calls a human decided on, by call id
                    data[key] = _list(attrs.get(attr))
            self._add(event.time_ns, span, data, scope)
            self._collect_content(attrs)
        elif name == SpanEvent.SAFETY:
            data = {"id": None, "t": None, "type": _E_SAFETY_EVENT, "agent": actor}
            _put_text(data, "kind", attrs.get(Attr.SAFETY_KIND))
            _put_text(data, "content_ref", attrs.get(Attr.CONTENT_REF))
            self._add(event.time_ns, span, data, scope)
        elif name == SpanEvent.REWARD:
            try:
                value = float(attrs.get(Attr.REWARD_VALUE))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return
            key = str(attrs.get(Attr.REWARD_NAME) or "reward")
            target = _text(attrs.get(Attr.REWARD_TARGET))
            if target is not None:  # a reward for one agent: "name@target"; for a role: "name@role:target"
                role = _text(attrs.get(Attr.REWARD_UNIT)) == RewardUnit.ROLE.value
                key = f"{key}@{ROLE_TARGET if role else ''}{target}"
            self.rewards[key] = self.rewards.get(key, 0.0) + value

    def _collect_content(self, attrs: Mapping[str, Any]) -> None:
        for ref_key, text_key in _CONTENT_PAIRS:
            text = attrs.get(text_key)
            if text is not None:
                ref = attrs.get(ref_key)
                if ref is not None:
                    self.contents[str(ref)] = str(text)

    # -- completion ---------------------------------------------------------------------

    def ensure_stop(self, complete: bool) -> None:
        """A finished run has a stop decision; an incomplete one gets one saying so."""
        root = min(self.roots, key=_SPAN_ORDER)
        incomplete = not complete or self.orphans > 0
        if self.has_stop and not incomplete:
            return
        if incomplete:
            reason = _R_INCOMPLETE
            self.incomplete = True
        elif root.status == "error":
            reason = _R_ERROR
        else:
            reason = _R_END
        end = max(map(_END, self.by_id.values()))
        run = self.scopes.get(root.span_id)  # the root run decides: its invocation, when the root is one
        attrs = root.attributes
        actor = run.name if run is not None else str(attrs.get(Attr.AGENT_NAME) or attrs.get(Attr.WORKFLOW_NAME) or DEFAULT_ACTOR)
        data = {
            "id": None,
            "t": None,
            "type": _E_ORCHESTRATOR_DECISION,
            "agent": actor,
            "decision": _D_STOP,
            "reason": reason,
            "implied": True,
        }
        status = _S_ERROR if reason == _R_ERROR else _S_OK
        self._add(end, root, data, None if run is None else run.span_id, status)


def _put_route(data: dict[str, Any], attrs: Mapping[str, Any]) -> None:
    """How the framework made a decision (``Route``): its router and that
    router's call number, and the deciding agent's handoff tools (tool -> agent)."""
    _put_text(data, "router", attrs.get(Attr.ROUTER))
    _put(data, "router_call", _number(attrs.get(Attr.ROUTER_CALL)))
    tools = {}
    for item in _list(attrs.get(Attr.HANDOFF_TOOLS)):
        tool, _, agent = item.partition("=")
        if tool and agent:
            tools[tool] = agent
    _put(data, "handoff_tools", tools or None)
