"""Training datasets from replayable traces: orchestration decisions, agent
turns, chat conversations and agent-lightning triplets, with rewards, metrics
and credit columns. The guide is docs/datasets.md.

    from orch_otel.datasets import Config, build
    build(["orch-traces"], "out", Config(view="decisions"), fmt="parquet")

Importing this package needs no optional dependency; ``parquet`` / ``hf``
need ``orch-otel[datasets]`` and ``engine="ray"`` needs ``orch-otel[ray]``.
"""

from .analysis import VIEWS, Config
from .credit import STRATEGIES, UNITS
from .engine import ENGINES, AllRejected, NoTraces, Summary, build
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
    "ContentMissing",
    "NoTraces",
    "OutcomeError",
    "Outcomes",
    "RewardSpec",
    "RewardSpecError",
    "Summary",
    "build",
]
