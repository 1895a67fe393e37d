"""AutoGen's own runtime tracing (autogen-core 0.7): ``invoke_agent`` and
``execute_tool`` spans (scope ``autogen-core``) and the runtime's messaging
spans (scope ``autogen SingleThreadedAgentRuntime``), named
``autogen {create|publish|send|process|ack} DESTINATION``.

**One run, many traces.** Each publish starts a new trace whose root links
to the ``create`` span of the message in the trace before, so one team run
arrives as 14 to 16 traces. :class:`RunPool` holds AutoGen traces until the
input ends, joins those that links connect, and converts each joined run
as one trace (under the id of the trace that started it). Inside the run,
each trace's root hangs again under the span its link names.

**Teams.** Every agent type of a team ends with the team's id
(``planner_<team id>``), and the runtime names it on each messaging span and
on ``gen_ai.agent.id``, so a run's spans sort by team, nested teams (a
SocietyOfMind agent's inner team) included. What is made of them:

* a team: named after its manager's class, as AutoGen names the manager
  (``SelectorGroupChatManager`` is the ``SelectorGroupChat`` team), with
  ``_2``, ``_3`` ... for later teams of the same class in the run. A custom
  team name is in no span. A nested team is spawned by the agent whose turn
  runs it, and that agent aggregates its result (implied);
* a speaker chosen: the manager's ``GroupChatRequestPublish`` to an agent's
  topic, a delegation by the team (the candidates are not logged);
* a turn: the agent's ``invoke_agent`` span, with its tools (call ids); a
  ``transfer_to_X`` tool followed by the agent's HandoffMessage to X, or by
  the team's turn for X, is a handoff (implied);
* what an agent says: its ``GroupChatAgentResponse`` published to the group,
  a message to the participants that process it (a HandoffMessage: to its
  target). Only the message's type and target are read from the body the
  runtime logs, never its text;
* the stop: the manager's ``GroupChatTermination``; the reason and who
  caused it are in no span (only in the message body, which is content).
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from .._assembly import Released
from ..content import ContentPolicy
from ..spans import EventRecord, SpanRecord
from ..vocabulary import Attr, DecisionKind
from ._genai import genai_span
from ._native import agent_attrs, aggregate, decision, has_cycle, message, native, rehang

_TEAM_ID = re.compile(r"[_/(]([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\)?(?:-[AT])?\Z")
_KEYED = ("messaging.destination", "recipient_agent_type", "sender_agent_type", Attr.AGENT_ID)
_PARTICIPANT = "ChatAgentContainer"
_TEAM_OF_MANAGER = {"SwarmGroupChatManager": "Swarm", "GraphFlowManager": "GraphFlow",
                    "MagenticOneOrchestrator": "MagenticOneGroupChat"}
RUNTIME_SCOPE_PREFIX = "autogen "
CORE_SCOPE = "autogen-core"
_HANDOFF_PREFIX = "transfer_to_"
_TYPE = "messaging.message.type"
_DESTINATION = "messaging.destination"


def team_of(span: SpanRecord) -> str | None:
    """The id of the team a span belongs to, if it names one."""
    attrs = span.attributes
    for key in _KEYED:
        value = attrs.get(key)
        if isinstance(value, str):
            found = _TEAM_ID.search(value)
            if found:
                return found.group(1)
    return None


def _is_autogen(span: SpanRecord) -> bool:
    return span.scope == CORE_SCOPE or span.scope.startswith(RUNTIME_SCOPE_PREFIX)


class RunPool:
    """Holds AutoGen runtime traces until the input ends (see the module doc);
    every other trace passes straight on. Bounded: past ``max_spans`` held
    spans, the runs held so far are joined and let go."""

    def __init__(self, max_spans: int = 1_000_000) -> None:
        self.max_spans = max_spans
        self._held: dict[str, Released] = {}
        self._spans = 0

    def offer(self, released: Released) -> list[Released]:
        """What to convert now: ``released`` itself, or nothing while it is held."""
        if not any(_is_autogen(s) for s in released.spans.values()):
            return [released]
        known = self._held.get(released.trace_id)
        if known is not None:  # released twice (early, then its late spans): one trace
            known.spans.update(released.spans)
            known.complete = known.complete and released.complete
        else:
            self._held[released.trace_id] = released
        self._spans += len(released.spans)
        return self.drain() if self._spans > self.max_spans else []

    def drain(self) -> list[Released]:
        held, self._held, self._spans = self._held, {}, 0
        parent = {trace_id: trace_id for trace_id in held}

        def find(trace_id: str) -> str:
            while parent[trace_id] != trace_id:
                parent[trace_id] = parent[parent[trace_id]]
                trace_id = parent[trace_id]
            return trace_id

        for trace_id, part in held.items():
            for span in part.spans.values():
                for link in span.links:
                    if link.trace_id in parent:
                        parent[find(link.trace_id)] = find(trace_id)
        runs: dict[str, list[Released]] = defaultdict(list)
        for trace_id, part in held.items():
            runs[find(trace_id)].append(part)
        return [stitch(parts) for parts in runs.values()]


def stitch(parts: list[Released]) -> Released:
    """One run's traces as one trace, under the id of the trace that started it."""
    if len(parts) == 1:
        return parts[0]
    first = min(parts, key=lambda r: (min(s.start_ns for s in r.spans.values()), r.trace_id))
    trace_id = first.trace_id
    spans: dict[str, SpanRecord] = {}
    for part in sorted(parts, key=lambda r: r.trace_id):
        for span_id, span in part.spans.items():
            spans.setdefault(span_id, span if span.trace_id == trace_id else dataclasses.replace(span, trace_id=trace_id))
    return Released(trace_id, spans, all(p.complete for p in parts))


