"""Put one capture suite's fresh figures into an existing BENCHMARKS.md
without re-running the rest (``python -m benchmarks --render RESULTS --update``):
the suite's section and its summary rows are replaced, or inserted after the
suite before it, and the header says which parts came from which run.

Only the suites measured against a framework's own tracing (AutoGen, Agent
Framework, the OpenAI Agents SDK) can be updated this way: their summary rows all start with the
suite's name and belong to nothing else.
"""

from __future__ import annotations

import re

from .suites import SUITES, TITLES

UPDATABLE = ("autogen", "agent_framework", "openai_agents")
ORDER = tuple(SUITES)  # the report's order of the capture suites


def _split(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(header lines, [(section heading, its lines)]) at each ``## `` heading."""
    header: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in text.rstrip("\n").split("\n"):
        if line.startswith("## "):
            sections.append((line, []))
        elif sections:
            sections[-1][1].append(line)
        else:
            header.append(line)
    return header, sections


def _heading(suite: str) -> str:
    return f"## Capture overhead: {TITLES[suite]}"


def _rows(lines: list[str], suite: str) -> list[str]:
    return [line for line in lines if line.startswith(f"| {TITLES[suite]} ")]


def _merge_rows(old: list[str], new: list[str], suite: str) -> list[str]:
    """The summary's lines with ``suite``'s rows from ``new``: in place of its old rows, or after the suite before it."""
    fresh, stale = _rows(new, suite), set(_rows(old, suite))
    if stale:
        first = next(i for i, line in enumerate(old) if line in stale)
        return old[:first] + fresh + [line for line in old[first:] if line not in stale]
    # after the last row of an earlier suite (not LangGraph's floor rows, which come later),
    # else after the table's separator line
    anchor = next(i for i, line in enumerate(old) if line.startswith("|---"))
    for before in ORDER[:ORDER.index(suite)]:
        hits = [i for i, line in enumerate(old)
                if line.startswith(f"| {TITLES[before]} ") and "per recorded span" not in line]
        anchor = hits[-1] if hits else anchor
    return old[:anchor + 1] + fresh + old[anchor + 1:]


def _provenance(old_header: list[str], new_header: list[str], suites: list[str]) -> list[str]:
    """The old header, with a line saying what the update changed, from which command, and its new packages."""
    def field(lines: list[str], name: str) -> str:
        return next((line.split(": ", 1)[1] for line in lines if line.startswith(f"- {name}: ")), "?")

    names = " and ".join(TITLES[s] for s in suites)
    out = [h for h in old_header if not h.startswith(f"- Updated: the {names} ")]
    # packages named by the full run or by another suite's update line are not repeated
    known = field(old_header, "Packages") + ", " + ", ".join(
        h.split("; packages: ", 1)[1] for h in out if h.startswith("- Updated: ") and "; packages: " in h)
    old_packages = set(re.findall(r"([\w.-]+) \S+", known))
    added = [p for p in field(new_header, "Packages").split(", ") if p.split(" ")[0] not in old_packages]
    machine = field(new_header, "Machine")
    line = (f"- Updated: the {names} section{'s' if len(suites) > 1 else ''} and summary rows, from {field(new_header, 'Command')} on "
            f"{field(new_header, 'Date')}, load before {field(new_header, 'Load average (1, 5, 15 min) before')}"
            + (f"; machine: {machine}" if machine != field(old_header, "Machine") else "")
            + (f"; packages: {', '.join(added)}" if added else ""))
    last = max(i for i, h in enumerate(out) if h.startswith("- "))
    return out[:last + 1] + [line] + out[last + 1:]


def update_report(old: str, new: str, suites: list[str]) -> str:
    """``old`` (a full report) with ``suites``' sections and summary rows taken from ``new`` (a partial one)."""
    if unknown := [s for s in suites if s not in UPDATABLE]:
        raise ValueError(f"cannot update {', '.join(unknown)} alone; only {', '.join(UPDATABLE)}")
    old_header, old_sections = _split(old)
    new_header, new_sections = _split(new)
    by_heading = dict(new_sections)
    for suite in suites:
        heading = _heading(suite)
        if heading not in by_heading:
            raise ValueError(f"the new report has no {heading!r}")
        headings = [h for h, _ in old_sections]
        if heading in headings:
            old_sections[headings.index(heading)] = (heading, by_heading[heading])
        else:
            after = [headings.index(_heading(s)) for s in ORDER[:ORDER.index(suite)] if _heading(s) in headings]
            at = (max(after) if after else 0) + 1
            old_sections.insert(at, (heading, by_heading[heading]))
        summary = "## Summary against the targets"
        headings = [h for h, _ in old_sections]
        if summary in headings and summary in by_heading:
            i = headings.index(summary)
            old_sections[i] = (summary, _merge_rows(old_sections[i][1], by_heading[summary], suite))
    lines = _provenance(old_header, new_header, suites)
    for heading, body in old_sections:
        lines += [heading, *body]
    return "\n".join(lines).rstrip() + "\n"
