"""Reward inputs: rewards the run emitted (already summed into the trace's
``rewards``), an outcomes file joined by ``trace_id`` or ``task_id``, and
rewards computed from the trace's metrics.

Outcomes file: JSONL (one object per line) or CSV (a header row). Each record
names ``trace_id`` or ``task_id`` (not both); every other field is an outcome:
a number or a boolean (true = 1.0). An empty CSV cell or a JSON null is "not
known" and skipped. A field named ``NAME@AGENT`` is a reward for one agent.
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..tracefiles import read_lines
from .metrics import METRIC_NAMES

KEYS = ("trace_id", "task_id")
SUCCESS_NAMES = ("task_success", "success")


class OutcomeError(ValueError):
    """An outcomes file that cannot be used; the message names file:line and field."""


def _number(value: Any, where: str, name: str) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return 1.0 if text == "true" else 0.0
        try:
            number = float(text)
        except ValueError:
            raise OutcomeError(f"{where}: field {name!r}: {value!r} is not a number or boolean") from None
    else:
        raise OutcomeError(f"{where}: field {name!r}: {value!r} is not a number or boolean")
    if not math.isfinite(number):
        raise OutcomeError(f"{where}: field {name!r}: {value!r} is not a finite number")
    return number


def _records(path: Path):
    if path.suffix.lower() == ".csv":
        # utf-8-sig: spreadsheets often start a CSV file with a byte order mark
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if not reader.fieldnames:
                raise OutcomeError(f"{path}:1: a CSV outcomes file needs a header row")
            for row in reader:
                if None in row:
                    raise OutcomeError(f"{path}:{reader.line_num}: more cells than header fields")
                yield reader.line_num, row
        return
    for line in read_lines(path):
        if line.error is not None:
            raise OutcomeError(f"{path}:{line.lineno}: {line.error}")
        yield line.lineno, line.trace


@dataclass
class Outcomes:
    """Outcome values by trace id and by task id, with where each came from."""

    path: str
    fields: list[str]
    by_trace: dict[str, dict[str, float]] = field(default_factory=dict)
    by_task: dict[str, dict[str, float]] = field(default_factory=dict)
    where: dict[tuple[str, str], str] = field(default_factory=dict)  # (key, id) -> file:line

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Outcomes:
        path = Path(path)
        if not path.is_file():
            raise OutcomeError(f"{path}: no such outcomes file")
        out = cls(str(path), [])
        names: dict[str, None] = {}
        for lineno, record in _records(path):
            where = f"{path}:{lineno}"
            keys = [k for k in KEYS if record.get(k) not in (None, "")]
            if len(keys) != 1:
                raise OutcomeError(f"{where}: needs exactly one of 'trace_id' or 'task_id' (found {keys or 'neither'})")
            key = keys[0]
            ident = str(record[key])
            table = out.by_trace if key == "trace_id" else out.by_task
            if ident in table:
                raise OutcomeError(f"{where}: {key} {ident!r} already has outcomes at {out.where[(key, ident)]}")
            values: dict[str, float] = {}
            for name, value in record.items():
                if name in KEYS:
                    continue
                number = _number(value, where, str(name))
                if number is not None:
                    values[str(name)] = number
                    names[str(name)] = None
            table[ident] = values
            out.where[(key, ident)] = where
        out.fields = list(names)
        return out

    def lookup(self, trace_id: str, task_id: str) -> dict[str, float] | None:
        """The outcomes of a trace: its trace_id row over its task_id row."""
        by_task = self.by_task.get(task_id)
        by_trace = self.by_trace.get(trace_id)
        if by_task is None:
            return by_trace
        return {**by_task, **(by_trace or {})}

    def unknown(self, trace_ids: set[str], task_ids: set[str]) -> list[str]:
        """``file:line: ...`` for each outcome row whose id matched no trace read."""
        missing = []
        for ident in self.by_trace:
            if ident not in trace_ids:
                missing.append(f"{self.where[('trace_id', ident)]}: trace_id {ident!r} matches no trace in the input")
        for ident in self.by_task:
            if ident not in task_ids:
                missing.append(f"{self.where[('task_id', ident)]}: task_id {ident!r} matches no trace in the input")
        return missing


class RewardSpecError(ValueError):
    pass


@dataclass(frozen=True)
class RewardSpec:
    """The scalar ``reward`` column as a weighted sum of named rewards or
    metrics: ``"success=1,tool_success_rate=0.2,cost_tokens=-0.0001"``."""

    terms: tuple[tuple[str, float], ...]

    @classmethod
    def parse(cls, text: str) -> RewardSpec:
        terms = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, _, weight = part.partition("=")
            try:
                terms.append((name.strip(), float(weight) if weight.strip() else 1.0))
            except ValueError:
                raise RewardSpecError(f"--reward: weight {weight!r} of {name!r} is not a number") from None
            if not name.strip():
                raise RewardSpecError(f"--reward: term {part!r} has no name")
        if not terms:
            raise RewardSpecError("--reward: give at least one NAME[=WEIGHT]")
        return cls(tuple(terms))

    def value(self, rewards: dict[str, float], metrics: dict[str, float]) -> float | None:
        """None when a named term is in neither the rewards nor the metrics."""
        total = 0.0
        for name, weight in self.terms:
            if name in rewards:
                total += weight * rewards[name]
            elif name in metrics:
                total += weight * metrics[name]
            else:
                return None
        return total


def unknown_reward_terms(spec: RewardSpec, reward_names: set[str], outcome_fields: list[str]) -> RewardSpecError | None:
    """The error for ``spec`` terms that name no metric, no outcome field and
    no reward of any trace read (a typo such as ``sucess``), or None. A term
    that some traces lack is fine: their ``reward`` is null."""
    known = set(METRIC_NAMES) | set(outcome_fields) | reward_names
    unknown = [name for name, _ in spec.terms if name not in known]
    if not unknown:
        return None
    rewards = sorted(reward_names | set(outcome_fields))
    return RewardSpecError(
        f"--reward: unknown name(s) {', '.join(map(repr, unknown))}: no trace read has such a reward and no metric "
        f"has that name. Rewards in these traces (and outcomes): {', '.join(rewards) or 'none'}. "
        f"Metrics: {', '.join(METRIC_NAMES)}"
    )


def merge_rewards(emitted: dict[str, float], outcome: dict[str, float] | None) -> dict[str, float]:
    """Emitted rewards with the outcome values over them (an outcome wins on a shared name)."""
    merged = {str(k): float(v) for k, v in (emitted or {}).items()}
    if outcome:
        merged.update(outcome)
    return merged


def scalar_reward(rewards: dict[str, float], metrics: dict[str, float], spec: RewardSpec | None,
                  outcome: dict[str, float] | None) -> float | None:
    """The row's ``reward``: the spec's weighted sum when given; else an
    outcome's ``reward`` field; else the sum of the rewards the run emitted
    (agent-targeted ``NAME@AGENT`` rewards excluded); else None."""
    if spec is not None:
        return spec.value(rewards, metrics)
    if outcome and "reward" in outcome:
        return outcome["reward"]
    team = [v for k, v in rewards.items() if "@" not in k and (not outcome or k not in outcome)]
    return float(sum(team)) if team else None


def task_success(rewards: dict[str, float]) -> float | None:
    for name in SUCCESS_NAMES:
        if name in rewards:
            return rewards[name]
    return None
