"""See a run: one trace as a self-contained HTML orchestration timeline (one
lane per agent instance, invocation bars, arrows for spawns, delegations,
returns and messages, decisions with their options, the stop), two traces
side by side, or an index of many. No network: the CSS and JS are inline.

    html = orch_otel.view(trace)        # a dict, a models.Trace, or a trace file
    html.save("run.html")               # or show it in Jupyter (_repr_html_)

See docs/view.md."""

from __future__ import annotations

import os
from html import escape
from pathlib import Path
from typing import Any

from ..tracefiles import private_mkdir, private_opener
from ._compare import compare_page
from ._load import Lookup, check, contents_for, lookup_of, pick, read
from ._render import captured, trace_page

__all__ = ["View", "view"]


class View(str):
    """A self-contained HTML page (the string itself); Jupyter shows it in a frame."""

    def _repr_html_(self) -> str:
        return (f'<iframe srcdoc="{escape(str(self), quote=True)}" sandbox="allow-scripts" title="orch-otel timeline" '
                'style="width:100%;height:640px;border:1px solid #d5d9df"></iframe>')

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the page to ``path`` (UTF-8), private to the user (0600; a folder
        made for it 0700): it may show captured content. Returns the path."""
        target = Path(path)
        private_mkdir(target.parent)
        with open(target, "w", encoding="utf-8", opener=private_opener) as handle:
            handle.write(str(self))
        return target


def _source(trace: Any, trace_id: str | None, contents: Any, fork_of: str | None = None) -> tuple[dict[str, Any], Lookup | None]:
    if isinstance(trace, (str, os.PathLike)):
        found, problems = read([trace])
        if not found and problems:
            raise ValueError("; ".join(problems[:5]))
        chosen = pick(found, str(trace), trace_id, fork_of)
        return chosen.trace, lookup_of(contents) or contents_for([trace]).get
    return check(trace), lookup_of(contents)


def view(trace: Any, *, contents: Any = None, compare: Any = None, trace_id: str | None = None) -> View:
    """The HTML page of one run, or of two side by side (``compare``: the branch, aligned at its fork).

    ``trace`` (and ``compare``) is a trace dict, an ``orch_otel.models.Trace``, or a
    trace file or directory (then ``trace_id`` picks one of several, and the
    content store beside it is read). ``contents`` maps content refs to text
    (``tracefiles.load_contents``, a ``ContentIndex``, or a trace directory);
    only content found there appears on the page, never anything else."""
    base, lookup = _source(trace, trace_id, contents)
    if compare is None:
        return View(trace_page(base, captured(base["events"], lookup)))
    other, other_lookup = _source(compare, None, contents, fork_of=str(base.get("trace_id")))
    return View(compare_page(base, other, captured(base["events"], lookup), captured(other["events"], other_lookup)))
