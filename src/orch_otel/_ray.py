"""Ray for ``--engine ray`` (``orch-otel convert`` and ``orch-otel dataset``):
the one place Ray is imported, the one message when it is missing, and the
one start and stop policy.

Policy: a Ray this process already joined (``ray.init(...)`` by the caller) is
used and left running. Otherwise a Ray is joined for the run, a cluster's if
``address`` names one, else a local one started here, and left again at the
end: a local Ray started here is shut down, a cluster keeps running (only
this driver disconnects).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MISSING = ("--engine ray needs Ray, pyarrow and numpy: pip install 'orch-otel[ray]' (or 'ray pyarrow numpy'); "
           "the default --engine local needs nothing more")


def import_ray() -> Any:
    """The ``ray`` module (Ray core: both engines run plain tasks that pass Arrow
    tables); ``ImportError`` naming the extra when one of them is missing."""
    try:
        import numpy  # noqa: F401  (convert's tasks sort Arrow columns with it)
        import pyarrow  # noqa: F401
        import ray
    except ImportError:
        raise ImportError(MISSING) from None
    return ray


@contextmanager
def ray_session(address: str | None = None) -> Iterator[Any]:
    """Ray for one run, by the policy in the module doc; yields the ``ray`` module."""
    ray = import_ray()
    joined = not ray.is_initialized()
    if joined:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        if joined:
            ray.shutdown()
