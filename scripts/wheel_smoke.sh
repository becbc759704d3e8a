#!/usr/bin/env bash
# The package as a user installs it: builds the sdist, builds the wheel from that sdist (what pip does for an sdist
# user), installs it (not editable) into a new virtual environment, and from that environment builds a small dataset
# with its card, loads a slice with `datasets.load_dataset`, inpaints two clips and scores them with `devil evaluate`.
# Every step runs outside the checkout, so a file the package opens beside its source (instead of as package data)
# fails here.
# Usage: ./scripts/wheel_smoke.sh [WORK_DIR]   (default: a new temporary folder, removed at the end on success)
# The new environment gets the base dependencies and the `build` extra (shot-cut detection), pinned by
# constraints.txt; no torch: the metrics here (psnr, ssim) run on numpy. PYTHON picks the interpreter.
set -euo pipefail
unset PYTHONPATH  # the new environment's package, never the checkout's
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-python3}
BUILD_PY=${BUILD_PYTHON:-$REPO/.venv/bin/python}  # has setuptools (pyproject.toml's build backend)
if [ $# -ge 1 ]; then WORK=$1; mkdir -p "$WORK"; KEEP=1; else WORK=$(mktemp -d); KEEP=0; fi
WORK=$(cd "$WORK" && pwd)
# Caches inside WORK (the user's HuggingFace cache untouched), and nothing asked of the Hub.
export HF_HOME="$WORK/hf-home" HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1
echo "wheel smoke: in $WORK"

# Runs a build-backend hook quietly (its log is printed when it fails).
build_hook() {
  "$BUILD_PY" -c "import sys; from setuptools import build_meta; build_meta.$1(sys.argv[1])" "$WORK/dist" \
    >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log" >&2; return 1; }
}

# 1. The sdist from a copy of the checkout (the build writes build/ and *.egg-info/ next to its sources), then the
#    wheel from the unpacked sdist, with the backend pyproject.toml names (no build isolation: nothing downloaded).
rm -rf "$WORK/tree" "$WORK/dist" "$WORK/sdist"
mkdir -p "$WORK/tree" "$WORK/dist" "$WORK/sdist"
# The checkout's files as git sees them (tracked and untracked, not ignored: no outputs, environments, caches).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -co --exclude-standard -z | tar -c --null --ignore-failed-read -T - | tar -x -C "$WORK/tree"
else
  tar -c --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist --exclude='*.egg-info' \
      --exclude=__pycache__ . | tar -x -C "$WORK/tree"
fi
(cd "$WORK/tree" && build_hook build_sdist)
SDIST=$(ls "$WORK"/dist/*.tar.gz)
tar -xzf "$SDIST" -C "$WORK/sdist"
(cd "$WORK"/sdist/*/ && build_hook build_wheel)
WHEEL=$(ls "$WORK"/dist/*.whl)
echo "wheel smoke: built $(basename "$SDIST") and, from it, $(basename "$WHEEL")"

# 2. A new environment with the wheel (not editable) and what the smoke needs; from here on the working folder is
#    outside the checkout (Python puts the working folder first on sys.path).
cd "$WORK"
rm -rf venv
"$PY" -m venv venv
venv/bin/python -m pip install -q --disable-pip-version-check -c "$REPO/constraints.txt" "$WHEEL[build]"
DEVIL="$WORK/venv/bin/devil"
venv/bin/python - "$WORK" <<'EOF'
import sys, devil_dataset
where = devil_dataset.__file__
assert where.startswith(sys.argv[1]), f"devil_dataset imported from {where}, not from the new environment"
print("wheel smoke: devil_dataset", devil_dataset.__version__, "from", where)
EOF

# 3. Small sources (no network): six 160x96 H.264 pans of 100 frames, written with PyAV (a base dependency).
rm -rf sources dataset predictions results.json hf-home
"$WORK/venv/bin/python" - <<'EOF'
import os
import av
import numpy as np

os.makedirs("sources", exist_ok=True)
width, height, frames = 160, 96, 100
for i in range(6):
    rng = np.random.default_rng(i)
    canvas = (rng.random((height // 8, (width + 2 * frames) // 8, 3)) * 255).astype(np.uint8).repeat(8, 0).repeat(8, 1)
    with av.open(f"sources/v{i}.mp4", "w") as container:
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for t in range(frames):
            x = (i % 3) * t  # three speeds: still, 1 and 2 pixels per frame
            image = av.VideoFrame.from_ndarray(np.ascontiguousarray(canvas[:, x:x + width]), format="rgb24")
            for packet in stream.encode(image):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
EOF

# 4. Build (curation, labelling, masks, slices, the card), load a slice, inpaint and evaluate it.
"$DEVIL" build sources --out dataset --resolution 160x96 --min-resolution 160x96 --quiet
test -s dataset/README.md && test -s dataset/manifest.json
"$WORK/venv/bin/python" - <<'EOF'
import datasets
from huggingface_hub import DatasetCard

card = DatasetCard.load("dataset/README.md")
assert "camera_motion_high" in [c["config_name"] for c in card.data.configs], card.data.configs
assert "{{" not in card.text and "arxiv.org/abs/2105.05332" in card.text
ds = datasets.load_dataset("dataset", "camera_motion_high", split="test")
row = ds[0]
assert len(ds) >= 1 and len(row["frames"]) == len(row["hole"]) >= 45, (len(ds), len(row["frames"]))
assert row["frames"][0].size == (160, 96), row["frames"][0].size
print(f"wheel smoke: load_dataset: {len(ds)} rows, {len(row['frames'])} frames of {row['frames'][0].size}")
EOF
"$DEVIL" inpaint --method telea --dataset dataset --config camera_motion_high --out predictions
"$DEVIL" evaluate --dataset dataset --config camera_motion_high --predictions predictions --metrics psnr ssim \
    --no-gt-cache --out results.json --no-progress
"$WORK/venv/bin/python" - <<'EOF'
import json, math

doc = json.load(open("results.json"))
text = json.dumps(doc)
assert "psnr" in text and "ssim" in text, text[:500]
values = []
def walk(x):
    if isinstance(x, dict):
        for k, v in x.items():
            if k in ("psnr", "ssim") and isinstance(v, (int, float)):
                values.append((k, v))
            walk(v)
    elif isinstance(x, list):
        for v in x:
            walk(v)
walk(doc)
assert values and all(math.isfinite(v) for _, v in values), values
print("wheel smoke: devil evaluate:", ", ".join(f"{k}={v:.4g}" for k, v in values[:2]))
EOF
echo "wheel smoke: passed"
cd "$REPO"
if [ "$KEEP" = 0 ]; then rm -rf "$WORK"; fi
