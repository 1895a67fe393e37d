"""The task a run belongs to, named around the code that starts it:

    with orch_otel.task("ticket-18"):
        await team.run(task="I was charged twice")

A context variable, so it follows the run into the tasks AutoGen starts. The
integrations that start a trace root with no task id of their own read it
(AutoGen's team and agent runs, ``@workflow`` without ``task_id=``); it makes
no span, so the run keeps its own root, system and replayable input.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_log = logging.getLogger(__name__)

_TASK_ID: ContextVar[str | None] = ContextVar("orch_otel_task_id", default=None)


@contextmanager
def task(task_id: str) -> Iterator[None]:
    """Name the task of every run started inside the block (``task_id`` in the trace).
    An empty id names none (logged): the runs keep their default task id."""
    name = str(task_id) if task_id is not None else ""
    if not name:
        _log.warning("orch-otel: task() needs a non-empty task id; the runs keep their default task id")
    token = _TASK_ID.set(name or None)
    try:
        yield
    finally:
        _TASK_ID.reset(token)


def current_task_id() -> str | None:
    """The task id named by the innermost ``task()`` block, if any."""
    return _TASK_ID.get()
