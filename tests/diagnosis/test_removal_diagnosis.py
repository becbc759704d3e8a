"""``devil diagnose --input-dir``: DEVIL's diagnosis of object removals without ground truth (issue 45)."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.diagnosis.attributes import AttributeOptions
from devil_dataset.diagnosis.removal import diagnose_removals, labelling_layout
from devil_dataset.eval.protocols.propainter.layout import list_davis_videos, read_davis_video
from devil_dataset.eval.protocols.prove.kernels import grey_mask
from devil_dataset.eval.protocols.prove.layout import list_prove_videos, read_frames

from ..eval.prove_data import write_varied_layout


def _features(images):
    rng = np.random.default_rng(len(images))
    return np.stack([rng.normal(size=(i.shape[0] // 14, i.shape[1] // 14, 4)) for i in images])


def test_labelling_layout_is_the_input_with_thresholded_masks(tmp_path):
    inputs, masks, preds = write_varied_layout(tmp_path / "set", videos=2, frames=3)
    layout = list_prove_videos(inputs, preds["copy-fill"], masks)
    gt, mk = labelling_layout(layout.videos, tmp_path / "lab")
    [first, _] = list_davis_videos(gt, mk)
    frames, hole = read_davis_video(first, size=(96, 80))
    np.testing.assert_array_equal(frames, read_frames(inputs / "v00.mp4"))
    src = read_frames(masks / "v00.mp4")
    np.testing.assert_array_equal(hole, np.stack([grey_mask(m) > 127 for m in src]))  # PROVE's threshold
    assert hole.sum() > 0


def test_cli_errors(tmp_path, capsys):
    assert main(["diagnose", "--input-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "--input-dir needs --mask-dir and --predictions" in capsys.readouterr().err


@pytest.mark.slow
def test_removals_diagnosed_by_attribute(tmp_path):
    inputs, masks, preds = write_varied_layout(tmp_path / "set", videos=6, frames=6)
    result = diagnose_removals(tmp_path / "out", input_dir=inputs, mask_dir=masks, predictions=preds,
                               options=AttributeOptions(scoring_size=(96, 80)), cache_dir="none", network=_features,
                               progress=False)
    assert set(result.scores) == {"copy-fill", "noise-fill"}
    assert {k for v in result.scores["copy-fill"].values() for k in v} == {"rc_s", "rc_t"}
    assert {f.key for f in result.findings} == {"rc_s", "rc_t"}
    assert (tmp_path / "out" / "diagnosis.md").read_text().count("rc_t") > 2
