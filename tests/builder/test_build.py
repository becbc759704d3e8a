"""The build pipeline end to end on tiny sources: layout, row contents, determinism, resume after a crash."""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

from devil_dataset.builder.build import build
from devil_dataset.builder.build_options import BUILD_PARITY_MODES, BuildHooks, BuildOptions
from devil_dataset.core.engines import Engine, get_engine
from devil_dataset.core.errors import DevilError, UnknownNameError
from devil_dataset.core.slices import SLICES

BUILD_SIZE = (64, 48)


def build_fake_mask(preset: str, index: int) -> np.ndarray:
    w, h = BUILD_SIZE
    m = np.zeros((90, h, w), bool)
    for t in range(90):
        m[t, 10:20, (index + t) % 50 : (index + t) % 50 + 10] = True
    m[:, 0, : len(preset) % 7 + 1] = True
    return m


def build_sources(directory, count=6):
    """Tiny sources as .npy frame arrays (read by :func:`build_fake_curate`)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    out = []
    for i in range(count):
        base = (rng.random((48, 200, 3)) * 255).astype(np.uint8)
        frames = np.stack([base[:, k * (i % 3) : k * (i % 3) + 80] for k in range(45 + i)])
        np.save(directory / f"v{i}.npy", frames)
        out.append(directory / f"v{i}.npy")
    return out


def build_fake_curate(sources, out_dir, *, progress=True, **options):
    """A lossless stand-in for curation: one clip per source, stored as PNG frames (``load_clip`` reads folders).

    The real curation stores H.264 clips; this keeps the test about the builder's own determinism and speed.
    """
    from types import SimpleNamespace

    from devil_dataset.core.release_format import write_frame_pngs

    clips = []
    for src in sources:
        frames = np.load(src)
        cid = f"{os.path.splitext(os.path.basename(src))[0]}-00000"
        d = out_dir / "clips" / cid
        if not d.is_dir():
            write_frame_pngs(frames, d)
        clips.append(SimpleNamespace(clip_id=cid, path=f"clips/{cid}", source=str(src), frame_count=len(frames),
                                     fps=30.0, first_frame=0, sha256=hashlib.sha256(frames.tobytes()).hexdigest()))
    return SimpleNamespace(out_dir=out_dir, clips=clips, skipped=[])


BUILD_HOOKS = BuildHooks(curate=build_fake_curate, mask_loader=build_fake_mask,
                         camera_scorer=lambda f: float(f[..., 1].mean()), scene_scorer=lambda f: float(f[..., 2].std()))


def build_tiny(sources, out, *, hooks=BUILD_HOOKS, on_shard=None, **options):
    """Build with the fake curation, scorers and masks; ``options`` are :class:`BuildOptions` fields."""
    return build(sources, out, BuildOptions(size=BUILD_SIZE, progress=False, **options),
                 hooks=replace(hooks, on_shard=on_shard))


def _hashes(root):
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and not rel.parts[0].startswith("."):
            out[rel.as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture(scope="module")
def build_once(tmp_path_factory):
    root = tmp_path_factory.mktemp("build")
    sources = build_sources(root / "src")
    result = build_tiny(sources, root / "a")
    return root, sources, result


def test_layout_rows_and_bytes(build_once):
    root, _, result = build_once
    out = root / "a"
    assert result.num_clips == 6 and result.per_slice == 2 and set(result.config_rows) == set(SLICES)
    for name in SLICES:
        shards = sorted((out / "data" / name).glob("test-*.parquet"))
        assert [s.name for s in shards] == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
        assert result.config_bytes[name] == sum(s.stat().st_size for s in shards)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["num_clips"] == 6 and manifest["configs"]["all"]["rows"] == 2
    assert "Scaled down" in (out / "README.md").read_text()
    assert "v0.mp4" in result.summary() or "all" in result.summary()


def test_rows_follow_the_plan(build_once):
    from devil_dataset.core.cover_crop import cover_crop_frames
    from devil_dataset.core.dataset_schema import decode_frames, encode_frames
    from devil_dataset.core.video_io import load_clip
    from devil_dataset.data import iter_slice

    root, _, _ = build_once
    out = root / "a"
    curated = out / ".devil-build" / "curated"
    for name in ("camera_motion_high", "fg_displacement_low"):
        rows = list(iter_slice(out, name))
        assert [r["release_index"] for r in rows] == list(range(len(rows)))  # row i = the release's folder i
        from devil_dataset.builder.assemble import mask_list
        spec_masks = "all" if name == "camera_motion_high" else "fgd-l"
        assert [(r["preset"], r["mask_index"], r["reversed"]) for r in rows] == [
            (m.preset, m.index, m.reversed) for m in mask_list(spec_masks, len(rows))]
        if name == "camera_motion_high":  # cm/bsm video lists are written in name order
            assert [r["clip_id"] for r in rows] == sorted(r["clip_id"] for r in rows)
        for r in rows:
            mask = build_fake_mask(r["preset"], r["mask_index"])
            expect = (mask[::-1] if r["reversed"] else mask)[: r["num_frames"]]
            assert np.array_equal(r["hole"], expect)
            clip = cover_crop_frames(load_clip(curated / "clips" / r["clip_id"]), BUILD_SIZE)
            assert np.array_equal(r["frames"], decode_frames(encode_frames(clip, "jpeg")))  # JPEG q95 of the crop
            assert r["num_frames"] == len(clip) and r["fps"] == 30.0
        if name == "camera_motion_high":
            assert all(r["camera_motion_label"] == "high" for r in rows)
        else:
            assert all(r["fg_displacement_label"] == "low" for r in rows)


def test_byte_identical_rebuild_and_resume_after_crash(build_once):
    root, sources, _ = build_once
    reference = _hashes(root / "a")
    assert len(reference) == 4 + 22  # card, manifest, LICENSE.md, the preview parquet, 22 shards
    assert "preview/test-00000-of-00001.parquet" in reference and "LICENSE.md" in reference

    class Crash(Exception):
        pass

    written = []

    def crash_after_five(path):
        written.append(path)
        if len(written) == 5:
            raise Crash(path)

    with pytest.raises(Crash):
        build_tiny(sources, root / "b", on_shard=crash_after_five)
    assert not (root / "b" / "README.md").exists()
    assert len(list((root / "b" / "data").rglob("*.parquet"))) == 5
    resumed_shards = []
    build_tiny(sources, root / "b", on_shard=resumed_shards.append)
    assert _hashes(root / "b") == reference
    # the resumed run kept the five finished shards (same inode = not rewritten)
    assert all(p.stat().st_ino == q.stat().st_ino for p, q in zip(written, resumed_shards[:5]))


def test_changed_seed_changes_plan_and_rewrites(build_once, tmp_path):
    root, sources, _ = build_once
    result = build_tiny(sources, tmp_path / "c", seed=5)
    assert _hashes(tmp_path / "c")["data/all/test-00000-of-00002.parquet"] != \
        _hashes(root / "a")["data/all/test-00000-of-00002.parquet"]
    assert result.per_slice == 2


def test_bad_inputs(tmp_path):
    with pytest.raises(DevilError, match="no sources"):
        build([], tmp_path / "x")
    with pytest.raises(DevilError, match="frame format"):
        build(["a.mp4"], tmp_path / "x", BuildOptions(frame_format="gif"))
    with pytest.raises(DevilError, match="either sources or --sample"):
        build(["a.mp4"], tmp_path / "x", BuildOptions(sample=True))
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(DevilError, match="not a directory"):
        build(["a.mp4"], f)


def test_bg_labels_matching_no_clip_are_listed(build_once, tmp_path):
    """--bg-labels ids that match no clip are not ignored silently: a warning lists them."""
    root, sources, _ = build_once
    clip = json.loads((root / "a" / "manifest.json").read_text())["clips"][0]
    with pytest.warns(UserWarning, match="nope-1, nope-2"):
        result = build_tiny(sources, tmp_path / "b", bg_labels={"nope-2": "high", clip: "low", "nope-1": "low"})
    assert result.unmatched_bg_labels == ["nope-1", "nope-2"]
    assert "bg labels matching no clip (ignored): nope-1, nope-2" in result.summary()


def test_rebuild_repairs_a_truncated_shard(build_once, tmp_path):
    """Re-running the build over a damaged shard rewrites it (the manifest never approves it)."""
    from devil_dataset.builder.publish import publish_plan

    root, sources, _ = build_once
    out = tmp_path / "c"
    build_tiny(sources, out)
    before = _hashes(out)
    shard = out / "data" / "fg_size_high" / "test-00001-of-00002.parquet"
    shard.write_bytes(shard.read_bytes()[:500])
    with pytest.raises(DevilError, match="test-00001-of-00002.parquet"):
        publish_plan(out)
    build_tiny(sources, out)
    assert _hashes(out) == before
    assert [n for n, _ in publish_plan(out)]


def test_score_clips_same_scores_with_worker_processes(tmp_path):
    """Scoring in two worker processes gives the same cache as in-process scoring, and resumes from it."""
    from types import SimpleNamespace

    from devil_dataset.builder.build import SeparateScorers, _default_clip_loader, score_clips
    from devil_dataset.core.video_io import write_video

    rng = np.random.default_rng(0)
    clips = []
    for k in range(4):
        path = tmp_path / f"c{k}.mp4"
        write_video(path, rng.integers(0, 256, (6, 32, 48, 3), dtype=np.uint8), fps=25)
        clips.append(SimpleNamespace(clip_id=f"c{k}", sha256=f"sha{k}", path=path.name))
    kwargs = dict(scorer=SeparateScorers(np.mean, np.std), clip_loader=_default_clip_loader, progress=False)
    one = score_clips(clips, tmp_path, tmp_path / "one.json", engine=get_engine("local"), **kwargs)
    two = score_clips(clips, tmp_path, tmp_path / "two.json", engine=get_engine("local", jobs=2), **kwargs)
    assert one == two and list(two) == ["c0", "c1", "c2", "c3"]
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()
    calls = []
    again = score_clips(clips, tmp_path, tmp_path / "two.json", scorer=lambda f: calls.append(1),
                        clip_loader=_default_clip_loader, progress=False,
                        engine=get_engine("local", jobs=2))
    assert again == two and calls == []  # all cached: nothing scored, no pool needed


def test_build_summary_lists_every_source_with_clips_or_reason(tmp_path):
    from devil_dataset.builder.build import BuildResult
    from devil_dataset.builder.curate import ClipRecord, CurationReport, SkippedSource

    rec = ClipRecord(clip_id="a-00000", path="clips/a-00000.mp4", source="a.mp4", source_sha256="0" * 64,
                     shot_index=0, first_frame=0, frame_count=90, fps=25.0, fps_fraction="25/1", width=160,
                     height=96, cut_score=0.0, sha256="1" * 64)
    report = CurationReport(out_dir=tmp_path, clips=[rec], sources=["a.mp4", "short.mp4"],
                            skipped=[SkippedSource("short.mp4", None, "no clip: 10 frames")])
    result = BuildResult(tmp_path, 1, 0, 1, skipped_sources=["short.mp4: no clip: 10 frames"],
                         source_lines=report.source_lines())
    assert result.summary().splitlines()[-3:] == ["clips per source:", "  a.mp4: 1 clip",
                                                  "  short.mp4: skipped: no clip: 10 frames"]


def test_build_options_defaults_are_the_release_build():
    options = BuildOptions()
    assert (options.sample, options.seed, options.size, options.frame_format, options.license) == \
        (False, 0, (832, 480), "jpeg", "other")
    assert (options.detector, options.scoring_size, options.progress) == (None, None, True)
    assert (options.parity, options.scene_mode, options.rank_mode) == ("release", "release", "release")
    assert options.engine == Engine("local", 1, None)
    assert (options.bg_labels, options.attributions, options.curate_options, options.info_extra) == ({}, {}, {}, {})
    assert options.modes() == {"parity": "release", "scene_mode": "release", "rank_mode": "release"}
    with pytest.raises(AttributeError):
        options.seed = 1  # frozen


@pytest.mark.parametrize("kwargs, needle", [
    (dict(parity="strict"), "parity: unknown parity 'strict'; valid: release, corrected"),
    (dict(scene_mode="fixed"), "scene_mode: unknown scene mode 'fixed'; valid: release, corrected"),
    (dict(parity="corrected", rank_mode="pandas"), "rank_mode: unknown rank mode 'pandas'; valid: release, corrected"),
    (dict(frame_format="gif"), "frame_format: unknown frame format 'gif'; valid: jpeg, png"),
])
def test_build_options_refuse_unknown_names(kwargs, needle):
    with pytest.raises(UnknownNameError) as exc:
        BuildOptions(**kwargs)
    assert str(exc.value).startswith(needle)


def test_build_options_want_an_engine_not_its_name():
    with pytest.raises(DevilError, match="engine: expected an Engine .*get_engine.*got 'ray'"):
        BuildOptions(engine="ray")


@pytest.mark.parametrize("kwargs, modes", [
    ({}, ("release", "release", "release")),
    (dict(parity="corrected"), ("corrected", "corrected", "corrected")),
    (dict(parity="corrected", scene_mode="release"), ("corrected", "release", "corrected")),
    (dict(rank_mode="corrected"), ("release", "release", "corrected")),
])
def test_parity_sets_both_modes_and_an_explicit_mode_wins(kwargs, modes):
    options = BuildOptions(**kwargs)
    assert (options.parity, options.scene_mode, options.rank_mode) == modes
    assert options.modes() == dict(zip(("parity", "scene_mode", "rank_mode"), modes))


def test_parity_table_names_the_modes_of_the_scorer_and_the_ranking():
    from devil_dataset.builder import labels, scene_motion
    from devil_dataset.core.parity import PARITIES, mode_choices

    assert tuple(BUILD_PARITY_MODES) == PARITIES
    assert mode_choices(BUILD_PARITY_MODES, "scene_mode") == scene_motion.MODES
    assert mode_choices(BUILD_PARITY_MODES, "rank_mode") == labels.RANK_MODES


def test_manifest_and_card_record_the_resolved_modes(build_once):
    root, _, _ = build_once
    manifest = json.loads((root / "a" / "manifest.json").read_text())
    assert manifest["modes"] == {"parity": "release", "scene_mode": "release", "rank_mode": "release"}
    card = (root / "a" / "README.md").read_text()
    assert "Parity `release` (`devil build --parity`): background-scene-motion score mode `release`, NaN scores " \
           "in the rank tails `release`" in card


def test_corrected_parity_leaves_unscored_clips_out_of_the_tails(build_once, tmp_path):
    """rank_mode reaches the plan: a clip without a scene-motion score (NaN) falls into the high tail in the
    release's parity and is left out in the corrected one; the manifest records each set."""
    root, sources, _ = build_once
    unscored = "v0-00000"  # the 45-frame source
    hooks = replace(BUILD_HOOKS, scene_scorer=lambda f: math.nan if len(f) == 45 else float(f[..., 2].std()))
    high = {}
    for parity in ("release", "corrected"):
        build_tiny(sources, tmp_path / parity, hooks=hooks, parity=parity)
        manifest = json.loads((tmp_path / parity / "manifest.json").read_text())
        assert manifest["modes"] == {"parity": parity, "scene_mode": parity, "rank_mode": parity}
        high[parity] = manifest["configs"]["bg_scene_motion_high"]["clip_ids"]
    assert unscored in high["release"] and unscored not in high["corrected"]


def test_min_resolution_reaches_curation(tmp_path):
    """`devil build --min-resolution WxH` (BuildOptions.min_resolution) is curation's min_size."""
    import argparse

    from devil_dataset.cli.build import options_from_args, register

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["build", "--sample", "--out", str(tmp_path / "o"), "--resolution", "640x272",
                              "--min-resolution", "640x272"])
    options = options_from_args(args)
    assert (options.size, options.min_resolution) == ((640, 272), (640, 272))
    seen = []

    def curate(sources, out_dir, *, progress=True, **options):
        seen.append(options.get("min_size"))
        return build_fake_curate(sources, out_dir, progress=progress)

    build_tiny(build_sources(tmp_path / "src", 2), tmp_path / "ds", hooks=replace(BUILD_HOOKS, curate=curate),
               min_resolution=(64, 48))
    assert seen == [(64, 48)]
    with pytest.raises(DevilError, match="min_resolution"):
        BuildOptions(min_resolution=(0, 48))
