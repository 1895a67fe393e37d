"""``orch-otel view``: traces as self-contained HTML timelines. One trace (or
``--trace-id``) -> one page; a file with many -> an index page linking to one
page per run; ``--compare OTHER`` -> the two side by side, aligned at the
fork. Exit codes: 0 written, 1 no valid trace in the input, 2 no such file,
no trace (with that id), or several where one is needed."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ..timeline import View
from ..timeline._compare import compare_page
from ..timeline._index import index_page
from ..timeline._load import Found, Lookup, NotChosen, contents_for, pick, read
from ..timeline._render import captured, trace_page
from ..tracefiles import private_mkdir
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE


def _page_name(trace_id: str, used: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", trace_id)[:80] or "trace"
    name, n = stem, 1
    while name in used:
        n += 1
        name = f"{stem}-{n}"
    used.add(name)
    return f"{name}.html"


def _load(paths: list[str]) -> tuple[list[Found], int]:
    found, problems = read(paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    return found, len(problems)


def run_view(paths: list[str], out: Path, trace_id: str | None, compare: str | None) -> int:
    found, skipped = _load(paths)
    if not found:
        print(f"orch-otel view: no trace in {', '.join(paths)}", file=sys.stderr)
        return EXIT_INVALID if skipped else EXIT_USAGE
    lookup = contents_for(paths).get
    try:
        if compare is not None:
            others, _ = _load([compare])
            if not others:
                print(f"orch-otel view: no trace in {compare}", file=sys.stderr)
                return EXIT_USAGE
            source = ", ".join(paths)
            if trace_id is not None or len(found) == 1:
                base = pick(found, source, trace_id)
                parent = _forked_from(base, others)
                if parent is not None:  # TRACES named a branch and --compare holds its source: the source goes first
                    base, branch = pick(others, compare, parent), base
                else:
                    branch = pick(others, compare, fork_of=str(base.trace.get("trace_id")))
            else:  # the branch names the trace it forked from
                branch = _one_branch(others, compare, source)
                base = pick(found, source, _forked_from(branch, found))
            other_lookup = contents_for([compare]).get
            html = compare_page(base.trace, branch.trace, captured(base.trace["events"], lookup),
                                captured(branch.trace["events"], other_lookup))
            View(html).save(out)
            print(f"wrote {out}: {base.trace.get('trace_id')} and {branch.trace.get('trace_id')} side by side")
            return EXIT_OK
        if trace_id is not None or len(found) == 1:
            one = pick(found, ", ".join(paths), trace_id)
            View(trace_page(one.trace, captured(one.trace["events"], lookup))).save(out)
            print(f"wrote {out}: trace {one.trace.get('trace_id')} ({len(one.trace['events'])} events)")
            return EXIT_OK
    except NotChosen as exc:
        print(f"orch-otel view: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return _write_index(found, out, lookup)


def _one_branch(others: list[Found], compare: str, source: str) -> Found:
    try:
        return pick(others, compare)
    except NotChosen as exc:  # --compare has no trace id of its own: name the branch with --trace-id instead
        how = f"to draw one beside its source, name it: orch-otel view {compare} --trace-id BRANCH_ID --compare {source}"
        raise NotChosen(str(exc).replace("choose one by its trace id", how)) from None


def _forked_from(branch: Found, originals: list[Found]) -> str | None:
    """The trace id a branch says it forked from, when that trace is among the originals."""
    ids = {str(f.trace.get("trace_id")) for f in originals}
    for event in branch.trace["events"]:
        fork = event.get("fork")
        if isinstance(fork, dict) and str(fork.get("source_trace_id")) in ids:
            return str(fork["source_trace_id"])
    return None


def _write_index(found: list[Found], out: Path, lookup: Lookup) -> int:
    """Many traces: ``OUT`` lists them and links to ``OUT-stem-runs/<trace id>.html``."""
    folder = out.parent / f"{out.stem}-runs"
    private_mkdir(folder)
    used: set[str] = set()
    links = []
    for one in found:
        name = _page_name(str(one.trace.get("trace_id")), used)
        View(trace_page(one.trace, captured(one.trace["events"], lookup))).save(folder / name)
        links.append((f"{folder.name}/{name}", one.trace))
    View(index_page(links, title=f"{len(found)} runs")).save(out)
    print(f"wrote {out}: an index of {len(found)} runs (their pages in {folder})")
    return EXIT_OK


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("view", help="draw traces as a self-contained HTML timeline",
                       description="Write a trace as one self-contained HTML page (no network): one lane per agent "
                       "instance, invocation bars, arrows for spawns, delegations, returns and messages, decisions with "
                       "their options, the stop; click an event for its details (content only when it was captured). "
                       "Several traces: an index page linking to one page per run. See docs/view.md. "
                       "Exit codes: 0 written, 1 no valid trace in the input, 2 no such file or no such trace.")
    p.add_argument("paths", nargs="+", metavar="TRACES", help="trace files or directories")
    p.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.html", help="the page to write")
    p.add_argument("--trace-id", default=None, help="draw only this trace (default: all; an index when there are several)")
    p.add_argument("--compare", default=None, metavar="OTHER",
                   help="a trace file holding a branch (a replay fork) to draw beside the trace, aligned at the fork")


def run(args: argparse.Namespace) -> int:
    return run_view(args.paths, args.output, args.trace_id, args.compare)
