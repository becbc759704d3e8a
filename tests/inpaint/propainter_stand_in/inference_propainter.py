"""A stand-in for ProPainter's ``inference_propainter.py`` (tests only): the same command-line arguments and file
conventions, a trivial fill. Frames: every file of --video in sorted-name order; masks: --mask, white (> 0) = hole;
output: --output/<video folder name>/frames/%04d.png with --save_frames. It must run from its own folder (the real
script imports its checkout's packages). Each hole pixel becomes the frame's mean known colour."""
import argparse
import os

import cv2
import numpy as np
from PIL import Image

parser = argparse.ArgumentParser()
parser.add_argument("-i", "--video", type=str, default="inputs/object_removal/bmx-trees")
parser.add_argument("-m", "--mask", type=str, default="inputs/object_removal/bmx-trees_mask")
parser.add_argument("-o", "--output", type=str, default="results")
parser.add_argument("--resize_ratio", type=float, default=1.0)
parser.add_argument("--height", type=int, default=-1)
parser.add_argument("--width", type=int, default=-1)
parser.add_argument("--mask_dilation", type=int, default=4)
parser.add_argument("--ref_stride", type=int, default=10)
parser.add_argument("--neighbor_length", type=int, default=10)
parser.add_argument("--subvideo_length", type=int, default=80)
parser.add_argument("--raft_iter", type=int, default=20)
parser.add_argument("--mode", default="video_inpainting", choices=["video_inpainting", "video_outpainting"])
parser.add_argument("--save_fps", type=int, default=24)
parser.add_argument("--save_frames", action="store_true")
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()

assert os.path.abspath(os.getcwd()) == os.path.dirname(os.path.abspath(__file__)), "run from the checkout"
video_name = os.path.basename(args.video)
frames = [cv2.cvtColor(cv2.imread(os.path.join(args.video, f)), cv2.COLOR_BGR2RGB)
          for f in sorted(os.listdir(args.video))]
holes = [np.array(Image.open(os.path.join(args.mask, f)).convert("L")) > 0 for f in sorted(os.listdir(args.mask))]
assert len(holes) == len(frames) and all(h.shape == f.shape[:2] for h, f in zip(holes, frames))
if args.save_frames:
    os.makedirs(os.path.join(args.output, video_name, "frames"), exist_ok=True)
    for idx, (frame, hole) in enumerate(zip(frames, holes)):
        out = frame.copy()
        out[hole] = frame[~hole].mean(axis=0).astype(np.uint8)
        cv2.imwrite(os.path.join(args.output, video_name, "frames", str(idx).zfill(4) + ".png"),
                    cv2.cvtColor(out, cv2.COLOR_RGB2BGR))
