"""An example diagnosis of object removals by attribute: the demo's 14 rendered scenes (known camera and
scene motion) at 320x192, 16 frames, each with a DEVIL preset mask (rendered at 1920x1080, resized NEAREST) painted
in as the "object"; two removal methods, the package's ``telea`` and ``aligned-copy`` baselines, run on the input;
then ``diagnose_removals`` with a seeded random tiny DINOv2 (nothing downloaded: RC-S / RC-T values exercise the
machinery, not a trained network's judgement).

    python benchmarks/removal_diagnosis_example.py OUT_DIR        # writes OUT_DIR/{IN,MASKS,telea,...,diag}
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.builder.samples import SAMPLE_SCENES, render_scene  # noqa: E402
from devil_dataset.core.masks import PRESETS, mask_seed, render_mask  # noqa: E402
from devil_dataset.core.networks.dinov2 import save_random_dinov2  # noqa: E402
from devil_dataset.diagnosis.attributes import AttributeOptions  # noqa: E402
from devil_dataset.diagnosis.removal import diagnose_removals  # noqa: E402
from devil_dataset.eval.metrics.metric import EvalOptions  # noqa: E402
from devil_dataset.inpaint import get_inpainter  # noqa: E402

SIZE, FRAMES, METHODS = (320, 192), 16, ("telea", "aligned-copy")
OBJECT_RGB = (200, 40, 40)


def write_mp4(path: Path, frames: np.ndarray) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 15, SIZE)
    for f in frames:
        writer.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    writer.release()


def build(root: Path) -> tuple[Path, Path, dict[str, Path]]:
    dirs = {d: root / d for d in ("IN", "MASKS", *METHODS)}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    presets = list(PRESETS)
    for i, spec in enumerate(SAMPLE_SCENES):
        frames = render_scene(spec, size=SIZE, num_frames=FRAMES, seed=i)
        big = render_mask(presets[i % len(presets)], mask_seed(i), num_frames=FRAMES)
        hole = np.stack([cv2.resize(m.astype(np.uint8), SIZE, interpolation=cv2.INTER_NEAREST) > 0 for m in big])
        with_object = frames.copy()
        with_object[hole] = OBJECT_RGB
        write_mp4(dirs["IN"] / f"{spec.name}.mp4", with_object)
        write_mp4(dirs["MASKS"] / f"{spec.name}.mp4", np.repeat(hole[..., None].astype(np.uint8) * 255, 3, -1))
        for m in METHODS:
            write_mp4(dirs[m] / f"{spec.name}.mp4", get_inpainter(m)(with_object, hole))
    return dirs["IN"], dirs["MASKS"], {m: dirs[m] for m in METHODS}


def main(argv: list[str] | None = None) -> int:
    out = Path((argv or sys.argv[1:])[0])
    t0 = time.perf_counter()
    inputs, masks, preds = build(out)
    model = save_random_dinov2(out / "dinov2-tiny", hidden_size=32, layers=2, heads=2)
    result = diagnose_removals(out / "diag", input_dir=inputs, mask_dir=masks, predictions=preds,
                               options=AttributeOptions(scoring_size=SIZE), cache_dir="none",
                               eval_options=EvalOptions(dino_model=str(model)), progress=False)
    print(f"{time.perf_counter() - t0:.0f} s; {out / 'diag' / 'diagnosis.md'}")
    print("\n".join(result.headline()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
