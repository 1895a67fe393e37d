"""Training datasets from replayable traces: orchestration decisions, agent
turns, chat conversations and agent-lightning triplets, with rewards, metrics
and credit columns. The guide is docs/datasets.md.

    from orch_otel.datasets import Config, build
    build(["orch-traces"], "out", Config(view="decisions"), fmt="parquet")

Importing this package needs no optional dependency; ``parquet`` / ``hf``
need ``orch-otel[datasets]`` and ``engine="ray"`` needs ``orch-otel[ray]``.
"""

from .analysis import VIEWS, Config, Prepared, prepare
from .credit import STRATEGIES, UNITS, Credit
from .engine import ENGINES, Summary, build, process_line
from .metrics import compute_metrics, count_steps
from .reader import BadTrace, ContentStore, RawLine, iter_raw_lines, parse_trace
from .rewards import OutcomeError, Outcomes, RewardSpec, RewardSpecError
from .views import ContentMissing
from .writers import FORMATS

__all__ = [
    "BadTrace",
    "Config",
    "ContentMissing",
    "ContentStore",
    "Credit",
    "ENGINES",
    "FORMATS",
    "OutcomeError",
    "Outcomes",
    "Prepared",
    "RawLine",
    "RewardSpec",
    "RewardSpecError",
    "STRATEGIES",
    "Summary",
    "UNITS",
    "VIEWS",
    "build",
    "compute_metrics",
    "count_steps",
    "iter_raw_lines",
    "parse_trace",
    "prepare",
    "process_line",
]
