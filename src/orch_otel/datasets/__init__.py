"""Training datasets from replayable traces: orchestration decisions, agent
turns, chat conversations, agent-lightning triplets, and the groups and
preference pairs of forked branches, with rewards, metrics and credit
columns, in generic formats or verl's and ART's own. The guide is docs/datasets.md.

    from orch_otel.datasets import Config, build
    build(["orch-traces"], "out", Config(view="decisions"), fmt="parquet")

Importing this package needs no optional dependency; ``parquet`` / ``hf``
(and ``verl``) need ``orch-otel[datasets]`` and ``engine="ray"`` needs ``orch-otel[ray]``.
"""

from typing import Any

from .._renamed import deprecated
from .analysis import VIEWS, Config
from .credit import STRATEGIES, UNITS
from .engine import ENGINES, AllRejected, DatasetSummary, NoBranches, NoPairs, NoTraces, build
from .rewards import OutcomeError, Outcomes, RewardSpec, RewardSpecError
from .tokenize import TokensMissing
from .views import ContentMissing
from .writers import FORMATS

__all__ = [
    "ENGINES",
    "FORMATS",
    "STRATEGIES",
    "UNITS",
    "VIEWS",
    "AllRejected",
    "Config",
    "DatasetSummary",
    "ContentMissing",
    "NoBranches",
    "NoPairs",
    "NoTraces",
    "OutcomeError",
    "Outcomes",
    "RewardSpec",
    "RewardSpecError",
    "TokensMissing",
    "build",
]


def __getattr__(name: str) -> Any:
    if name == "Summary":  # its name in 0.1, when orch_otel.offline had another Summary
        deprecated("orch_otel.datasets.Summary is now DatasetSummary")
        return DatasetSummary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
