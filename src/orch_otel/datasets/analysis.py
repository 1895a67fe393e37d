"""Per-trace preparation shared by every view: metrics, merged rewards, the
scalar reward, credit, and the agent turns (LLM calls with the tool calls that
followed them, grouped into episodes)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..vocabulary import Channel, EventKind
from .credit import STRATEGIES, Credit
from .metrics import StepCounts, compute_metrics, count_steps, stop_efficiency
from .rewards import Outcomes, RewardSpec, merge_rewards, scalar_reward, task_success
from .tasks import Replies

VIEWS = ("traces", "decisions", "turns", "chat", "triplets", "groups", "preferences")
GROUP_VIEWS = ("groups", "preferences")  # cross-trace: rows made after every line was read


@dataclass(frozen=True)
class Config:
    """Everything a view needs besides the trace; picklable (Ray workers get a copy)."""

    view: str = "decisions"
    strategies: tuple[str, ...] = STRATEGIES
    gamma: float = 0.99
    reward: RewardSpec | None = None
    outcomes: Outcomes | None = None
    validate: bool = False
    prices: dict[str, tuple[float, float]] | None = None
    # a trace without captured content is skipped (or fails with strict) as in chat;
    # build() sets it for the trainer formats (verl, art), whose rows are prompts
    need_content: bool = False
    # token ids for the triplets view and the art format when none were captured (datasets/tokenize.py)
    tokenizer: str | None = None
    trajectories: bool = False  # triplets: merge an episode's calls whose prompt ids extend (datasets/lightning.py)
    trainer: str | None = None  # set by build(): a trainer format whose rows are made per trace ("art")

    def __post_init__(self) -> None:
        if self.view not in VIEWS:
            raise ValueError(f"unknown view {self.view!r}; choose one of {', '.join(VIEWS)}")
        bad = [s for s in self.strategies if s not in STRATEGIES]
        if bad or not self.strategies:
            raise ValueError(f"unknown credit strategy {bad}; choose from {', '.join(STRATEGIES)}")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if self.trajectories and self.view != "triplets":
            raise ValueError(f"trajectories merges the calls of the triplets view, not the {self.view} view")

    @property
    def outcome_fields(self) -> list[str]:
        return self.outcomes.fields if self.outcomes is not None else []


@dataclass
class Turn:
    """One agent LLM call and the tool calls the agent made after it."""

    index: int  # position of the LLM event in the trace's events
    episode: tuple[str, int]  # (agent, n-th episode of that agent)
    turn_index: int  # n-th LLM call of that agent in the trace
    tool_calls: list[int] = field(default_factory=list)  # event positions
    tool_results: dict[int, int] = field(default_factory=dict)  # call position -> result position


def find_turns(events: list[dict[str, Any]]) -> list[Turn]:
    """Turns in trace order, grouped into episodes: one per agent invocation
    (``agent_span_id``), numbered per agent name in order of their first turn.
    Parallel invocations of one agent name (a ``Send`` fan-out) are separate
    episodes. For traces without ``agent_span_id``, an agent's episode ends at
    its ``return``. Tool calls belong to the latest turn of the same
    invocation (tool calls made before its first LLM call belong to no turn)."""
    episode_of: dict[tuple[str, Any], int] = {}  # open invocation -> its episode number
    next_episode: dict[str, int] = defaultdict(int)
    current: dict[tuple[str, Any], Turn] = {}
    counts: dict[str, int] = defaultdict(int)
    turns: list[Turn] = []
    pending: dict[Any, tuple[Turn, int]] = {}  # tool key -> (turn, call position)
    for i, e in enumerate(events):
        kind, agent = e["type"], e["agent"]
        invocation = (agent, e.get("agent_span_id"))
        if kind == EventKind.MESSAGE.value and e.get("channel") == Channel.LLM.value:
            episode = episode_of.get(invocation)
            if episode is None:
                episode = episode_of[invocation] = next_episode[agent]
                next_episode[agent] += 1
            turn = Turn(i, (agent, episode), counts[agent])
            counts[agent] += 1
            current[invocation] = turn
            turns.append(turn)
        elif kind == EventKind.TOOL_CALL.value:
            calling = current.get(invocation)
            if calling is not None:
                calling.tool_calls.append(i)
                pending[_tool_key(e)] = (calling, i)
        elif kind == EventKind.TOOL_RESULT.value:
            hit = pending.pop(_tool_key(e), None)
            if hit is not None:
                hit[0].tool_results[hit[1]] = i
        elif kind == EventKind.RETURN.value:
            episode_of.pop(invocation, None)
            current.pop(invocation, None)
    return turns


def _tool_key(event: dict[str, Any]) -> Any:
    """What pairs a tool call with its result: the tool span both were recorded
    in (call ids repeat across parallel invocations), else the call id."""
    return event.get("span_id") or event.get("call_id") or event["id"]


@dataclass
class Prepared:
    trace: dict[str, Any]
    events: list[dict[str, Any]]
    steps: StepCounts
    metrics: dict[str, float]  # computed metrics only
    rewards: dict[str, float]  # emitted, with outcomes over them
    outcome: dict[str, float] | None
    reward: float | None
    credit: Credit
    outcome_columns: dict[str, float | None]
    task: Replies | None = None  # the replies of the task's other traces, when the first pass read some (.tasks)

    @property
    def base(self) -> dict[str, Any]:
        t = self.trace
        return {"trace_id": t["trace_id"], "task_id": t["task_id"], "system": t.get("system"),
                "topology": t.get("topology")}

    def rewritten(self, config: Config) -> dict[str, Any]:
        """The trace with rewards and metrics written back (still schema-valid)."""
        trace = dict(self.trace)
        rewards = dict(self.rewards)
        if config.reward is not None and self.reward is not None:
            rewards["reward"] = self.reward
        trace["rewards"] = rewards
        metrics = {**(self.trace.get("metrics") or {}), **self.metrics, **self.credit.summary(self.events)}
        trace["metrics"] = {k: float(v) for k, v in metrics.items()}
        return trace


def prepare(trace: dict[str, Any], config: Config) -> Prepared:
    events = trace["events"]
    steps = count_steps(events)
    metrics = compute_metrics(trace, steps, config.prices)
    outcome = config.outcomes.lookup(trace["trace_id"], trace["task_id"]) if config.outcomes else None
    rewards = merge_rewards(trace.get("rewards") or {}, outcome)
    success = task_success(rewards)
    if success is not None:
        metrics["task_success"] = success
    metrics["stop_efficiency"] = stop_efficiency(metrics, success)
    reward = scalar_reward(rewards, metrics, config.reward, outcome)
    credit = Credit(events, steps, reward, rewards, config.strategies, config.gamma)
    outcome_columns = {f"outcome_{name}": (outcome or {}).get(name) for name in config.outcome_fields}
    return Prepared(trace, events, steps, metrics, rewards, outcome, reward, credit, outcome_columns)
