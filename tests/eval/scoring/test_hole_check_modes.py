"""The one inverted-mask check (core/hole_check.py) in DEVIL's evaluation (directory mode and a
built dataset's slice), `devil benchmark` and `devil diagnose`: masks read the wrong way round are warned about,
naming the videos and the fix; right ones are not."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.core.release_format import write_frame_pngs, write_mask_pngs
from devil_dataset.eval.protocols.devil.run import evaluate_directory

WARNING = "were the masks read inverted?"


def _release_dir(root, invert: bool):
    rng = np.random.default_rng(0)
    for c in ("c0", "c1"):
        gt = rng.integers(0, 256, (3, 32, 48, 3), dtype=np.uint8)
        hole = np.zeros((3, 32, 48), bool)
        hole[:, 8:20, 10:26] = True
        pred = gt.copy()
        pred[hole] = 128  # a method that inpainted the right hole
        write_frame_pngs(gt, root / "gt" / c)
        write_mask_pngs(~hole if invert else hole, root / "gt" / c)
        write_frame_pngs(pred, root / "pred" / c, kind="pred")
    return root / "gt", root / "pred"


@pytest.mark.parametrize("invert", [False, True])
def test_directory_mode_warns_of_inverted_masks(tmp_path, capsys, invert):
    gt, pred = _release_dir(tmp_path, invert)
    doc = evaluate_directory(gt, pred, ["psnr"], progress=False)
    err = capsys.readouterr().err
    if not invert:
        assert "warnings" not in doc and WARNING not in err
        return
    assert doc["warnings"][0].startswith(f"warning: {WARNING} {pred}: 2 of 2 videos (c0: the hole covers 88% of")
    assert f"devil evaluate: pred: warning: {WARNING}" in err and "mogrify -negate" in err


METHOD = '''
import numpy as np

def inverted(frames, hole):
    out = frames.copy()
    out[~hole] = 255 - out[~hole]  # "inpaints" the known region, as a method reading white = hole would
    return out

def keeps(frames, hole):
    out = frames.copy()
    out[hole] = 128
    return out
'''


def test_benchmark_and_slice_evaluation_warn(bench_tiny_dataset, tmp_path, capsys):
    from devil_dataset.eval.scoring.evaluate import evaluate_slice
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import benchmark

    (tmp_path / "m.py").write_text(METHOD)
    methods = {"bad": MethodSpec(callable=f"{tmp_path / 'm.py'}:inverted"),
               "good": MethodSpec(callable=f"{tmp_path / 'm.py'}:keeps")}
    benchmark(bench_tiny_dataset, methods, tmp_path / "out", slices=["fg_size_low"], metrics=["psnr"], jobs=1,
              progress=False, echo=None)
    err = capsys.readouterr().err
    assert f"devil benchmark: warning: {WARNING} method bad: 2 of 2 videos" in err and "method good" not in err
    docs = evaluate_slice(str(bench_tiny_dataset), "fg_size_low",
                          {m: tmp_path / "out" / "predictions" / m / "fg_size_low" for m in methods}, ["psnr"],
                          progress=False)
    assert "mostly outside the hole" in docs["bad"]["warnings"][0] and "warnings" not in docs["good"]
