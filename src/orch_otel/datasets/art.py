"""OpenPipe ART (0.5.x) trajectories, written as ART's own JSONL reads them:
one ``TrajectoryGroup`` per line (``trajectories``, ``exceptions``,
``metadata``, ``metrics``, ``logs``), which
``art.utils.trajectory_migration.deserialize_trajectory_groups`` turns into
``Trajectory`` objects whose replies are real ``Choice`` objects (plain
``Trajectory.model_validate`` leaves them dicts).

A trajectory is one conversation of one agent: its model calls, in order,
as long as each call's prompt extends the conversation so far (the prompt
of the first call, then each reply and the messages that came after it);
a call whose prompt does not (a fresh system prompt, a trimmed history)
starts a new trajectory. ``tools`` is every tool its calls were offered
(ART renders one tool list per trajectory: AutoGen's reflection on a tool
result, offered none, is rendered with them by ART's SFT; ART RL reads the
captured prompt ids, and starts a new sequence where they do not extend). Every reply is a ``Choice`` in exactly one
trajectory, in its main history (ART's SFT reads no other), and nothing goes
to ``additional_histories``; a reply with no chat message (only hosted tool calls or
reasoning) is no ``Choice`` and no break, as in the ``chat`` view
(``metadata.replies_not_shown``). ART RL needs, on each trainable Choice, the
``prompt_token_ids`` / ``token_ids`` extras and one ``logprobs.content``
entry per completion id: written when the ids were captured (or, without
logprobs, retokenized with ``--tokenizer``); without ids the trajectory says
it is for SFT only (``metadata.art_rl`` false, a line in ``logs``).

Groups: the branches of one fork form one group (ART compares their
rewards); in a branch only the calls from the fork on are trainable (the
calls before it are the recorded ones, trained in the source trace's rows).
Other traces are grouped by ``task_id`` (runs of one task).
"""

from __future__ import annotations

from typing import Any

from ..tracefiles import ContentIndex
from ..vocabulary import Channel, EventKind
from .analysis import Config, Prepared
from .groups import NotABranch, find_fork
from .lightning import reply_message, tokenized_calls
from .messages import shows_in_chat
from .tokenize import CallTokens

SFT_ONLY = ("orch-otel: no token ids were captured for these replies and no --tokenizer was given: this trajectory "
            "is for ART SFT only (ART RL needs prompt_token_ids, token_ids and logprobs on each Choice)")
NO_LOGPROBS = ("orch-otel: token ids without logprobs (retokenized with --tokenizer, or not returned by the server): "
               "ART RL takes these Choices only with allow_training_without_logprobs=True")


def _key(m: dict[str, Any]) -> tuple[Any, ...]:
    calls = tuple((c["id"], c["function"]["name"]) for c in m.get("tool_calls") or ())
    return (m["role"], m["content"], calls, m.get("tool_call_id"))


def _extends(conversation: list[dict[str, Any]], prompt: list[dict[str, Any]]) -> bool:
    return len(prompt) >= len(conversation) and all(_key(a) == _key(b) for a, b in zip(conversation, prompt))


def _choice(reply: dict[str, Any], tokens: CallTokens | None) -> dict[str, Any]:
    """An OpenAI chat ``Choice``; with ids, ART's vLLM extras and, with logprobs, one entry per completion id."""
    message: dict[str, Any] = {"role": "assistant", "content": reply["content"]}
    if reply.get("tool_calls"):
        message["tool_calls"] = reply["tool_calls"]
    logprobs: dict[str, Any] | None = None
    if tokens is not None and tokens.log_probs is not None:  # vLLM's return_tokens_as_token_ids spelling of a token
        logprobs = {"content": [{"token": f"token_id:{i}", "logprob": lp, "bytes": None, "top_logprobs": []}
                                for i, lp in zip(tokens.response_ids, tokens.log_probs)]}
    choice: dict[str, Any] = {"finish_reason": "tool_calls" if reply.get("tool_calls") else "stop", "index": 0,
              "logprobs": logprobs, "message": message}
    if tokens is not None:
        choice.update(prompt_token_ids=tokens.prompt_ids, token_ids=tokens.response_ids)
    return choice


class _Conversation:
    def __init__(self, agent: str, prompt: list[dict[str, Any]]) -> None:
        self.agent = agent
        self.messages = list(prompt)  # the chat so far, to test the next prompt against
        self.items: list[dict[str, Any]] = list(prompt)  # ART's messages_and_choices
        self.tools: dict[str, dict[str, Any]] = {}
        self.rows: list[dict[str, Any]] = []
        self.sources: set[str] = set()
        self.choices = 0
        self.not_shown: list[tuple[int, str]] = []  # calls whose reply holds no chat message (hosted calls, reasoning)
        self.calls: list[tuple[int, str]] = []  # (position in the trace, event id) of each call that is a Choice

    def add(self, prompt: list[dict[str, Any]], row: dict[str, Any], tools: list[dict[str, Any]],
            tokens: CallTokens | None, trainable: bool, position: int) -> None:
        new = prompt[len(self.messages):] if self.rows else []
        self.items += new
        reply = reply_message(row)
        self.messages += new + [reply]
        if trainable:
            self.items.append(_choice(reply, tokens))
            self.choices += 1
            self.sources.add(tokens.source if tokens is not None else "absent")
        else:
            self.items.append(reply)  # replayed before the fork: context here
        self.tools.update((t["function"]["name"], t) for t in tools)
        self.rows.append(row)
        self.calls.append((position, row["event_id"]))


