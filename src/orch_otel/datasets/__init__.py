"""Training datasets from replayable traces: orchestration decisions, agent
turns, chat conversations and agent-lightning triplets, with rewards, metrics
and credit columns. The guide is docs/datasets.md.

    from orch_otel.datasets import Config, build
    build(["orch-traces"], "out", Config(view="decisions"), fmt="parquet")

Importing this package needs no optional dependency; ``parquet`` / ``hf``
need ``orch-otel[datasets]`` and ``engine="ray"`` needs ``orch-otel[ray]``.
"""

from typing import Any

from .._renamed import deprecated
from .analysis import VIEWS, Config
from .credit import STRATEGIES, UNITS
from .engine import ENGINES, AllRejected, DatasetSummary, NoTraces, build
from .rewards import OutcomeError, Outcomes, RewardSpec, RewardSpecError
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
    "NoTraces",
    "OutcomeError",
    "Outcomes",
    "RewardSpec",
    "RewardSpecError",
    "build",
]


def __getattr__(name: str) -> Any:
    if name == "Summary":  # its name in 0.1, when orch_otel.offline had another Summary
        deprecated("orch_otel.datasets.Summary is now DatasetSummary")
        return DatasetSummary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
