"""What :func:`devil_dataset.builder.build.build` builds: one frozen options object, and the hooks that replace a stage.

:class:`BuildOptions` holds every setting, each default named once here (``devil build`` makes one from its flags);
:class:`BuildHooks` holds code (a curation, scorers, loaders, a shard callback) that tests and custom pipelines
put in place of a built-in stage. The release-versus-corrected choice is one field, ``parity``
(:mod:`devil_dataset.core.parity`), which sets ``scene_mode`` and ``rank_mode`` together.

    >>> options = BuildOptions(parity="corrected")
    >>> options.scene_mode, options.rank_mode, options.engine.name
    ('corrected', 'corrected', 'local')
    >>> BuildOptions(frame_format="gif")
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.UnknownNameError: frame_format: unknown frame format 'gif'; valid: jpeg, png
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..core.dataset_schema import FRAME_FORMATS
from ..core.engines import Engine
from ..core.errors import DevilError, UnknownNameError
from ..core.parity import Parity, resolve_modes
from ..core.slices import EVAL_SIZE

Scorer = Callable[[np.ndarray], float]
MaskLoader = Callable[[str, int], np.ndarray]  # (preset, index) -> bool [90, H, W] at the output size, unreversed

#: The card's title when none is given.
OUTPUT_DESCRIPTION = "DEVIL video inpainting slices"

#: The builder modes each parity sets (:mod:`devil_dataset.core.parity`): ``release`` labels as the release does
#: (the release's scorer: the uint8 wrap-around AffineScore of the scene-motion segments; the release's slices: NaN
#: scores rank last, into the high tail), ``corrected`` with the fixes (true differences; NaN-score clips left
#: unlabelled).
BUILD_PARITY_MODES: dict[str, dict[str, str]] = {
    "release": {"scene_mode": "release", "rank_mode": "release"},
    "corrected": {"scene_mode": "corrected", "rank_mode": "corrected"},
}


@dataclass(frozen=True)
class BuildOptions:
    """Every setting of a build; the defaults give the release's dataset from the given sources.

    A mode (``scene_mode``, ``rank_mode``) left at ``None`` takes the value ``parity`` sets
    (:data:`BUILD_PARITY_MODES`); one given explicitly wins (an expert's override). After construction both fields
    hold the resolved mode (what the build uses and records in ``manifest.json`` and the card), so
    ``dataclasses.replace(options, parity=...)`` keeps the old modes: build a new ``BuildOptions`` to switch parity.

    Example:
        >>> BuildOptions(parity="corrected", rank_mode="release").rank_mode  # an explicit mode wins
        'release'
    """

    #: build from the built-in sample (:func:`devil_dataset.builder.build.write_sample_build_sources`; nothing
    #: downloaded) instead of the given sources, which must then be empty
    sample: bool = False
    #: seed of the ``all`` shuffle and the mask-list shuffle; 0 = the release's ``RandomState(0)``
    seed: int = 0
    #: output (W, H); the release's 832x480 cover-crop (the release's resolution)
    size: tuple[int, int] = EVAL_SIZE
    #: smallest source (W, H) curation accepts (``devil curate --min-resolution``); None = curation's default, the
    #: release's 832x480 (:data:`devil_dataset.builder.curate.DEFAULT_MIN_SIZE`), or the sample's own minimum.
    #: Lower it with ``size`` to build from smaller videos (e.g. 640x272 for 640x272 sources)
    min_resolution: tuple[int, int] | None = None
    #: per-frame storage: ``jpeg`` (quality 95, the release's clip format) or ``png`` (lossless)
    frame_format: str = "jpeg"
    #: the card's ``license`` field (a Hub licence id; ``other`` for mixed per-clip licences)
    license: str = "other"
    #: the card's title
    pretty_name: str = OUTPUT_DESCRIPTION
    #: feature detector of the camera- and scene-motion scorers (the release's alignment: SURF); None = the best
    #: available
    detector: str | None = None
    #: the release-versus-corrected protocol: ``release`` or ``corrected``; sets ``scene_mode`` and ``rank_mode``
    parity: Parity = "release"
    #: automatic background-scene-motion score: ``release`` or ``corrected``; None = from parity
    scene_mode: str | None = None
    #: NaN scores in the rank tails: ``release`` ranks them last (high tail) or ``corrected`` leaves them out
    #: (the release's slices); None = from parity
    rank_mode: str | None = None
    #: frame size (W, H) the motion scorers work at; None = the release's 854x480, or the
    #: sample's 427x240 (:data:`devil_dataset.builder.build.SAMPLE_SCORING_SIZE`) with ``sample``
    scoring_size: tuple[int, int] | None = None
    #: hand-made background-scene-motion labels ``{clip_id: "low" | "high"}``; they win over the score
    bg_labels: Mapping[str, str] = field(default_factory=dict)
    #: ``{source path or file name: {"attribution": ..., "license": ...}}`` (else a sidecar ``<video>.json``)
    attributions: Mapping[str, Mapping] = field(default_factory=dict)
    #: extra keyword arguments of :func:`devil_dataset.builder.curate.curate` (e.g. ``{"backend": "pyav"}``)
    curate_options: Mapping = field(default_factory=dict)
    #: where the per-record stages (sample rendering, clip scoring, mask rendering, frame encoding) run: an
    #: :class:`~devil_dataset.core.engines.Engine` from :func:`~devil_dataset.core.engines.get_engine` (local
    #: processes, or Ray tasks with the output folder on a filesystem every node sees); the same dataset on every
    #: engine and with any number of jobs; default: local, one process
    engine: Engine = field(default_factory=Engine)
    #: progress bars on stderr
    progress: bool = True
    #: text added to the card's build notes (the release rebuild, :mod:`.release_rebuild`, describes itself there)
    card_notes: str = ""
    #: keys added to ``manifest.json`` (the release rebuild records its label source there)
    info_extra: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.frame_format not in FRAME_FORMATS:
            raise UnknownNameError(f"frame_format: unknown frame format {self.frame_format!r}; "
                                   f"valid: {', '.join(FRAME_FORMATS)}")
        if self.min_resolution is not None and (len(self.min_resolution) != 2
                                                or min(int(v) for v in self.min_resolution) < 1):
            raise DevilError(f"min_resolution: expected (W, H) of positive integers, got {self.min_resolution!r}")
        if not isinstance(self.engine, Engine):  # an Engine checks its own name and jobs
            raise DevilError(f"engine: expected an Engine (devil_dataset.core.engines.get_engine(name, jobs=, "
                             f"address=)), got {self.engine!r}")
        modes = resolve_modes(self.parity, {"scene_mode": self.scene_mode, "rank_mode": self.rank_mode},
                              BUILD_PARITY_MODES)
        for name, mode in modes.items():
            object.__setattr__(self, name, mode)  # frozen: the resolved modes are set once, here

    def modes(self) -> dict[str, str]:
        """The resolved release-versus-corrected set (recorded in ``manifest.json`` and the card).

        >>> BuildOptions().modes()
        {'parity': 'release', 'scene_mode': 'release', 'rank_mode': 'release'}
        """
        return {"parity": self.parity, "scene_mode": str(self.scene_mode), "rank_mode": str(self.rank_mode)}


@dataclass(frozen=True)
class BuildHooks:
    """Code that replaces a built-in stage of the build (tests, custom scorers); None = the built-in one.

    Replacing a scorer keys the score cache as ``custom``; a local engine with several jobs needs picklable hooks
    (module-level functions or :func:`functools.partial` of them; the built-in ones are).
    """

    #: ``curate(sources, out_dir, *, progress, **curate_options)`` -> a report with ``clips`` (and ``skipped``,
    #: ``out_dir``); the built-in one is :func:`devil_dataset.builder.curate.curate`
    curate: Callable | None = None
    #: frames uint8 [T, H, W, 3] -> camera-motion score
    #: (:func:`devil_dataset.builder.camera_motion.camera_motion_score`)
    camera_scorer: Scorer | None = None
    #: frames -> background-scene-motion score (:func:`devil_dataset.builder.scene_motion.scene_motion_score`)
    scene_scorer: Scorer | None = None
    #: ``(preset, index)`` -> the unreversed 90-frame mask at the output size
    #: (:func:`devil_dataset.core.mask_store.stored_mask`)
    mask_loader: MaskLoader | None = None
    #: clip path -> frames (:func:`devil_dataset.core.video_io.load_clip`)
    clip_loader: Callable[[Path], np.ndarray] | None = None
    #: called with each parquet shard's path once it is in place
    on_shard: Callable[[Path], None] | None = None


__all__ = ["BUILD_PARITY_MODES", "OUTPUT_DESCRIPTION", "BuildHooks", "BuildOptions", "MaskLoader", "Scorer"]