@dataclasses.dataclass
class _Team:
    id: str
    name: str
    span: SpanRecord  # the span the team's run is hung on
    events: list[EventRecord] = dataclasses.field(default_factory=list)
    turns: list[tuple[int, str]] = dataclasses.field(default_factory=list)  # (time, agent) of each turn given
    handoffs: set[tuple[str, str]] = dataclasses.field(default_factory=set)  # (from, to) of HandoffMessages published


def map_autogen(spans: list[SpanRecord], recorded_by: str, policy: ContentPolicy | None) -> list[SpanRecord]:
    by_id = {s.span_id: s for s in spans}
    rehung = [_rehang_root(s, by_id) for s in spans]
    if not has_cycle(rehung):  # a link into the linking trace's own tree (hostile input) would loop it
        spans = rehung
        by_id = {s.span_id: s for s in spans}
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    root = min((s for s in spans if s.parent_id not in by_id), key=lambda s: (s.start_ns, s.span_id))
    names = _participant_names(spans)
    teams = _teams(ordered, root)
    children: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in spans:
        children[span.parent_id or ""].append(span)
    turn_of = {}  # team id -> the agent's invoke_agent span that runs it (nested teams)
    for team in teams.values():
        if team.span is not root:
            turn_of[team.id] = _enclosing_turn(team.span, by_id)
    for span in ordered:
        found = teams.get(team_of(span) or "")
        if found is None:
            continue
        team = found
        kind = span.attributes.get(_TYPE)
        destination = str(span.attributes.get(_DESTINATION, ""))
        if kind == "GroupChatRequestPublish":
            target = names.get(destination.split(".(", 1)[0])
            if target:
                team.events.append(decision(span.start_ns, DecisionKind.DELEGATE, [target]))
                team.turns.append((span.start_ns, target))
        elif kind == "GroupChatTermination" and destination.startswith("output_topic_"):
            team.events.append(decision(span.start_ns, DecisionKind.STOP, reason="unspecified"))
        elif span.attributes.get("messaging.operation") == "publish" and destination.startswith("group_topic_"):
            said = _response(children[span.span_id], names)
            if said is not None:
                sender, recipients, (kind, target) = said
                if target:  # a HandoffMessage: the group sees it, but it is addressed to its target
                    recipients = [target]
                    team.handoffs.add((sender, target))
                team.events.append(message(span.start_ns, sender, recipients, kind))
    out: dict[str, SpanRecord] = {}
    for span in ordered:
        op = span.attributes.get(Attr.OPERATION)
        if span.scope != CORE_SCOPE or op not in ("invoke_agent", "execute_tool", "chat"):
            continue
        mapped = genai_span(span, policy)
        if mapped is None:
            continue
        if op == "execute_tool":
            caller = by_id.get(span.parent_id or "")
            caller_team = teams.get(team_of(caller) or "") if caller is not None else None
            mapped = native(mapped, mapped.attributes, _handoff(mapped, caller, caller_team))
        elif op == "invoke_agent" and (owner := teams.get(team_of(span) or "")) is not None:
            # a turn the team gave, not a call inside the last speaker's: hung on the team
            if owner.span is not root:
                mapped = native(mapped, {**mapped.attributes, Attr.AGENT_SPAWNED: True})
            mapped = rehang(mapped, owner.span.span_id)
        out[span.span_id] = mapped
    for team in teams.values():
        extra: dict[str, Any] = {Attr.SYSTEM: "autogen"}
        if team.span is root:
            attrs = agent_attrs(team.name, workflow=True, extra={**extra, Attr.RECORDED_BY: recorded_by})
        else:
            attrs = agent_attrs(team.name, spawned=True, role="team", extra=extra)
            turn = turn_of.get(team.id)
            if turn is not None:  # the agent whose turn ran the team gives its answer from the team's result
                holder = out.get(turn.span_id, turn)
                out[turn.span_id] = native(holder, holder.attributes, [aggregate(team.span.end_ns, [team.name],
                                                                                 implied=True)])
        out[team.span.span_id] = native(team.span, attrs, team.events)
    if root.span_id not in out:
        out[root.span_id] = native(root, agent_attrs("team", workflow=True, extra={Attr.RECORDED_BY: recorded_by}))
    return [out.get(s.span_id, s) for s in spans]


