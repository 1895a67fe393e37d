"""``orch-otel dataset``: turn trace files into a training dataset view.

Exit codes (docs/cli.md): 0 written; 1 written but some lines were rejected,
or nothing written because the data cannot make the view (every line
rejected, content missing with ``--strict``, outcome rows matching no
trace); 2 usage error or no input. Whenever nothing is written, the previous outputs stay as they were.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from .._inputs import printable
from ..tracefiles import Problem
from .options import EXIT_INVALID, EXIT_OK, EXIT_USAGE


def add_parser(sub: argparse._SubParsersAction) -> None:
    from ..datasets import ENGINES, FORMATS, STRATEGIES, VIEWS

    p = sub.add_parser(
        "dataset",
        help="write a training dataset (decisions, turns, chat, triplets, groups, preferences or traces) from trace files",
        description="Turn replayable traces into a training dataset. Outputs are replaced only when the run "
        "succeeds. Exit codes: 0 ok, 1 some lines rejected (or nothing written: every line rejected, content "
        "missing with --strict, unknown outcome rows), 2 usage error or no input. Guide: docs/datasets.md in the source "
        "repository.",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="trace files (*.jsonl) or directories of them")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="folder to write the dataset into")
    p.add_argument("--view", required=True, choices=VIEWS, help="which rows to build")
    p.add_argument("--format", default="jsonl", choices=FORMATS,
                   help="jsonl (default), parquet, hf (save_to_disk), or a trainer's own: verl (Parquet: chat, turns, "
                   "groups) or art (ART trajectory groups: chat)")
    p.add_argument("--engine", default="local", choices=ENGINES, help="local (default, streaming) or ray (Ray tasks, a byte range each)")
    p.add_argument("--outcomes", metavar="FILE", help="JSONL or CSV outcomes keyed by trace_id or task_id")
    p.add_argument("--allow-unknown-outcomes", action="store_true",
                   help="write the dataset even if outcome rows match no trace read")
    p.add_argument("--reward", metavar="SPEC",
                   help="the reward column as NAME[=WEIGHT],... over rewards and metrics, e.g. success=1,cost_tokens=-0.001 "
                   "(default: an outcome's reward field, else the sum of the rewards the run emitted)")
    p.add_argument("--credit", default=",".join(STRATEGIES), metavar="LIST",
                   help=f"credit strategies to add as columns (default: {','.join(STRATEGIES)})")
    p.add_argument("--gamma", type=float, default=0.99, help="discount per step for discounted credit (default 0.99)")
    p.add_argument("--price", action="append", default=[], metavar="MODEL=IN:OUT",
                   help="USD per million input:output tokens of MODEL, for the cost_usd metric (repeatable)")
    p.add_argument("--validate", action="store_true",
                   help="also check each trace against the full schema and contract (slower)")
    p.add_argument("--tokenizer", metavar="PATH_OR_NAME",
                   help="triplets, art: tokenize prompts and replies whose token ids were not captured with this "
                   "Hugging Face tokenizer's chat template (rows marked token_source 'retokenized'; needs "
                   "orch-otel[tokenize])")
    p.add_argument("--trajectories", action="store_true",
                   help="triplets: merge an agent episode's calls whose prompt ids extend the previous prompt and "
                   "response into one sample (prompt_ids, response_ids, response_mask, response_logprobs)")
    p.add_argument("--strict", action="store_true",
                   help="chat / triplets / preferences, verl / art: fail on a trace without captured content "
                   "(default: skip and count it)")


def _prices(items: list[str]) -> dict[str, tuple[float, float]] | None:
    prices = {}
    for item in items:
        model, _, pair = item.rpartition("=")
        cost_in, _, cost_out = pair.partition(":")
        try:
            prices[model] = (float(cost_in), float(cost_out))
        except ValueError:
            raise ValueError(f"--price {item!r}: expected MODEL=IN:OUT (USD per million tokens)") from None
        if not model:
            raise ValueError(f"--price {item!r}: no model name")
    return prices or None


def run(args: argparse.Namespace) -> int:
    from ..datasets import (
        AllRejected,
        Config,
        ContentMissing,
        NoBranches,
        NoPairs,
        OutcomeError,
        Outcomes,
        RewardSpec,
        RewardSpecError,
        build,
    )

    console = Console(stderr=True)
    out = Path(args.output)
    if out.suffix in (".jsonl", ".json", ".parquet", ".csv") and not out.is_dir():
        # convert's -o is a file, this one a folder: a file name here would become a folder of that name
        from ..datasets.writers import output_path

        console.print(f"[red]error:[/red] -o names the folder to write into (the rows go to "
                      f"{output_path(Path('OUTDIR'), args.view, args.format)}); {escape(args.output)} looks like a file "
                      f"name: use -o {escape(str(out.with_suffix('')))}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    try:
        config = Config(
            view=args.view,
            strategies=tuple(s.strip() for s in args.credit.split(",") if s.strip()),
            gamma=args.gamma,
            reward=RewardSpec.parse(args.reward) if args.reward else None,
            outcomes=Outcomes.load(args.outcomes) if args.outcomes else None,
            validate=args.validate,
            prices=_prices(args.price),
            tokenizer=args.tokenizer,
            trajectories=args.trajectories,
        )
    except (OutcomeError, RewardSpecError, ValueError, OSError) as exc:
        console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    # the bar is convert's (bytes read of the files found, time left), and the rejects so far
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                  TextColumn("{task.fields[rejects]} rejected"), TimeElapsedColumn(), TimeRemainingColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(f"{args.view} ({args.engine})", total=None, rejects=0)
        done: dict[Path, int] = {}  # bytes read so far, per file
        read = rejects = 0  # bytes read so far of all files; lines rejected

        def on_files(files: list[Path]) -> None:
            progress.update(task, total=sum(f.stat().st_size for f in files) or None)

        def on_bytes(path: Path, n: int) -> None:
            nonlocal read
            read += n - done.get(path, 0)  # a running total: a call a line stays cheap with many files
            done[path] = n
            progress.update(task, completed=read)

        def on_problem(problem: Problem) -> None:
            nonlocal rejects
            rejects += 1
            progress.console.print(f"[yellow]rejected[/yellow] {escape(printable(problem.where + ': ' + problem.reason))}",
                                   highlight=False, soft_wrap=True)
            progress.update(task, rejects=rejects)

        try:
            summary = build(args.inputs, args.output, config, fmt=args.format, engine=args.engine,
                            allow_unknown_outcomes=args.allow_unknown_outcomes, strict=args.strict,
                            on_files=on_files, on_bytes=on_bytes, on_problem=on_problem)
        except (ContentMissing, OutcomeError, ImportError, RuntimeError, OSError, ValueError) as exc:
            # the data cannot make this view: 1; a usage error, no input (NoTraces), a format unfit for the view, an unknown --reward: 2
            code = EXIT_INVALID if isinstance(exc, (ContentMissing, OutcomeError, AllRejected, NoBranches, NoPairs)) else EXIT_USAGE
            console.print(f"[red]error:[/red] {escape(str(exc))}\nnothing written ({escape(args.output)} is left as "
                          "it was)", highlight=False, soft_wrap=True)
            return code
    table = Table(title=f"orch-otel dataset: {summary.view}", show_header=False)
    table.add_row("traces read", str(summary.traces_read))
    table.add_row(f"rows written ({summary.view})", str(summary.rows_written))
    table.add_row("rejected lines", str(summary.rejects) + (f" -> {summary.rejects_path}" if summary.rejects else ""))
    if summary.duplicates or summary.conflicting_duplicates:
        table.add_row("duplicate traces dropped", f"{summary.duplicates + summary.conflicting_duplicates} (first copy kept)"
                      + (f"; {summary.conflicting_duplicates} differ: in the rejects file"
                         if summary.conflicting_duplicates else ""))
    if summary.traces_skipped:
        ids = summary.skipped_trace_ids
        why = "no captured content" + (", or no token ids" if summary.traces_without_tokens else "")
        table.add_row(f"traces skipped ({why})",
                      f"{summary.traces_skipped}: " + ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else ""))
    if summary.view in ("groups", "preferences"):
        table.add_row("groups of branches", str(summary.groups))
        table.add_row("traces without a fork (not branches)", str(summary.traces_not_branches))
        if summary.branches_without_reward:
            table.add_row("branches without a reward", f"{summary.branches_without_reward}: null advantage, in no pair "
                          "(score them: --outcomes FILE --reward NAME, or orch_otel.reward() in the app)")
    if summary.unknown_outcomes:
        table.add_row("outcome rows matching no trace", str(len(summary.unknown_outcomes)))
    table.add_row("output", f"{summary.output} ({summary.format}, engine {summary.engine})")
    Console().print(table)
    return EXIT_INVALID if summary.rejects else EXIT_OK
