"""One trace line -> its dataset rows: the per-record step that the local
engine runs in a loop and the Ray engine in Ray tasks (both in
:mod:`.engine`'s order, so their outputs are identical); and which files
found in an input folder are this command's own outputs."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..tracefiles import ContentIndex
from .analysis import VIEWS, Config, prepare
from .art import art_rows
from .groups import BUILDERS as GROUP_BUILDERS
from .groups import NotABranch
from .lightning import triplet_rows
from .reader import BadTrace, RawLine, parse_trace
from .tasks import Replies
from .tokenize import TokensMissing
from .views import BUILDERS as TRACE_BUILDERS
from .views import ContentMissing

BUILDERS = {**TRACE_BUILDERS, "triplets": triplet_rows, **GROUP_BUILDERS}

_REF_KEYS = ("content_ref", "input_ref", "tools_ref")


def process_line(line: RawLine, config: Config, store: ContentIndex,
                 tasks: Mapping[str, Replies] | None = None) -> dict[str, Any]:
    """One trace line -> its rows, a reject saying why not, (``missing_content``)
    the reason a view that needs captured content cannot use this trace, or
    (``not_branch``) a trace that the groups / preferences views do not use.
    ``tasks``: the first pass's replies of the tasks of several traces (:mod:`.tasks`)."""
    base = {"where": line.where, "size": line.size}
    if line.error is not None:
        return {**base, "reject": line.error, "line": ""}
    try:
        trace = parse_trace(line, validate=config.validate)
    except BadTrace as exc:
        return {**base, "reject": str(exc), "line": line.raw.decode("utf-8", "replace")}
    except RecursionError:  # the checks bound nesting: this is a backstop, never a crash
        return {**base, "reject": "nested too deeply to check", "line": line.raw.decode("utf-8", "replace")}
    try:
        prepared = prepare(trace, config)
        prepared.task = tasks.get(trace["task_id"]) if tasks else None
        rows = (trainer_rows(config.trainer) if config.trainer else BUILDERS[config.view])(prepared, config, store)
    except ContentMissing as exc:  # TokensMissing too: the same skip, told apart for the summary
        return {**base, **_identity(trace, line), "missing_content": str(exc),
                **({"missing_tokens": True} if isinstance(exc, TokensMissing) else {})}
    except NotABranch:
        return {**base, **_identity(trace, line), "not_branch": True}
    except Exception as exc:  # a trace the views cannot read is kept aside, never dropped
        return {**base, "reject": f"cannot build {config.view} rows: {type(exc).__name__}: {exc}",
                "line": line.raw.decode("utf-8", "replace"), "is_trace": True}
    result = {**base, **_identity(trace, line), "rows": rows}
    if config.reward is not None:  # for the check that every --reward term names something
        result["reward_names"] = sorted(prepared.rewards)
    if config.view == "traces":
        refs = {e[k] for e in trace["events"] for k in _REF_KEYS if type(e.get(k)) is str}
        result["contents"] = [[ref, text] for ref in sorted(refs) if (text := store.get(ref)) is not None]
    return result


def trainer_rows(trainer: str):
    """The builder of a trainer format whose rows are made per trace (not from a view's rows)."""
    return {"art": art_rows}[trainer]


def _identity(trace: dict[str, Any], line: RawLine) -> dict[str, Any]:
    """Ids, and a digest of the line to tell a copy of a trace from a different trace under the same id."""
    return {"trace_id": trace["trace_id"], "task_id": trace["task_id"],
            "digest": hashlib.blake2b(line.raw, digest_size=16).hexdigest()}


def is_own_output(path: str | os.PathLike[str], outdir: Path) -> bool:
    """A file this command writes (rejects, non-trace views) found by a
    directory input: never read back as traces."""
    path = Path(path).resolve()
    if path.parent != outdir:
        return False
    own = {f"{v}.jsonl" for v in VIEWS if v != "traces"} | {f"{v}.art.jsonl" for v in VIEWS}
    return path.name.endswith(".rejects.jsonl") or path.name in own
