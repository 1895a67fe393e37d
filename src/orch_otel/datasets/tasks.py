"""Who gave each reply, across the runs of one task: what the views that
read prompts (``turns``, ``chat``, ``triplets``, ``groups``, ``preferences``
and the ``art`` format) use to tell an agent's own earlier turns from other
speakers' (:func:`~.messages.as_seen_by`).

A later run of one conversation (runs of one OpenAI Agents SDK session, a
LangGraph thread resumed, an AutoGen team run again) sends the model the
replies of the earlier runs, and those are in other traces of the same
``task_id``. So before any row is made, a first pass reads every trace once
and keeps, per task id, the agents with model calls and each reply's key (a
16-byte digest of its text and tool calls, :func:`~.messages.reply_key`)
with the agents that gave it. The rows of each trace then read its task's
map. Tasks with one trace are dropped after the pass (a trace's own replies
are read with its rows), and a trace whose task id is its trace id (no task
named) is not kept at all: memory grows with the number of replies in tasks
of several traces (some 100 bytes each), never with their content.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..tracefiles import ContentIndex
from ..vocabulary import Channel, EventKind
from .messages import normalize_output, reply_key
from .reader import RawLine, check_trace, raw_lines

PROMPT_VIEWS = ("turns", "chat", "triplets", "groups", "preferences")


def reads_prompts(view: str, trainer: str | None) -> bool:
    """Whether a view (or trainer format) builds prompts, and so needs the first pass."""
    return view in PROMPT_VIEWS or trainer == "art"


_MESSAGE, _LLM = EventKind.MESSAGE.value, Channel.LLM.value


def is_model_call(event: dict[str, Any]) -> bool:
    return event["type"] == _MESSAGE and event.get("channel") == _LLM


@dataclass(slots=True)
class Replies:
    """One task's model calls: the agents that made them, and each reply's key
    -> the agents that gave it (:func:`~.messages.reply_key`)."""

    first_trace: str
    several: bool = False  # traces of other ids than first_trace were read
    agents: set[str] = field(default_factory=set)
    given: dict[bytes, tuple[str, ...]] = field(default_factory=dict)

    def add(self, agent: str, key: bytes) -> None:
        speakers = self.given.get(key, ())
        if agent not in speakers:
            self.given[key] = (*speakers, agent)

    def merge(self, other: Replies) -> None:
        self.several = self.several or other.several or other.first_trace != self.first_trace
        self.agents |= other.agents
        for key, speakers in other.given.items():
            for agent in speakers:
                self.add(agent, key)


class TaskReplies:
    """The first pass's result while it reads: task id -> :class:`Replies`."""

    def __init__(self) -> None:
        self.tasks: dict[str, Replies] = {}

    def add_trace(self, trace: dict[str, Any], store: ContentIndex) -> None:
        task_id, trace_id = trace["task_id"], trace["trace_id"]
        if task_id == trace_id:  # no task named: a task of this one trace
            return
        calls = []
        for e in trace["events"]:
            if is_model_call(e):
                ref = e.get("content_ref")
                value = store.value(ref) if ref else None
                calls.append((e["agent"], reply_key(normalize_output(value)) if value is not None else None))
        task = self.tasks.get(task_id)
        if task is None:
            task = self.tasks[task_id] = Replies(trace_id)
        task.several = task.several or trace_id != task.first_trace
        for agent, key in calls:
            task.agents.add(agent)
            if key is not None:
                task.add(agent, key)

    def read(self, lines: Iterable[RawLine], store: ContentIndex) -> None:
        """Every trace of ``lines``. A line the views will reject adds nothing
        here (the rows pass reports it, with its file and line)."""
        for line in lines:
            if line.error is not None:
                continue
            try:
                trace = orjson.loads(line.raw)
                if isinstance(trace, dict) and trace.get("task_id") != trace.get("trace_id"):  # else: no task named
                    self.add_trace(check_trace(trace), store)
            except Exception:  # not a trace (BadTrace), or content the views cannot read: its rows say why
                continue

    def merge(self, other: TaskReplies) -> None:
        for task_id, replies in other.tasks.items():
            mine = self.tasks.get(task_id)
            if mine is None:
                self.tasks[task_id] = replies
            else:
                mine.merge(replies)

    def finish(self) -> dict[str, Replies]:
        """The tasks read in more than one trace."""
        return {task_id: replies for task_id, replies in self.tasks.items() if replies.several}


def task_replies(paths: Sequence[str | os.PathLike[str]], store: ContentIndex) -> dict[str, Replies]:
    """The first pass over whole trace files (the local engine's): the tasks read in several traces."""
    replies = TaskReplies()
    for path in paths:
        try:
            replies.read(raw_lines(path), store)
        except OSError:  # Unreadable too: the rows pass sets the file aside, naming it
            continue
    return replies.finish()
