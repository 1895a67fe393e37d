"""pytest plugin (``-p host_hide_dists``): the distributions named in
``$ORCH_HOST_HIDE_DISTS`` (comma-separated) look uninstalled to
``importlib.metadata``; their modules stay importable.

Some suites' expected values come from their own CI's environment: with
``langchain`` installed (the project's dev extra has it), langchain-core adds
its version to every language model's metadata, and a dozen of its snapshot
tests fail with orch-otel and without. Hiding the distribution is the same in
both runs, so it changes nothing the comparison sees except that those tests
can pass and so can catch a difference.
"""

from __future__ import annotations

import os
import re
from importlib.machinery import PathFinder


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_HIDDEN = {_normalized(name) for name in os.environ.get("ORCH_HOST_HIDE_DISTS", "").split(",") if name.strip()}
_find_distributions = PathFinder.find_distributions


def _visible_distributions(cls, *args, **kwargs):
    for dist in _find_distributions(*args, **kwargs):
        if _normalized(dist.metadata["Name"] or "") not in _HIDDEN:
            yield dist


if _HIDDEN:
    PathFinder.find_distributions = classmethod(_visible_distributions)
