"""How sure is a number: per-video intervals, significance tests between methods and slices, the jackknife of the
set-level metrics. Plain functions of per-video values and feature statistics.

The names of the former ``devil_dataset.eval.stats`` are all here:

    >>> from devil_dataset.eval.stats import holm, video_summary
    >>> holm([0.01, 0.04])
    [0.02, 0.04]
"""
from __future__ import annotations

from .intervals import (
    BOOTSTRAP_METHOD,
    BOOTSTRAP_RESAMPLES,
    DEFAULT_LEVEL,
    Intervals,
    interval_method,
    mean_se,
    results_uncertainty,
    video_intervals,
    video_summary,
)
from .jackknife import (
    JACKKNIFE_GROUPS,
    add_grouped,
    frechet_distance_cholesky,
    grouped_jackknife_frechet,
    set_level_uncertainty,
    video_group,
)
from .significance import (
    PERMUTATION_RESAMPLES,
    SIGNIFICANCE_ALPHA,
    compare_methods,
    holm,
    indistinguishable_from_best,
    paired_comparison,
    sign_flip_test,
    smallest_sign_flip_p,
    unpaired_test,
)

__all__ = ["BOOTSTRAP_METHOD", "BOOTSTRAP_RESAMPLES", "DEFAULT_LEVEL", "Intervals", "JACKKNIFE_GROUPS",
           "PERMUTATION_RESAMPLES", "SIGNIFICANCE_ALPHA", "add_grouped", "compare_methods", "frechet_distance_cholesky",
           "grouped_jackknife_frechet", "holm", "indistinguishable_from_best", "interval_method", "mean_se",
           "paired_comparison", "results_uncertainty", "set_level_uncertainty", "sign_flip_test",
           "smallest_sign_flip_p", "unpaired_test", "video_group", "video_intervals", "video_summary"]