def _fork_start(p: Prepared) -> tuple[int, dict[str, Any]] | None:
    """(position of the first trainable call, fork) in a branch: the decider's
    call that made the forked decision, else the forked event; None off branches."""
    try:
        position, fork = find_fork(p.events)
    except NotABranch:
        return None
    event = p.events[position]
    for i in range(position, -1, -1):
        e = p.events[i]
        if (e["type"] == EventKind.MESSAGE.value and e.get("channel") == Channel.LLM.value
                and e["agent"] == event["agent"] and e.get("instance") == event.get("instance")):
            return i, fork
    return position, fork


def art_rows(p: Prepared, config: Config, store: ContentIndex) -> list[dict[str, Any]]:
    """One trace's ART trajectories, each naming its group in ``metadata.art_group``."""
    fork = _fork_start(p)
    start = fork[0] if fork is not None else 0
    conversations: list[_Conversation] = []
    not_shown: dict[str, list[tuple[int, str]]] = {}  # per agent, calls whose reply shows nothing, no conversation yet
    for turn, row, tools, tokens in tokenized_calls(p, config, store, "art format", required=False):
        prompt = row["input_messages"] or []
        current = next((c for c in reversed(conversations) if c.agent == row["agent"] and _extends(c.messages, prompt)),
                       None)
        if not shows_in_chat(store.value(row["output_ref"])):  # only hosted calls or reasoning: no turn (as in chat)
            (current.not_shown if current is not None else not_shown.setdefault(row["agent"], [])).append(
                (turn.index, row["event_id"]))
            continue
        if current is None:
            current = _Conversation(row["agent"], prompt)
            conversations.append(current)
        current.not_shown += not_shown.pop(row["agent"], [])
        current.add(prompt, row, tools, tokens, trainable=turn.index >= start, position=turn.index)
    group = fork[1]["group"] if fork is not None else f"task:{p.trace['task_id']}"
    branch = {"fork_event_id": fork[1]["event_id"], "decision": fork[1]["decision"], "option": fork[1]["forced"],
              "recorded": fork[1]["recorded"], "source_trace_id": fork[1]["source_trace_id"]} if fork else {}
    return [_trajectory(p, c, group, branch) for c in conversations if c.choices]


def _trajectory(p: Prepared, c: _Conversation, group: str, branch: dict[str, Any]) -> dict[str, Any]:
    first = c.rows[0]
    source = c.sources.pop() if len(c.sources) == 1 else "mixed"
    rl = source == "captured" and all(i["logprobs"] is not None for i in c.items if "message" in i)
    logs = [SFT_ONLY] if "absent" in c.sources or source == "absent" else [NO_LOGPROBS] if not rl else []
    context = sum(1 for i in c.items if i.get("role") == "assistant")
    outcomes = {k: v for k, v in p.outcome_columns.items() if v is not None}
    return {
        "messages_and_choices": c.items,
        "tools": list(c.tools.values()) or None,
        "additional_histories": [],
        "reward": p.reward if p.reward is not None else 0.0,
        "metrics": {"choices": c.choices, "calls": len(c.rows), **outcomes},
        "metadata": {
            "art_group": group, "trace_id": p.trace["trace_id"], "task_id": p.trace["task_id"],
            "system": p.trace.get("system"), "topology": p.trace.get("topology"), "agent": c.agent,
            "role": first["role"], "episodes": sorted({r["episode"] for r in c.rows}),
            "event_ids": [event for _, event in sorted(c.calls + c.not_shown)], "token_source": source, "art_rl": rl,
            "replies_not_shown": len(c.not_shown),
            # assistant messages that are not Choices: context for RL, but ART SFT trains every assistant message
            "context_assistant_messages": context, "reward_recorded": p.reward is not None, **branch,
        },
        "logs": logs,
    }


def group_line(key: str, trajectories: list[bytes]) -> bytes:
    """One ``TrajectoryGroup`` JSON line from its trajectories' JSON."""
    import orjson

    head = orjson.dumps({"exceptions": [], "metadata": {"art_group": key}, "metrics": {}, "logs": []})
    return b'{"trajectories":[' + b",".join(trajectories) + b"]," + head[1:] + b"\n"

