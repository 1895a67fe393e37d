"""Credit assignment: the trace's scalar reward ``R`` given to the paper's
credit units (team, orchestrator, role, agent, turn, message, tool_call,
token) by three strategies, each a column so one dataset serves all three.

For a unit ``u`` made of steps ``S(u)`` by agent ``a`` (docs/datasets.md#credit):

- ``broadcast``:  ``R`` for every unit.
- ``discounted``: ``R * gamma ** d(u)``, ``d(u)`` = steps in the trace after
  the unit's last step (the final steps get most, early ones less).
- ``per_agent``:  ``C(a) * |S(u)| / steps(a)``, where ``C(a)`` is the reward
  given to agent ``a`` (``NAME@a`` rewards, and its share of ``NAME@role:r``
  rewards for its role ``r``) when the run or the outcomes gave one, else
  ``R * steps(a) / total steps`` (the team reward split by work).
- ``token``: a turn's credit divided by its output tokens.

An agent that ran several times (instances ``name#k``: parallel ``Send``
branches, a supervisor's turns) shares ``C(a)`` among its instances by their
steps, so each instance's units get ``C(a) * |S(u)| / steps(a)`` as before;
a reward aimed at one instance (``NAME@worker#2``) is that instance's credit
instead. Traces whose events carry no ``instance`` are credited by name.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from ..vocabulary import ROLE_TARGET
from .metrics import StepCounts, is_step

STRATEGIES = ("broadcast", "discounted", "per_agent")
UNITS = ("team", "orchestrator", "role", "agent", "turn", "message", "tool_call", "token")


def credit_columns(strategies: Sequence[str]) -> list[str]:
    return [f"credit_{s}" for s in strategies]


def _targeted(events: list[dict[str, Any]], steps: StepCounts, rewards: dict[str, float]) -> dict[str, float]:
    """Each agent's own reward: ``NAME@AGENT`` rewards, plus its share of
    ``NAME@role:ROLE`` rewards (split between the agents playing ROLE by their
    steps; a role no agent with steps plays gets nothing)."""
    targeted: dict[str, float] = defaultdict(float)
    roles: dict[str, str] = {}
    for name, value in rewards.items():
        if "@" not in name:
            continue
        target = name.rsplit("@", 1)[1]
        if not target.startswith(ROLE_TARGET):
            targeted[target] += value
            continue
        if not roles:
            for e in events:
                if e.get("role") and e.get("agent"):
                    roles.setdefault(str(e["agent"]), str(e["role"]))
        players = {a: n for a, n in steps.by_agent.items() if n and roles.get(a) == target[len(ROLE_TARGET):]}
        total = sum(players.values())
        for agent, n in players.items():
            targeted[agent] += value * n / total
    return targeted


class Credit:
    """Credit of one trace, given its reward ``R`` and step structure."""

    def __init__(self, events: list[dict[str, Any]], steps: StepCounts, reward: float | None,
                 rewards: dict[str, float], strategies: Sequence[str] = STRATEGIES, gamma: float = 0.99):
        self.reward = reward
        self.strategies = tuple(strategies)
        self.gamma = gamma
        self.steps = steps
        after = [0] * len(events)  # steps strictly after event i
        count = 0
        for i in range(len(events) - 1, -1, -1):
            after[i] = count
            count += is_step(events[i])
        self._after = after
        targeted = _targeted(events, steps, rewards)
        self.agent_credit: dict[str, float | None] = {}
        for agent, n in steps.by_agent.items():
            if agent in targeted:
                self.agent_credit[agent] = targeted[agent]
            elif reward is not None and steps.total:
                self.agent_credit[agent] = reward * n / steps.total
            else:
                self.agent_credit[agent] = None
        # Instances (``name#k``) of one agent: its credit split by their steps,
        # unless a reward targets the instance itself (``NAME@worker#2``).
        self.instance_steps: dict[str, int] = defaultdict(int)
        self._instance_agent: dict[str, str] = {}
        for e in events:
            instance = e.get("instance")
            if instance and is_step(e):
                self.instance_steps[instance] += 1
                self._instance_agent.setdefault(instance, e["agent"])
        self.instance_credit: dict[str, float | None] = {}
        for instance, n in self.instance_steps.items():
            agent = self._instance_agent[instance]
            c, total = self.agent_credit.get(agent), steps.by_agent.get(agent, 0)
            if instance in targeted:
                self.instance_credit[instance] = targeted[instance]
            else:
                self.instance_credit[instance] = None if c is None or not total else c * n / total

    def unit(self, agent: str, n_steps: int, last_index: int, instance: str | None = None) -> dict[str, float | None]:
        """Credit columns of a unit of ``n_steps`` steps by ``agent`` (its
        invocation ``instance``, when known) whose last event is at
        ``last_index`` in the trace's events."""
        out: dict[str, float | None] = {}
        r = self.reward
        for strategy in self.strategies:
            if strategy == "broadcast":
                value = r
            elif strategy == "discounted":
                value = None if r is None else r * self.gamma ** self._after[last_index]
            elif instance is not None and self.instance_steps.get(instance):
                c = self.instance_credit.get(instance)
                value = None if c is None else c * n_steps / self.instance_steps[instance]
            else:
                c = self.agent_credit.get(agent)
                total = self.steps.by_agent.get(agent, 0)
                value = None if c is None or not total else c * n_steps / total
            out[f"credit_{strategy}"] = None if value is None else round(value, 9)
        return out

    def team(self) -> dict[str, float | None]:
        return {f"credit_{s}": self.reward for s in self.strategies}

    def per_token(self, credit: dict[str, float | None], output_tokens: int | None) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for strategy in self.strategies:
            value = credit.get(f"credit_{strategy}")
            out[f"token_credit_{strategy}"] = (
                None if value is None or not output_tokens else round(value / output_tokens, 9)
            )
        return out

    def summary(self, events: list[dict[str, Any]]) -> dict[str, float]:
        """Per-agent and per-role credit for the trace's ``metrics`` (write-back)."""
        last: dict[str, int] = {}
        roles: dict[str, str] = {}
        for i, e in enumerate(events):
            if is_step(e):
                last[e["agent"]] = i
                if e.get("role"):
                    roles.setdefault(e["agent"], str(e["role"]))
        out: dict[str, float] = {}
        by_role: dict[tuple[str, str], float] = defaultdict(float)
        for agent, i in sorted(last.items()):
            n = self.steps.by_agent.get(agent, 0)
            for name, value in self.unit(agent, n, i).items():
                strategy = name[len("credit_"):]
                if value is None or strategy == "broadcast":
                    continue
                out[f"credit.{strategy}.agent.{agent}"] = value
                if agent in roles and strategy == "per_agent":
                    by_role[(strategy, roles[agent])] += value
        for (strategy, role), value in sorted(by_role.items()):
            out[f"credit.{strategy}.role.{role}"] = round(value, 9)
        # per instance, where an agent ran more than once
        last_of: dict[str, int] = {}
        for i, e in enumerate(events):
            if e.get("instance") and is_step(e):
                last_of[e["instance"]] = i
        runs = Counter(self._instance_agent.values())
        for instance, i in sorted(last_of.items()):
            agent = self._instance_agent[instance]
            if runs[agent] < 2:
                continue
            for name, value in self.unit(agent, self.instance_steps[instance], i, instance).items():
                strategy = name[len("credit_"):]
                if value is not None and strategy != "broadcast":
                    out[f"credit.{strategy}.instance.{instance}"] = value
        return out
