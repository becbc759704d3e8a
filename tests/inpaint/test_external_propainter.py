"""The worked example of docs/inpainting.md: ProPainter's inference script wrapped through a command template
(docs/examples/propainter_devil.py), run against a stand-in with ProPainter's command line and file conventions
(tests/inpaint/propainter_stand_in/inference_propainter.py: frames-only folder, masks white = hole, output
frames at <output>/<video name>/frames/%04d.png)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "docs" / "examples" / "propainter_devil.py"
STAND_IN = Path(__file__).resolve().parent / "propainter_stand_in"
# The docs' template, with this interpreter and the stand-in's checkout.
TEMPLATE = (f"{sys.executable} {ADAPTER} --propainter {STAND_IN} --input {{input_dir}} --output {{output_dir}} "
            "-- --fp16")


def test_propainter_template_fills_exactly_the_hole():
    from devil_dataset.inpaint.external import command_inpainter

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (3, 24, 32, 3), dtype=np.uint8)
    hole = np.zeros((3, 24, 32), bool)
    for t in range(3):
        hole[t, 4 + t : 12 + t, 6:14] = True
    pred = command_inpainter(TEMPLATE)(frames, hole, clip_id="c")
    assert pred.shape == frames.shape and pred.dtype == np.uint8
    np.testing.assert_array_equal(pred[~hole], frames[~hole])  # known pixels came back in order, RGB
    for t in range(3):  # the stand-in's fill: the frame's mean known colour, so the masks reached it as white = hole
        expected = frames[t][~hole[t]].mean(axis=0).astype(np.uint8)
        assert (pred[t][hole[t]] == expected).all()


def test_propainter_template_in_devil_benchmark(bench_tiny_dataset, tmp_path):
    from devil_dataset.inpaint.method_spec import MethodSpec
    from devil_dataset.pipeline.benchmark import benchmark

    out = tmp_path / "bench"
    result = benchmark(bench_tiny_dataset, {"propainter": MethodSpec(command=TEMPLATE, size_divisor=8)}, out,
                       slices=["fg_size_high"], metrics=["psnr"], jobs=1, progress=False, echo=None)
    assert result.table[("propainter", "fg_size_high")]["psnr"] > 10
    assert len(list((out / "predictions" / "propainter" / "fg_size_high").glob("*/frame_*_pred.png"))) > 0
