"""``orch-otel replay``: run an app again on recorded traces, or fork them.

Exit codes: 0 every replay gave the recorded orchestration (for a fork: up
to the fork), 1 a replay diverged, 2 usage or input errors (a factory that
does not resolve, a trace id not in the files, a trace without replay
content, a fork that cannot be made).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from .._inputs import printable
from ..replaying import ForkError, MissingContent, ReplayError, ReplayResult, options_at, replay
from ..tracefiles import TraceWriter, content_dirs, find_trace_files, load_contents, read_lines
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE

DEFAULT_OUT = "orch-replays"


class UsageError(ValueError):
    """Something the user named cannot be used (the message says what)."""


def resolve(spec: str, what: str) -> Any:
    """``module:attribute`` (dotted attribute path allowed), with the current
    directory on ``sys.path``, as uvicorn resolves its app."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise UsageError(f"{what} {spec!r}: expected MODULE:NAME, for example myapp:build_graph")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise UsageError(f"{what} {spec!r}: no module named {exc.name!r} (from {os.getcwd()})") from exc
        raise
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise UsageError(f"{what} {spec!r}: module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(value):
        raise UsageError(f"{what} {spec!r}: {attribute!r} is not callable")
    return value


def load(paths: list[str]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every trace in ``paths`` (files or directories) and the contents beside them."""
    traces: list[dict[str, Any]] = []
    contents: dict[str, str] = {}
    files, unread = find_trace_files(paths)
    for problem in unread:  # a missing named file is a usage error; a FIFO or a loop in a folder is skipped
        if problem.where in {str(Path(p)) for p in paths}:
            raise UsageError(f"{printable(problem.where)}: {problem.reason}")
        print(f"{printable(problem.where)}: skipped: {problem.reason}", file=sys.stderr)
    for file in files:
        for line in read_lines(file):
            if line.trace is None or not isinstance(line.trace.get("events"), list):
                print(f"{line.where}: skipped: {printable(line.error or 'not a trace (no events)')}", file=sys.stderr)
                continue
            traces.append(line.trace)
    for folder in content_dirs(paths):  # the content stores that go with the inputs, each read once
        contents.update(load_contents(folder))
    return traces, contents


def chains(traces: list[dict[str, Any]], trace_id: str | None) -> list[list[dict[str, Any]]]:
    """Runs to replay together: a resumed run follows the run it resumes
    (its ``human_intervention`` names it in ``resume_of``), on one app."""
    by_id = {t["trace_id"]: t for t in traces}
    resumes = {t["trace_id"]: _resume_of(t) for t in traces}
    resumed = {parent for parent in resumes.values() if parent in by_id}

    def chain_to(trace: dict[str, Any]) -> list[dict[str, Any]]:
        out = [trace]
        while (parent := resumes.get(out[0]["trace_id"])) in by_id and len(out) < len(by_id):
            out.insert(0, by_id[parent])
        return out

    if trace_id is not None:
        if trace_id not in by_id:
            listed = ", ".join(list(by_id)[:20]) or "none"
            raise UsageError(f"no trace with id {trace_id} in the input; its traces: {listed}")
        return [chain_to(by_id[trace_id])]
    return [chain_to(t) for t in traces if t["trace_id"] not in resumed]


def _build(factory: Callable[[], Any], spec: str) -> Any:
    try:
        return factory()
    except Exception as exc:
        raise UsageError(f"--app {spec!r}: the factory raised {type(exc).__name__}: {exc}") from exc


def _resume_of(trace: dict[str, Any]) -> str | None:
    return next((e["resume_of"] for e in trace["events"] if e.get("resume_of")), None)


def run_replay(args: argparse.Namespace) -> int:
    console = Console()
    factory = resolve(args.app, "--app")
    then: Callable[..., Any] | None = resolve(args.then, "--then") if args.then not in (None, "live") else None
    traces, contents = load(args.traces)
    if not traces:
        raise UsageError(f"no trace in {', '.join(args.traces)}")
    writer = TraceWriter(args.out)
    diverged = False
    try:
        for chain in chains(traces, args.trace_id):
            last = chain[-1]
            if args.fork is None:
                choices: list[str | None] = [None]
            else:
                choices = list(options_at(last, contents, args.fork)) if args.choose_each else [args.choose]
            for choice in choices:
                result = replay(chain if len(chain) > 1 else last, _build(factory, args.app), contents=contents,
                                fork=args.fork if choice is not None else None, choose=choice, then=then,
                                serve_tools=not args.live_tools)
                for new in result.traces:
                    writer.write(new, result.contents)
                diverged |= not result.equal
                _report(console, chain, result, choice)
    finally:
        writer.close()
    console.print(f"new traces in {writer.directory}")
    return EXIT_INVALID if diverged else EXIT_OK


def _report(console: Console, chain: list[dict[str, Any]], result: ReplayResult, choice: str | None) -> None:
    source = " -> ".join(t["trace_id"] for t in chain)
    head = f"{source}" + (f" fork {result.fork['event_id']} -> {choice}" if result.fork else "")
    same = "the recorded prefix" if result.fork else "the same orchestration"
    verdict = f"[green]{same}[/]" if result.equal else "[red]diverged[/]"
    console.print(f"{head}: {verdict} ({result.served} calls served, {result.live} run by the app) -> "
                  f"{result.trace['trace_id']}", soft_wrap=True)
    if result.divergence is not None:
        console.print(f"  first difference: {result.divergence.describe()}", markup=False, highlight=False)
    for note in result.notes:
        console.print(f"  note: {note}", markup=False, highlight=False)
    for error in filter(None, result.app_errors):  # a branch whose own models or tools failed is still written
        console.print(f"  note: the app's run raised {error}; the new trace records it (stop reason: "
                      f"{_stop_reason(result.trace)})", markup=False, highlight=False, soft_wrap=True)


def _stop_reason(trace: dict[str, Any]) -> str:
    return next((str(e.get("reason")) for e in reversed(trace["events"]) if e.get("decision") == "stop"), "none")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="run an app again on recorded traces, or fork them at a decision",
                       description="Run the app that FACTORY builds again on each recorded run, every model and "
                       "tool call answered from the recording, and compare the orchestration; or fork a run at a "
                       "decision (docs/replay.md). Exit codes: 0 the same orchestration, 1 a replay diverged, "
                       "2 usage or input errors.")
    p.add_argument("traces", nargs="+", help="trace files or directories (their content/ beside them)")
    p.add_argument("--app", required=True, metavar="MODULE:FACTORY",
                   help="a callable returning the app: a compiled LangGraph graph, an AutoGen team or agent, an Agent "
                   "Framework workflow or agent, an OpenAI Agents SDK starting agent, or an @orch_otel.workflow "
                   "function (resolved with the current directory on sys.path)")
    p.add_argument("--trace-id", default=None, help="replay this trace only (with the runs it resumes)")
    p.add_argument("-o", "--out", default=DEFAULT_OUT, help=f"where the new traces go (default: ./{DEFAULT_OUT})")
    p.add_argument("--fork", default=None, metavar="EVENT_ID", help="the decision to change (an event id, e.g. e5)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--choose", default=None, metavar="OPTION",
                       help="the option to force at --fork: an agent, 'stop', or 'continue' (an AutoGen team's stop)")
    group.add_argument("--choose-each", action="store_true", help="one branch per recorded option of --fork")
    p.add_argument("--then", default="live", metavar="live|MODULE:FUNC",
                   help="after the fork: the app's own models and tools (live, the default), or a callable given "
                   "each call (orch_otel.replaying.ModelCall / ToolCall) returning its reply, or None to make it")
    p.add_argument("--live-tools", action="store_true",
                   help="run the tools themselves and compare their results with the recorded ones")


def run(args: argparse.Namespace) -> int:
    if args.fork is not None and args.choose is None and not args.choose_each:
        print("orch-otel replay: --fork needs --choose OPTION or --choose-each", file=sys.stderr)
        return EXIT_USAGE
    if args.fork is None and (args.choose is not None or args.choose_each):
        print("orch-otel replay: --choose and --choose-each need --fork EVENT_ID", file=sys.stderr)
        return EXIT_USAGE
    try:
        return run_replay(args)
    except (UsageError, ReplayError, MissingContent, ForkError) as exc:
        print(f"orch-otel replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
