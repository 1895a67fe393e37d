"""Traces and their captured content, from dicts, models or trace files."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._inputs import printable, shown
from ..tracefiles import ContentIndex, content_dirs, find_trace_files, read_lines
from ..vocabulary import MAX_NAME_CHARS

Lookup = Callable[[str], "str | None"]


@dataclass
class Found:
    where: str  # file:line
    trace: dict[str, Any]


def check(trace: Any, where: str = "trace") -> dict[str, Any]:
    """The trace as a dict, or ValueError naming what is wrong (only what drawing needs)."""
    if hasattr(trace, "model_dump"):  # orch_otel.models.Trace
        trace = trace.model_dump(by_alias=True, exclude_none=True)
    if not isinstance(trace, Mapping):
        raise ValueError(f"{where}: expected a trace (a JSON object), got {type(trace).__name__}")
    events = trace.get("events")
    if not isinstance(events, list):
        raise ValueError(f"{where}: not a trace: 'events' is missing or not a list")
    for i, event in enumerate(events):
        if not isinstance(event, Mapping):
            raise ValueError(f"{where}: events[{i}]: expected an object, got {type(event).__name__}")
    edges = trace.get("edges", [])
    if not isinstance(edges, list) or not all(isinstance(e, Mapping) for e in edges):
        raise ValueError(f"{where}: 'edges' must be a list of objects")
    try:
        return _shown(trace)
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to draw") from None


def _shown(value: Any) -> Any:
    """The trace as the page shows it: every text (names, reasons, ids; content is
    not in a trace, only its refs) with control characters and bidi overrides
    escaped and cut to ``MAX_NAME_CHARS`` (:func:`orch_otel._inputs.shown`)."""
    if type(value) is str:
        return value if len(value) <= MAX_NAME_CHARS and value.isprintable() else shown(value)
    if isinstance(value, Mapping):
        return {(_shown(k) if type(k) is str else k): _shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    return value


def read(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Found], list[str]]:
    """Every trace in the files (or directories) named, and each line (or file)
    set aside, as 'file:line: reason' (names escaped for printing). A named
    file that is missing (or no regular file) raises FileNotFoundError."""
    paths = list(paths)
    found: list[Found] = []
    problems: list[str] = []
    files, unread = find_trace_files(paths)
    for problem in unread:
        if problem.where in {str(Path(p)) for p in paths}:
            raise FileNotFoundError(2, problem.reason, problem.where)
        problems.append(f"{printable(problem.where)}: {problem.reason}")
    for file in files:
        for line in read_lines(file):
            where = line.where
            if line.trace is None:
                problems.append(f"{where}: {'' if not line.lineno else 'skipped: '}{printable(line.error or '')}")
                continue
            try:
                found.append(Found(where, check(line.trace, where)))
            except ValueError as exc:
                problems.append(f"{exc}; skipped")
    return found, problems


def contents_for(paths: Iterable[str | os.PathLike[str]]) -> ContentIndex:
    """The content store beside trace files (``content/content-*.jsonl``), read lazily."""
    return ContentIndex(content_dirs(paths))


def lookup_of(contents: Any) -> Lookup | None:
    """A ref -> text function from a mapping, a ContentIndex (anything with ``get``), or a trace directory."""
    if contents is None:
        return None
    if isinstance(contents, (str, os.PathLike)):
        return contents_for([Path(contents)]).get
    if isinstance(contents, Mapping):
        return lambda ref: contents.get(ref)
    if callable(getattr(contents, "get", None)):
        return contents.get
    raise TypeError(f"contents: expected a mapping of ref -> text, a ContentIndex or a directory, got {type(contents).__name__}")


class NotChosen(LookupError):
    """No trace, or no single trace, fits what was asked (the message lists the ids)."""


def pick(found: list[Found], source: str, trace_id: str | None = None, fork_of: str | None = None) -> Found:
    """The trace with ``trace_id``; else the one forked from ``fork_of``; else the only one."""
    ids = [str(f.trace.get("trace_id")) for f in found]
    listing = ", ".join(ids[:20]) + (f" ... and {len(ids) - 20} more" if len(ids) > 20 else "")
    if trace_id is not None:
        for one in found:
            if str(one.trace.get("trace_id")) == trace_id:
                return one
        raise NotChosen(f"no trace with id {trace_id} in {source}" + (f"; its traces: {listing}" if ids else ""))
    if fork_of is not None and len(found) > 1:
        for one in found:
            if any(isinstance(e.get("fork"), dict) and e["fork"].get("source_trace_id") == fork_of for e in one.trace["events"]):
                return one
    if len(found) == 1:
        return found[0]
    if not found:
        raise NotChosen(f"no trace in {source}")
    raise NotChosen(f"{source} holds {len(found)} traces: {listing}; choose one by its trace id")
