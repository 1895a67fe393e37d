"""The two commands' summaries have their own names; ``Summary``, their name
in 0.1, still works on both packages for one release, with a warning."""

from __future__ import annotations

import pytest

import orch_otel.datasets
import orch_otel.offline


@pytest.mark.parametrize(("package", "new"), [(orch_otel.offline, "ConvertSummary"),
                                              (orch_otel.datasets, "DatasetSummary")])
def test_the_old_summary_name_warns_and_is_the_new_class(package, new):
    with pytest.warns(DeprecationWarning, match=new):
        old = package.Summary
    assert old is getattr(package, new)
    assert "Summary" not in package.__all__


def test_the_two_summaries_are_different_classes():
    assert orch_otel.offline.ConvertSummary is not orch_otel.datasets.DatasetSummary
