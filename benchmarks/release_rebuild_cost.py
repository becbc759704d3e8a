"""Cost of the release rebuild (``devil build --release-sources``) per 1080p clip, by stage, and the projection to
the full benchmark (234 sources, about 1,250 clips, 11 configs x 150 rows).

One 90-frame 1920x1080 source is rendered (the sample renderer's ``pan_water`` scene: camera pan + running water,
textured enough for feature matching), encoded with x264 like a Flickr upload, and pushed through each stage:

    cut     decode every frame (PyAV) + cut score + JPEG q95 files        (per clip)
    load    decode the clip's 90 JPEGs                                    (per clip, once for scoring)
    label   camera-motion + background-scene-motion scores at 854x480, default detector, release mode, DIS,
            in one pass as the build runs them (builder.motion_scores: every frame described once) (per clip)
    frames  cover-crop to 832x480 + JPEG for the parquet rows             (per clip, once, cached)
    mask    render one 90-frame mask at 832x480                           (per distinct mask)
    row     mask statistics + hole encoding of one row                    (per row)

CPU time (all threads of this process) is the number to trust on a shared machine; wall time is printed beside it.

    python benchmarks/release_rebuild_cost.py

Measured (2-core shared machine, load average ~1.7, SIFT, DIS flow): CPU s per clip cut 3.1, load 2.5 (x2),
camera 2.9, scene 21.6, frames 2.8; mask 0.14 per mask, row 0.37 per row -> about 35 CPU s per clip and
12.6 CPU hours for the full rebuild; clip JPEGs 25.6 MB per clip (32 GB work dir), parquet 7.1 MB per row.
Re-measured with the faster labellers (``AMD EPYC``, load 3-8): label 15.7 CPU s per clip (the previous camera + scene
2.4 + 13.1), 24.8 CPU s per clip, 8.8 CPU hours (8.5 with the previous code in the same session).
Quiet (``AMD EPYC``): label 12.2-12.6 CPU s (6.4-6.6 s wall) per clip against the previous 1.7 + 12.6 (1.2 + 9.5 s
wall), 6.8-7.2 CPU hours against 7.6 (docs/release-rebuild.md). Other sessions: label 12.2-13.5 CPU s (6.3-7.1 s
wall), 7.6-7.8 CPU hours (an earlier version 12.7-12.9 in the same session); label 13.3-15.1 CPU s (7.1-8.1 s wall),
7.9-8.2 CPU hours (the noise of the machine).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.builder import samples  # noqa: E402
from devil_dataset.builder.motion_scores import motion_scores  # noqa: E402
from devil_dataset.builder.release_rebuild import curate_release_sources  # noqa: E402
from devil_dataset.core.int8_products import int8_status  # noqa: E402
from devil_dataset.core.video_io import load_clip, write_video  # noqa: E402
from devil_dataset.sources.catalog import load_catalog  # noqa: E402

FULL_CLIPS = 1250  # the paper's clip count (devil-sources.json)
FULL_ROWS = 11 * 150  # `all` + ten slices, 150 rows each (the release's slices)
FULL_MASKS = 11 * 150  # upper bound: every row its own mask (the shuffled lists overlap, so fewer in practice)


def timed(fn, *args, **kw):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kw)
    return out, time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    from devil_dataset.core.cover_crop import cover_crop_frames
    from devil_dataset.core.dataset_schema import encode_frames, encode_hole
    from devil_dataset.core.mask_stats import mask_stats
    from devil_dataset.core.mask_store import stored_mask

    cat = load_catalog()
    tmp = Path(tempfile.mkdtemp(prefix="devil-cost-"))
    src_dir = tmp / "sources"
    src_dir.mkdir()
    print("rendering a 90-frame 1920x1080 source ...", flush=True)
    video = samples.render_scene(samples.scene("pan_water"), size=(1920, 1080), num_frames=90, seed=0)
    src = write_video(src_dir / f"{cat.users[0]}-{cat.video_ids[0]}.mp4", video, fps=30)
    del video
    print(f"source: {src.stat().st_size / 1e6:.1f} MB for 90 frames (x264 CRF 18)")

    stages = {}
    report, *stages["cut"] = timed(curate_release_sources, [src_dir], tmp / "curated", progress=False)
    clip_dir = tmp / "curated" / report.clips[0].path
    jpeg_mb = sum(p.stat().st_size for p in clip_dir.glob("*.jpg")) / 1e6
    frames, *stages["load"] = timed(load_clip, clip_dir)
    int8_status()  # once per build process (torch import + the int8 check, ~1.4 s): not a per-clip cost
    _, *stages["label"] = timed(motion_scores, frames, mode="release")
    crop, c1, w1 = timed(cover_crop_frames, frames, (832, 480))
    enc, c2, w2 = timed(encode_frames, crop, "jpeg")
    stages["frames"] = [c1 + c2, w1 + w2]
    row_mb = sum(len(f["bytes"]) for f in enc) / 1e6
    masks = []
    cm, wm = 0.0, 0.0
    for i in range(3):
        m, c, w = timed(stored_mask, "fgs-h_fgm-h_fgd-h", i, size=(832, 480), num_frames=90)
        masks.append(m)
        cm, wm = cm + c / 3, wm + w / 3
    stages["mask"] = [cm, wm]
    cr, wr = 0.0, 0.0
    for m in masks:
        _, c, w = timed(lambda h: (mask_stats(h, size=(832, 480)), encode_hole(h)), m)
        cr, wr = cr + c / 3, wr + w / 3
    stages["row"] = [cr, wr]

    print(f"\n{'stage':8s} {'CPU s':>8s} {'wall s':>8s}  unit")
    units = {"mask": "per mask", "row": "per row"}
    for k, (c, w) in stages.items():
        print(f"{k:8s} {c:8.2f} {w:8.2f}  {units.get(k, 'per clip')}")
    # the build decodes a clip's JPEGs twice: once for scoring, once for the row frames (then cached)
    per_clip = sum(stages[k][0] for k in ("cut", "load", "label", "frames")) + stages["load"][0]
    total = per_clip * FULL_CLIPS + stages["mask"][0] * FULL_MASKS + (stages["row"][0] + 0) * FULL_ROWS
    cores = os.cpu_count() or 1
    print(f"\nper clip (cut + 2 x load + label + frames): {per_clip:.1f} CPU s")
    print(f"full rebuild: {FULL_CLIPS} clips x {per_clip:.1f} + {FULL_MASKS} masks x {stages['mask'][0]:.2f} + "
          f"{FULL_ROWS} rows x {stages['row'][0]:.2f} = {total / 3600:.1f} CPU hours "
          f"({total / 3600 / cores:.1f} h on this machine's {cores} cores if parallel; the build is one process "
          "whose labellers spread each clip over the cores, so about the CPU hours / threads it uses)")
    print(f"disk: clip JPEGs {jpeg_mb:.1f} MB per clip ({jpeg_mb * FULL_CLIPS / 1e3:.0f} GB for {FULL_CLIPS}, "
          f"work dir); 832x480 row frames {row_mb:.1f} MB per row ({row_mb * FULL_ROWS / 1e3:.1f} GB of parquet)")


if __name__ == "__main__":
    main()