def _teams(ordered: list[SpanRecord], root: SpanRecord) -> dict[str, _Team]:
    """Each team of the run, hung on its first span (the run's root for the outermost)."""
    teams: dict[str, _Team] = {}
    managers: dict[str, str] = {}
    for span in ordered:
        for side in ("recipient", "sender"):
            cls, kind = span.attributes.get(f"{side}_agent_class"), span.attributes.get(f"{side}_agent_type")
            if isinstance(cls, str) and isinstance(kind, str) and cls != _PARTICIPANT and \
                    cls.endswith(("Manager", "Orchestrator")):
                found = _TEAM_ID.search(kind)
                if found:
                    managers.setdefault(found.group(1), cls)
    outer = team_of(root)
    for span in ordered:
        team_id = team_of(span)
        if team_id is None or team_id in teams or team_id not in managers:
            continue
        cls = managers[team_id]
        first = root if team_id == outer or not teams else span
        name = _TEAM_OF_MANAGER.get(cls, cls.removesuffix("Manager"))
        taken = sum(1 for t in teams.values() if t.name == name or t.name.startswith(f"{name}_"))
        # a team's own name is in no span: teams of one class are told apart by order of start
        teams[team_id] = _Team(team_id, f"{name}_{taken + 1}" if taken else name, first)
    return teams


def _enclosing_turn(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> SpanRecord | None:
    cur = by_id.get(span.parent_id or "")
    while cur is not None:
        if cur.attributes.get(Attr.OPERATION) == "invoke_agent":
            return cur
        cur = by_id.get(cur.parent_id or "")
    return None


def _handoff(tool: SpanRecord, caller: SpanRecord | None, team: _Team | None) -> list:
    """A ``transfer_to_X`` tool (AutoGen's handoff tools' names) whose agent then
    published a HandoffMessage to X, or was followed by the team's turn for X:
    the agent handed off to X (implied: the spans never say the tool did it)."""
    name = str(tool.attributes.get(Attr.TOOL_NAME, ""))
    if caller is None or team is None or not name.startswith(_HANDOFF_PREFIX):
        return []
    target = name.removeprefix(_HANDOFF_PREFIX)
    sender = str(caller.attributes.get(Attr.AGENT_NAME, ""))
    if (sender, target) in team.handoffs:  # its HandoffMessage was recorded: only the choice is implied
        return [decision(tool.end_ns, DecisionKind.DELEGATE, [target], implied=True)]
    following = next((agent for t, agent in sorted(team.turns) if t >= tool.end_ns), None)
    if following != target:
        return []
    return [decision(tool.end_ns, DecisionKind.DELEGATE, [target], implied=True),
            message(tool.end_ns, sender, [target], "handoff", implied=True)]


def _rehang_root(span: SpanRecord, by_id: Mapping[str, SpanRecord]) -> SpanRecord:
    """A trace's root hangs under the span its link names, when that span is in the run."""
    if span.parent_id in by_id:
        return span
    for link in span.links:
        if link.span_id in by_id and link.span_id != span.span_id:
            return rehang(span, link.span_id)
    return span


def _participant_names(spans: Iterable[SpanRecord]) -> dict[str, str]:
    """Agent type -> agent name, from the participants' ``invoke_agent`` spans, and
    for a participant that never spoke, from its container's type (``<name>_<team id>``)."""
    names: dict[str, str] = {}
    containers: dict[str, str] = {}
    for span in spans:
        attrs = span.attributes
        agent_id, name = attrs.get(Attr.AGENT_ID), attrs.get(Attr.AGENT_NAME)
        if isinstance(agent_id, str) and isinstance(name, str):
            names[agent_id.split("/", 1)[0]] = name
        for side in ("recipient", "sender"):
            kind = attrs.get(f"{side}_agent_type")
            if attrs.get(f"{side}_agent_class") == _PARTICIPANT and isinstance(kind, str):
                found = _TEAM_ID.search(kind)
                if found and found.start() > 0 and kind[found.start()] == "_":
                    containers[kind] = kind[:found.start()]
    return {**containers, **names}


def _response(readers: list[SpanRecord], names: Mapping[str, str]) -> tuple[str, list[str], tuple[str | None, str | None]] | None:
    """(sender, recipients, (message type, handoff target)) of an agent's response
    published to the group (``readers``: its processing)."""
    sender = next((names.get(str(s.attributes.get("sender_agent_type"))) for s in readers), None)
    if sender is None:
        return None
    recipients = [names[t] for s in readers if (t := str(s.attributes.get("recipient_agent_type"))) in names]
    return sender, recipients, _message_type(readers)


def _message_type(readers: list[SpanRecord]) -> tuple[str | None, str | None]:
    """The chat message's type (a class name, not content) from the body the
    runtime logged, and a HandoffMessage's target (an agent name)."""
    for span in readers:
        body = span.attributes.get("message")
        if isinstance(body, str) and body.startswith("{"):
            try:
                data: Any = orjson.loads(body)
            except orjson.JSONDecodeError:
                return None, None
            response = data.get("response") if isinstance(data, dict) else None
            chat = response.get("chat_message") if isinstance(response, dict) else None
            if not isinstance(chat, dict):
                return None, None
            kind, target = chat.get("type"), chat.get("target")
            return (kind if isinstance(kind, str) else None,
                    target if kind == "HandoffMessage" and isinstance(target, str) and target else None)
    return None, None
