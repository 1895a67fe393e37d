"""The dataset views: rows built from one prepared trace.

- ``traces``: the trace itself, rewards and metrics written back.
- ``decisions``: one row per orchestration sub-decision (spawn, delegate,
  communicate, aggregate, stop), with what the decider saw (``context``).
- ``turns``: one row per agent LLM call, with the tool calls that followed.
- ``chat``: one conversation per agent episode (TRL / verl ``messages``),
  from that agent's side (other agents' turns are input), its own replies
  marked ``trainable``.
- ``triplets`` (agent-lightning's shape, with token ids) is in :mod:`.lightning`.

The cross-trace views (``groups``, ``preferences``: branches of a fork) are
in :mod:`.groups`.

``chat`` and ``triplets`` need captured content: a trace without it raises
``ContentMissing``, which the engine turns into a skipped trace (or a failed
run when strict).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from typing import Any

from .._tokens import TokenReader
from ..tracefiles import ContentIndex
from ..vocabulary import FORCED_STOP_REASONS, Channel, DecisionKind, EventKind, function_tool
from .analysis import Config, Prepared, Turn, find_turns
from .conversations import for_templates, prompt_and_completion, row_messages, split_episode
from .messages import as_seen_by, normalize_messages, normalize_output, reply_key, shows_in_chat

CAPTURE_HINT = (
    "the {view} view needs captured content (prompts and replies), and trace {trace_id} "
    "({where}) has LLM calls whose content is not in a content store: no content/content-*.jsonl "
    "beside the trace files holds their refs. Record the runs with content capture on "
    "(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, orch_otel.instrument(capture_content=True), "
    "or `orch-otel demo --capture-content`) and keep the content/ folder next to the traces; "
    "the decisions, turns, groups and traces views work without content (in the jsonl, parquet and hf formats)."
)
_CONTEXT_LIMIT = 8  # most recent messages/returns kept in a decision's context


class ContentMissing(RuntimeError):
    """A view that needs captured content got a trace without it."""


def _item(kind: str, ref: str | None, store: ContentIndex, always: bool = False, **extra: Any) -> dict[str, Any] | None:
    if not ref and not always:
        return None
    item = {"kind": kind, **{k: v for k, v in extra.items() if v is not None}}
    if ref:
        item["ref"] = ref
        if store.get(ref) is not None:
            item["content"] = store.value(ref)
    return item


def llm_item(kind: str, ref: str | None, store: ContentIndex, event_id: str) -> dict[str, Any] | None:
    """A context item for one side of an LLM call (``llm_input`` / ``llm_output``)."""
    return _item(kind, ref, store, event_id=event_id)


def _action(e: dict[str, Any]) -> dict[str, Any]:
    targets = e.get("targets") or e.get("recipients") or ([e["to"]] if e.get("to") else [])
    decision = e.get("decision")
    return {
        "targets": list(targets) if decision != DecisionKind.STOP.value else [],
        "fanout_size": len(targets) if decision == DecisionKind.SPAWN.value else None,
        "reason": e.get("reason"),
        "sources": e.get("sources"),
        "message_type": e.get("message_type"),
    }


def decision_points(p: Prepared, store: ContentIndex) -> Iterator[tuple[int, dict[str, Any], dict[str, Any] | None,
                                                                    list[dict[str, Any]]]]:
    """Each decision event in trace order, with what its decider saw:
    ``(position, event, the decider's latest LLM call or None, context)``.
    The context is that call's input and output, then the messages and
    returns addressed to the decider since its previous decision (at most
    ``_CONTEXT_LIMIT``). The ``decisions`` and ``groups`` views both read it."""
    last_llm: dict[tuple[str, Any], dict[str, Any]] = {}
    inbox: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for i, e in enumerate(p.events):
        kind, agent = e["type"], e["agent"]
        if e.get("decision") is not None:
            context: list[dict[str, Any] | None] = []
            llm = last_llm.get((agent, e.get("instance")))
            if llm is not None:
                context.append(llm_item("llm_input", llm.get("input_ref"), store, llm["id"]))
                context.append(llm_item("llm_output", llm.get("content_ref"), store, llm["id"]))
            context.extend(inbox.pop(agent, []))
            yield i, e, llm, [c for c in context if c is not None]
        if kind == EventKind.MESSAGE.value and e.get("channel") == Channel.LLM.value:
            last_llm[(agent, e.get("instance"))] = e  # each invocation's own latest call
        elif kind == EventKind.MESSAGE.value:
            for recipient in e.get("recipients") or []:
                item = _item("message", e.get("content_ref"), store, event_id=e["id"], **{"from": agent})
                if item is not None:
                    inbox[recipient] = (inbox[recipient] + [item])[-_CONTEXT_LIMIT:]
        elif kind == EventKind.HUMAN_INTERVENTION.value:
            for recipient in e.get("recipients") or []:  # a human's words relayed to agents (AutoGen's UserProxyAgent)
                item = _item("human", e.get("content_ref"), store, event_id=e["id"])
                if item is not None:
                    inbox[recipient] = (inbox[recipient] + [item])[-_CONTEXT_LIMIT:]
        elif kind == EventKind.RETURN.value and e.get("to"):
            item = _item("return", e.get("content_ref"), store, always=True, event_id=e["id"],
                         status=e.get("status"), **{"from": agent})
            if item is not None:
                inbox[e["to"]] = (inbox[e["to"]] + [item])[-_CONTEXT_LIMIT:]


def decision_rows(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    rows = []
    base = p.base
    for i, e, _, context in decision_points(p, store):
        decision, agent = e["decision"], e["agent"]
        unit = "message" if e["type"] == EventKind.MESSAGE.value else "orchestrator"
        rows.append({
            **base,
            "event_id": e["id"],
            "decision": decision,
            "agent": agent,
            "role": e.get("role"),
            "t": float(e["t"]),
            "implied": bool(e.get("implied", False)),
            "status": e.get("status"),
            "action": _action(e),
            "forced": bool(e.get("forced")) or e.get("reason") in FORCED_STOP_REASONS
            if decision == DecisionKind.STOP.value else None,
            "options": e.get("options"),
            "content_ref": e.get("content_ref"),
            "content": store.value(e.get("content_ref")),
            "context": context,
            "reward": p.reward,
            "rewards": p.rewards,
            "credit_unit": unit,
            **p.credit.unit(agent, 1, i, e.get("instance")),
            **p.outcome_columns,
        })
    return rows


def _tool_call(p: Prepared, turn: Turn, i: int, store: ContentIndex) -> dict[str, Any]:
    call = p.events[i]
    result = p.events[turn.tool_results[i]] if i in turn.tool_results else None
    out: dict[str, Any] = {"tool": call.get("tool"), "call_id": call.get("call_id"), "event_id": call["id"],
                           "status": result.get("status") if result else None}
    for key, ev in (("arguments", call), ("result", result)):
        ref = ev.get("content_ref") if ev else None
        if ref:
            out[f"{key}_ref"] = ref
            if store.get(ref) is not None:
                out[key] = store.value(ref)
    return out


def _turn_content(p: Prepared, e: dict[str, Any], store: ContentIndex, view: str, need: bool):
    in_ref, out_ref = e.get("input_ref"), e.get("content_ref")
    inp = store.value(in_ref) if in_ref else None
    out = store.value(out_ref) if out_ref else None
    if need and ((in_ref and inp is None) or (out_ref and out is None) or not (in_ref or out_ref)):
        where = f"event {e['id']} of agent {e['agent']!r}"
        raise ContentMissing(CAPTURE_HINT.format(view=view, trace_id=p.trace["trace_id"], where=where))
    messages = normalize_messages(inp) if in_ref and inp is not None else None
    output = normalize_output(out) if out_ref and out is not None else None
    return messages, output


def turn_contents(p: Prepared, turns: list[Turn], store: ContentIndex, view: str, need: bool):
    """Each turn's (prompt, output), the prompt as its agent's side of the
    conversation (:func:`~.messages.as_seen_by`): another agent's turns in it
    are input, never this agent's own. Who gave a reply is read from this
    trace and, when the first pass read other traces of its task
    (``p.task``, :mod:`.tasks`), from theirs: an earlier run's reply is its
    agent's own turn there too."""
    raw = [_turn_content(p, p.events[t.index], store, view, need) for t in turns]
    given: dict[bytes, list[str]] = defaultdict(list)
    for turn, (_, output) in zip(turns, raw):
        if output is not None:
            given[reply_key(output)].append(turn.episode[0])
    agents = {t.episode[0] for t in turns}
    task = p.task
    if task is not None:
        agents |= task.agents

    def speakers_of(key: bytes) -> Collection[str]:
        own = given.get(key, ())
        return own if task is None else [*own, *task.given.get(key, ())]

    sole = len(agents) == 1
    return [(as_seen_by(messages, t.episode[0], speakers_of, sole) if messages is not None else None, output)
            for t, (messages, output) in zip(turns, raw)]


def decisions_after(events: list[dict[str, Any]], turns: list[Turn]) -> list[list[str]]:
    """Per turn, the decisions (spawn, delegate, communicate, aggregate, stop)
    its agent invocation made after that model call and before its next one."""
    out: list[list[str]] = [[] for _ in turns]
    at = {turn.index: k for k, turn in enumerate(turns)}
    latest: dict[tuple[str, Any], int] = {}
    for i, e in enumerate(events):
        invocation = (e["agent"], e.get("agent_span_id"))
        if i in at:
            latest[invocation] = at[i]
        elif e.get("decision") is not None and invocation in latest:
            out[latest[invocation]].append(str(e["decision"]))
    return out


def turn_rows(p: Prepared, config: Config, store: ContentIndex, turns: list[Turn] | None = None,
              need_content: bool = False) -> list[dict[str, Any]]:
    rows = []
    base = p.base
    turns = turns if turns is not None else find_turns(p.events)
    contents = turn_contents(p, turns, store, config.view, need_content or config.need_content)
    decisions = decisions_after(p.events, turns)
    tokens = TokenReader(store.get)  # prompt ids refer to earlier calls of the trace: read in order, each once
    for turn, (messages, output), made in zip(turns, contents, decisions):
        e = p.events[turn.index]
        last = max([turn.index, *turn.tool_calls])
        credit = p.credit.unit(e["agent"], 1 + len(turn.tool_calls), last, e.get("instance"))
        record = tokens.read(e.get("tokens_ref"))
        rows.append({
            **base,
            "event_id": e["id"],
            "agent": e["agent"],
            "role": e.get("role"),
            "model": e.get("model"),
            "provider": e.get("provider"),
            "t": float(e["t"]),
            "duration_s": e.get("duration_s"),
            "status": e.get("status"),
            "episode": turn.episode[1],
            "turn_index": turn.turn_index,
            "input_ref": e.get("input_ref"),
            "output_ref": e.get("content_ref"),
            "input_messages": messages,
            "output": output["content"] if output is not None else None,
            "output_tool_calls": output.get("tool_calls") if output is not None else None,
            "tool_calls": [_tool_call(p, turn, i, store) for i in turn.tool_calls],
            "tools": offered_tools(store, e.get("tools_ref")),
            "input_tokens": e.get("input_tokens"),
            "output_tokens": e.get("output_tokens"),
            "instance": e.get("instance"),
            "decisions": made,
            "tokens_ref": e.get("tokens_ref"),
            "prompt_token_ids": record.prompt_token_ids if record is not None else None,
            "response_token_ids": record.response_token_ids if record is not None else None,
            "response_logprobs": record.response_logprobs if record is not None else None,
            "reward": p.reward,
            "rewards": p.rewards,
            "credit_unit": "turn",
            **credit,
            **p.credit.per_token(credit, e.get("output_tokens")),
            **p.outcome_columns,
        })
    return rows


def _json_type(value: Any) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                       (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return name
    return "string"


def _tool_schema(name: str, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict) and set(arguments) <= {"args", "kwargs"}:
        arguments = arguments.get("kwargs") or {}
    props = {k: {"type": _json_type(v)} for k, v in arguments.items()} if isinstance(arguments, dict) else {}
    return function_tool(name, "", {"type": "object", "properties": props})


def offered_tools(store: ContentIndex, ref: str | None) -> list[dict[str, Any]]:
    """The tool definitions recorded for a model call (``tools_ref``), in the
    OpenAI function format; [] when none were captured. Accepts the OpenAI
    form, a bare ``{name, description, parameters}`` and Anthropic's
    ``input_schema``, which is what chat models bind. A tool of another type
    (a hosted ``web_search``, ``mcp``, ...) is no function the model calls: left out."""
    value = store.value(ref) if ref else None
    out = []
    for tool in value if isinstance(value, list) else ():
        if isinstance(tool, dict) and tool.get("type", "function") != "function":
            continue
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters") or function.get("input_schema")
            out.append(function_tool(function["name"], function.get("description") or "", parameters))
    return out


def _row_tools(p: Prepared, store: ContentIndex, items: list[tuple[Turn, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The tools the row's calls were offered, as recorded with the calls; a
    tool that was called but not recorded as offered gets a schema inferred
    from its calls' arguments (not a hosted one, which the provider ran)."""
    tools: dict[str, dict[str, Any]] = {}
    inferred: set[str] = set()
    for turn, row in items:
        for tool in offered_tools(store, p.events[turn.index].get("tools_ref")):
            tools[tool["function"]["name"]] = tool
            inferred.discard(tool["function"]["name"])
        for call in row["output_tool_calls"] or ():
            name = call["function"]["name"]
            if name not in tools:
                tools[name] = _tool_schema(name, None)
                inferred.add(name)
        for i, call in zip(turn.tool_calls, row["tool_calls"]):
            if p.events[i].get("hosted"):  # run by the model's provider: no function tool
                continue
            if call["tool"] and (call["tool"] not in tools or ("arguments" in call and call["tool"] in inferred)):
                tools[call["tool"]] = _tool_schema(call["tool"], call.get("arguments"))
                inferred.add(call["tool"])
    return list(tools.values())


def _reply(row: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = {"role": "assistant", "content": row["output"] or ""}
    if row["output_tool_calls"]:
        reply["tool_calls"] = row["output_tool_calls"]
    return reply


def _rows_of_episode(items: list[tuple[Turn, dict[str, Any], bool]]) -> list[list[int]]:
    """The episode's calls grouped into rows (indexes into ``items``): the
    calls whose reply shows in a chat as :func:`split_episode` groups them,
    and each call whose reply shows nothing (only hosted calls or reasoning)
    in the row current when it was made (the first row, before any)."""
    shown = [k for k, (_, _, visible) in enumerate(items) if visible]
    if not shown:
        return []
    segments = split_episode([(items[k][1]["input_messages"] or [], _reply(items[k][1])) for k in shown])
    row_of = {shown[i]: n for n, segment in enumerate(segments) for i in segment}
    rows: list[list[int]] = [[] for _ in segments]
    current = 0
    for k in range(len(items)):
        current = row_of.get(k, current)
        rows[current].append(k)
    return rows


def chat_rows(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    """Rows of :mod:`.conversations`: per agent episode, one per run of calls
    whose prompts extend each other. A reply with no chat message (only
    hosted tool calls or reasoning, which the next prompt does not show) is
    no turn: not trained, it does not break the row, and the row counts it
    (``replies_not_shown``)."""
    turns = find_turns(p.events)
    turn_data = turn_rows(p, config, store, turns, need_content=True)
    episodes: dict[tuple[str, int], list[tuple[Turn, dict[str, Any], bool]]] = {}
    for turn, row in zip(turns, turn_data):
        if row["output_ref"] is None:  # cut off before it answered (cancelled): no reply to train
            continue
        visible = shows_in_chat(store.value(row["output_ref"]))
        episodes.setdefault(turn.episode, []).append((turn, row, visible))
    rows = []
    for (agent, episode), items in episodes.items():
        for segment, indexes in enumerate(_rows_of_episode(items)):
            part = [(items[i][0], items[i][1]) for i in indexes]
            calls = [(items[i][1]["input_messages"] or [], _reply(items[i][1])) for i in indexes if items[i][2]]
            messages = for_templates(row_messages(calls)) or []
            prompt, completion = prompt_and_completion(messages)
            n_steps = sum(1 + len(turn.tool_calls) for turn, _ in part)
            last = max(i for turn, _ in part for i in (turn.index, *turn.tool_calls))
            first = p.events[part[0][0].index]
            rows.append({
                **p.base,
                "agent": agent,
                "role": first.get("role"),
                "episode": episode,
                "segment": segment,
                "event_ids": [row["event_id"] for _, row in part],
                "messages": messages,
                "prompt": prompt,
                "completion": completion,
                "tools": _row_tools(p, store, part),
                "replies_not_shown": sum(not items[i][2] for i in indexes),
                "reward": p.reward,
                "credit_unit": "agent",
                **p.credit.unit(agent, n_steps, last, first.get("instance")),
                **p.outcome_columns,
            })
    return rows


def trace_rows(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    return [p.rewritten(config)]


BUILDERS = {
    "traces": trace_rows,
    "decisions": decision_rows,
    "turns": turn_rows,
    "chat": chat_rows,
}

