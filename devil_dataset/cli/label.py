"""``devil label``: camera-motion and background-scene-motion scores, rank labels, hand labels.

The classifier's PR-AUC validation is an experiment script: ``python benchmarks/camera_motion_validation.py``.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..core.errors import DevilError
from ..core.parity import resolve_modes
from ._args import EXAMPLE_FORMATTER, add_parity_argument, existing_path, resolution

CAMERA_EPILOG = """\
examples:
  devil label camera-motion clips/alice-lake-00000.mp4 clips/alice-lake-00001.mp4 --json
  devil label camera-motion curated/clips/*.mp4 --json --detector orb --out cm_scores.json
  devil label camera-motion release/JPEGImages/alice-lake-00000 --json      # a folder of JPEG/PNG frames

--json prints ONE JSON object {path: score} to stdout: a score in [0, 1], the string "inf" when alignment failed
too often (+inf ranks highest), or null when no score could be computed (the reason goes to stderr, exit code 2).
The detector is printed to stderr and recorded in --out (a JSON file with "detector", "scoring_size", "scores").
Frames are resized to 854x480 (area interpolation) before scoring, as the release did.
"""

SCENE_EPILOG = """\
examples:
  devil label scene-motion clips/alice-lake-00000.mp4 --json
  devil label scene-motion clips/*.mp4 --json --mode corrected --out bsm_scores.json

--mode release reproduces the release (uint8 wrap-around AffineScore, segment threshold 375); --mode corrected uses
the true absolute difference with its own threshold (docs/labelling.md). Scores are mean residual flow magnitudes
in pixels per frame at 854x480; null when the clip has no low-camera-motion segment of >= 12 frames.
"""

IMPORT_EPILOG = """\
example:
  printf 'clip_id,label\\nalice-lake-00000,high\\nbob-field-00003,low\\n' > bg.csv
  devil label import-bg-labels bg.csv --labels-file bg_labels.json

Rows are clip_id,label with label low or high (an optional clip_id,label header; # comments). The labels file is
JSON {"format": "devil-bg-scene-motion-labels/1", "labels": {clip_id: label}}; importing merges into it (rows of
the CSV replace earlier labels of the same clip). Manual labels win over automatic scene-motion labels.
"""

BG_PAGE_EPILOG = """\
example:
  devil label bg-scene-motion curated/clips/*.mp4 --serve --labels-csv bg.csv
  # open the printed http://127.0.0.1:PORT/ ; h / l / u answer, n / p move; Ctrl-C when done, then:
  devil label import-bg-labels bg.csv --labels-file bg_labels.json
"""

RANK_EPILOG = """\
examples:
  devil label camera-motion clips/*.mp4 --json > cm.json
  devil label rank cm.json                          # the release's 16% tails
  devil label rank cm.json --threshold 0.05 0.25    # fixed thresholds for small collections

Input: the JSON printed by camera-motion / scene-motion --json, or their --out file. Keys are used as clip ids
(file names without extension). Prints {"low": [...ascending...], "high": [...descending...]}.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    label = subparsers.add_parser(
        "label", help="camera-motion / scene-motion scores and labels",
        description="Score clips for camera motion and background scene motion (the release's scorers), turn scores "
        "into low/high labels and import hand labels.",
        epilog=CAMERA_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    sub = label.add_subparsers(dest="label_command", metavar="SUBCOMMAND")
    sub.required = True

    c = sub.add_parser("camera-motion", help="camera-motion score of video files or clips",
                       description="Camera-motion score (the release's scorer) of each video file, curated clip "
                       "(.mp4) or folder of frames.", epilog=CAMERA_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    c.add_argument("paths", nargs="+", metavar="FILE_OR_CLIP", help="video files, clips or frame folders")
    c.add_argument("--json", action="store_true", help="print one JSON object {path: score}")
    c.add_argument("--detector", choices=("surf", "sift", "orb"), default=None,
                   help="feature detector (default: surf where OpenCV has it, else sift)")
    c.add_argument("--scoring-size", type=resolution, default=(854, 480), metavar="WxH",
                   help="resize frames to this size first (default: the release's 854x480)")
    c.add_argument("--out", metavar="FILE", help="also write {detector, scoring_size, scores} JSON here")
    c.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    c.set_defaults(func=run_camera_motion)

    s = sub.add_parser("scene-motion", help="background-scene-motion score of video files or clips",
                       description="Automatic background-scene-motion score (the release's scorer).",
                       epilog=SCENE_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    s.add_argument("paths", nargs="+", metavar="FILE_OR_CLIP", help="video files, clips or frame folders")
    s.add_argument("--json", action="store_true", help="print one JSON object {path: score}")
    add_parity_argument(s, "--mode to release or to corrected")
    s.add_argument("--mode", choices=("release", "corrected"), default=None,
                   help="release: uint8 wrap-around AffineScore (parity); corrected: true difference (default: "
                   "the one --parity sets)")
    s.add_argument("--flow", choices=("dis", "raft"), default="dis", help="optical flow (default dis)")
    s.add_argument("--detector", choices=("surf", "sift", "orb"), default=None, help="feature detector")
    s.add_argument("--scoring-size", type=resolution, default=(854, 480), metavar="WxH",
                   help="resize frames to this size first (default: the release's 854x480)")
    s.add_argument("--out", metavar="FILE", help="also write {mode, flow, detector, scores} JSON here")
    s.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    s.set_defaults(func=run_scene_motion)

    i = sub.add_parser("import-bg-labels", help="import hand-made background-scene-motion labels",
                       description="Merge clip_id,label rows (low/high) into a JSON labels file.",
                       epilog=IMPORT_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    i.add_argument("csv", type=existing_path, metavar="CSV", help="clip_id,label rows")
    i.add_argument("--labels-file", required=True, metavar="LABELS.json", help="labels file to create or update")
    i.set_defaults(func=run_import_bg_labels)

    b = sub.add_parser("bg-scene-motion", help="label background scene motion by hand in a local web page",
                       description="Serve a page on 127.0.0.1 (random port, URL printed) that plays each clip in "
                       "turn and records high / low / unsure (keys h / l / u or buttons). The labels CSV is rewritten "
                       "atomically after every answer in the format import-bg-labels reads; restarting resumes.",
                       epilog=BG_PAGE_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    b.add_argument("clips", nargs="+", type=existing_path, metavar="CLIP", help="video files (.mp4/.webm)")
    b.add_argument("--serve", action="store_true", required=True, help="serve the labelling page (Ctrl-C stops)")
    b.add_argument("--labels-csv", default="bg_labels.csv", metavar="CSV",
                   help="answers file, created or resumed (default bg_labels.csv)")
    b.set_defaults(func=run_bg_scene_motion)

    r = sub.add_parser("rank", help="low/high labels from a scores JSON",
                       description="Turn scores into low/high candidates: 16% rank tails (release) or thresholds.",
                       epilog=RANK_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    r.add_argument("scores", type=existing_path, metavar="SCORES.json", help="output of camera-motion/scene-motion")
    r.add_argument("--tail", type=float, default=0.16, help="rank-tail fraction (default 0.16)")
    add_parity_argument(r, "--mode to release or to corrected")
    r.add_argument("--mode", choices=("release", "corrected"), default=None,
                   help="release: NaN/null scores rank highest, as the release's pandas sort (parity); "
                        "corrected: they stay unlabelled (default: the one --parity sets)")
    r.add_argument("--threshold", type=float, nargs=2, metavar=("LOW_MAX", "HIGH_MIN"),
                   help="fixed thresholds instead of rank tails")
    r.set_defaults(func=run_rank)


def _report(args: argparse.Namespace, scores: dict[str, float | None], errors: list[str], record: dict) -> int:
    from ..builder.labelling import json_score, scores_text_lines, write_scores_file

    for err in errors:
        print(f"devil: error: {err}", file=sys.stderr)
    mapping = {p: json_score(s) for p, s in scores.items()}
    if args.json:
        print(json.dumps(mapping, indent=2))
    else:
        for line in scores_text_lines(mapping):
            print(line)
    if args.out:
        write_scores_file(args.out, record, mapping)
    return 2 if errors else 0


def run_camera_motion(args: argparse.Namespace) -> int:
    from ..builder.camera_motion import camera_motion_score
    from ..builder.labelling import CAMERA_MOTION_SCORES_FORMAT, score_clips
    from ..core.alignment import resolve_detector

    try:
        detector = resolve_detector(args.detector)
    except ValueError as exc:
        raise DevilError(f"--detector: {exc}") from None
    print(f"devil: camera motion with detector {detector} at {args.scoring_size[0]}x{args.scoring_size[1]}",
          file=sys.stderr)
    scores, errors = score_clips(
        args.paths, lambda f: camera_motion_score(f, detector=detector, scoring_size=args.scoring_size),
        desc="camera motion", progress=not args.no_progress)
    record = {"format": CAMERA_MOTION_SCORES_FORMAT, "detector": detector,
              "scoring_size": list(args.scoring_size)}
    return _report(args, scores, errors, record)


def _mode_of(args: argparse.Namespace, name: str) -> str:
    """``--mode``, else the ``name`` mode ``--parity`` sets (as ``devil build --parity`` does)."""
    from ..builder.build_options import BUILD_PARITY_MODES

    return resolve_modes(args.parity, {name: args.mode}, BUILD_PARITY_MODES)[name]


def run_scene_motion(args: argparse.Namespace) -> int:
    from ..builder.labelling import SCENE_MOTION_SCORES_FORMAT, score_clips, unscored_paths
    from ..builder.scene_motion import resolve_flow, scene_motion_score
    from ..core.alignment import resolve_detector

    try:
        detector = resolve_detector(args.detector)
        resolve_flow(args.flow)
    except ValueError as exc:
        raise DevilError(str(exc)) from None
    mode = _mode_of(args, "scene_mode")
    print(f"devil: scene motion, mode {mode}, flow {args.flow}, detector {detector}", file=sys.stderr)
    scores, errors = score_clips(
        args.paths, lambda f: scene_motion_score(f, mode=mode, flow=args.flow, detector=detector,
                                                 scoring_size=args.scoring_size),
        desc="scene motion", progress=not args.no_progress)
    for p in unscored_paths(scores):
        print(f"devil: note: {p}: no low-camera-motion segment of >= 12 frames, no score", file=sys.stderr)
    record = {"format": SCENE_MOTION_SCORES_FORMAT, "mode": mode, "flow": args.flow, "detector": detector,
              "scoring_size": list(args.scoring_size)}
    return _report(args, scores, errors, record)


def run_import_bg_labels(args: argparse.Namespace) -> int:
    from ..builder.labelling import import_bg_labels

    result = import_bg_labels(args.csv, args.labels_file)
    print(f"{args.labels_file}: {len(result.rows)} rows read from {args.csv}, {result.changed} new or changed; "
          f"{len(result.labels)} labelled clips ({result.count('low')} low, {result.count('high')} high)")
    return 0


def run_bg_scene_motion(args: argparse.Namespace) -> int:
    from ..builder.bg_label_page import LabelSession, make_server

    session = LabelSession(args.clips, args.labels_csv)
    server = make_server(session)
    done = len(session.state()["labels"])
    print(f"labelling page: http://127.0.0.1:{server.server_address[1]}/  ({done} of {len(session.ids)} clips "
          f"already labelled; answers go to {args.labels_csv}; Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print(f"{args.labels_csv}: {len(session.state()['labels'])} of {len(session.ids)} clips labelled", file=sys.stderr)
    return 0


def run_rank(args: argparse.Namespace) -> int:
    from ..builder.labelling import read_scores_file
    from ..builder.labels import label_by_rank, label_by_threshold

    scores = read_scores_file(args.scores)
    try:
        if args.threshold:
            result = label_by_threshold(scores, *args.threshold)
        else:
            result = label_by_rank(scores, args.tail, _mode_of(args, "rank_mode"))
    except ValueError as exc:
        raise DevilError(f"{args.scores}: {exc}") from None
    print(json.dumps({"low": list(result.low), "high": list(result.high)}, indent=2))
    return 0
