"""Run ProPainter (https://github.com/sczhou/ProPainter) on one clip for `devil benchmark` / `devil inpaint --command`.

devil writes the release's method-input layout and expects the release's prediction layout (docs/inpainting.md):

    {input_dir}/frame_%04d_gt.png     RGB frames (hole pixels black by default)
    {input_dir}/frame_%04d_mask.png   1/white = known, 0/black = hole
    {output_dir}/frame_%04d_pred.png  RGB predictions, same count and size

ProPainter's own inference script, ``inference_propainter.py`` (run from its checkout: it imports ``model``,
``core``, ``utils`` and keeps its weights in ``weights/``), reads

    --video DIR   a folder holding only the frames (every file in it, in sorted-name order)
    --mask DIR    a folder of masks, one per frame in sorted-name order, white (> 0) = hole (dilated by
                  --mask_dilation, default 4)
    --output DIR  with --save_frames it writes DIR/<name of the --video folder>/frames/%04d.png (RGB PNGs, the
                  input size; frames are processed at the size rounded down to a multiple of 8 and resized back)

so this script copies the frames into a frames-only folder, inverts the masks, runs ProPainter and renames its
frames. Arguments after ``--`` go to inference_propainter.py unchanged (e.g. ``-- --fp16``).

    devil benchmark --dataset devil-build/ --out bench/ --method propainter --size-divisor 8 --timeout 3600 \\
        --command "python docs/examples/propainter_devil.py --propainter ~/ProPainter \\
                   --input {input_dir} --output {output_dir}"
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

VIDEO_NAME = "clip"  # ProPainter names its output folder after the --video folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--propainter", required=True, type=Path, help="ProPainter checkout (inference_propainter.py)")
    parser.add_argument("--input", required=True, type=Path, help="devil's {input_dir}")
    parser.add_argument("--output", required=True, type=Path, help="devil's {output_dir}")
    parser.add_argument("--python", default=sys.executable, help="Python of ProPainter's environment")
    parser.add_argument("extra", nargs="*", help="after --: more arguments for inference_propainter.py")
    args = parser.parse_args(argv)
    gts = sorted(args.input.glob("frame_*_gt.png"))
    if not gts:
        parser.error(f"{args.input}: no frame_%04d_gt.png files")
    with tempfile.TemporaryDirectory(prefix="propainter-") as tmp:
        frames, masks, out = Path(tmp) / VIDEO_NAME, Path(tmp) / "masks", Path(tmp) / "out"
        frames.mkdir()
        masks.mkdir()
        for i, gt in enumerate(gts):
            shutil.copyfile(gt, frames / f"{i:05d}.png")
            known = np.asarray(Image.open(gt.with_name(gt.name.replace("_gt.png", "_mask.png"))).convert("L")) > 0
            Image.fromarray(np.where(known, 0, 255).astype(np.uint8)).save(masks / f"{i:05d}.png")  # white = hole
        subprocess.run([args.python, "inference_propainter.py", "--video", str(frames), "--mask", str(masks),
                        "--output", str(out), "--save_frames", *args.extra], cwd=args.propainter, check=True)
        saved = out / VIDEO_NAME / "frames"
        for i in range(len(gts)):
            shutil.copyfile(saved / f"{i:04d}.png", args.output / f"frame_{i:04d}_pred.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
