"""The DEVIL diagnosis of any dataset (``devil diagnose``): the five DEVIL attributes of every (video, mask) pair
of a built dataset, a release-layout directory or a DAVIS / YouTube-VOS folder, their low/high groups, and for
every method, metric and attribute whether the groups' scores differ.

    >>> from devil_dataset.diagnosis import ATTRIBUTES
    >>> ATTRIBUTES[:2]
    ('camera_motion', 'bg_scene_motion')

Each name is imported on first use (:mod:`devil_dataset.core.lazy_exports`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .attribute_table import (
        AttributeRow,
        AttributeTable,
        assign_groups,
        read_attribute_table,
        write_attribute_table,
    )
    from .attributes import ATTRIBUTES, AttributeOptions, VideoScorer, mask_attributes, video_attribute
    from .compare import Finding, compare_groups
    from .diagnose import DiagnosisResult, diagnose
    from .groups import group_rule, rank_groups
    from .pairs import Pair, PairSource, dataset_pairs, davis_pairs, directory_pairs
    from .run import PassStats, compute_attributes

__getattr__, __dir__ = lazy_exports(__name__, {
    ".attribute_table": ("AttributeRow", "AttributeTable", "assign_groups", "read_attribute_table",
                         "write_attribute_table"),
    ".attributes": ("ATTRIBUTES", "AttributeOptions", "VideoScorer", "mask_attributes", "video_attribute"),
    ".compare": ("Finding", "compare_groups"),
    ".diagnose": ("DiagnosisResult", "diagnose"),
    ".groups": ("group_rule", "rank_groups"),
    ".pairs": ("Pair", "PairSource", "dataset_pairs", "davis_pairs", "directory_pairs"),
    ".run": ("PassStats", "compute_attributes"),
})

__all__ = ["ATTRIBUTES", "AttributeOptions", "AttributeRow", "AttributeTable", "DiagnosisResult", "Finding", "Pair",
           "PairSource", "PassStats", "assign_groups", "compare_groups", "compute_attributes", "dataset_pairs",
           "davis_pairs", "diagnose", "directory_pairs", "group_rule", "mask_attributes", "rank_groups",
           "read_attribute_table", "VideoScorer", "video_attribute", "write_attribute_table"]
