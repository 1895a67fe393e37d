"""The task a run belongs to, named around the code that starts it:

    with orch_otel.task("ticket-18"):
        await team.run(task="I was charged twice")

A context variable, so it follows the run into the tasks a framework starts.
Every integration that starts a trace root reads it through ``root_task_id``,
one precedence for all (docs/ids-and-rewards.md); it makes no span, so the run
keeps its own root, system and replayable input.
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


def root_task_id(explicit: object = None, resumed: object = None, implicit: object = None) -> str | None:
    """The task id of a run's root, the same way in every integration: the id
    the app passed to this run (LangGraph's ``orch.task_id`` metadata, the
    SDK's ``group_id``, ``workflow(task_id=)``), else the ``task()`` block's,
    else the task of the interrupted run this one resumes, else the framework's
    implicit conversation id (a thread, session or workflow id). None leaves
    the converter's default, the trace id."""
    for candidate in (explicit, current_task_id(), resumed, implicit):
        if candidate is not None and str(candidate):
            return str(candidate)
    return None
