"""The DEVIL mask generator: bit parity with the release fixtures, the preset table, size/num_frames semantics."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from devil_dataset.core.masks import (
    PRESETS,
    RELEASE_NUM_FRAMES,
    RELEASE_SIZE,
    _packed_hole,
    border_gaps,
    get_preset,
    iter_mask_images,
    mask_seed,
    render_mask,
    render_mask_packed,
)

# ../shared/fixtures next to the checkout (tests/builder/this_file -> parents[2] is the repository root).
FIXTURES = Path(__file__).parents[2].parent / "shared" / "fixtures" / "original-masks"
NAMED_FIXTURES = ("fgs-l_fgm-h_fgd-h_seedindex0.npz", "fgs-h_fgm-l_fgd-l_seedindex1.npz")
# Every reference in the folder is checked, so references added later are covered without editing this file.
FIXTURE_FILES = sorted(p.name for p in FIXTURES.glob("*_seedindex*.npz")) if FIXTURES.is_dir() else []


def _load_fixture(name: str) -> tuple[str, int, np.ndarray, tuple[int, int, int], int]:
    """(preset, index, hole_packed, (T, H, W), seed) of a reference; skips when the fixtures are absent."""
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"release mask fixture {path} is absent (expected ../shared/fixtures next to the checkout)")
    preset, index = name[: -len(".npz")].split("_seedindex")
    with np.load(path) as f:
        shape = tuple(int(v) for v in f["shape"])
        packed = f["hole_packed"]
        seed = int(f["seed"])
    return preset, int(index), packed, shape, seed


@pytest.mark.parametrize("name", NAMED_FIXTURES)
def test_named_release_fixture_is_bit_identical(name):
    preset, index, ref_packed, (t, h, w), seed = _load_fixture(name)
    assert seed == mask_seed(index)
    # Frame 0 first (the head walk and the rasteriser), as the public bool array ...
    first = render_mask(preset, seed, size=(w, h), num_frames=1)
    ref_first = np.unpackbits(ref_packed[0], axis=-1, count=w).astype(bool)
    assert first.shape == (1, h, w) and first.dtype == bool
    assert np.count_nonzero(first[0] != ref_first) == 0, "frame 0 differs: head walk or rasterisation"
    # ... then the motion of every later frame, compared bit-packed (8x less memory than bool arrays).
    ours = render_mask_packed(preset, seed, size=(w, h), num_frames=t)
    assert ours.shape == ref_packed.shape
    per_frame = np.bitwise_count(ours ^ ref_packed).reshape(t, -1).sum(axis=1)
    assert per_frame.sum() == 0, (f"{int(per_frame.sum())} pixels differ, first frames "
                                  f"{np.nonzero(per_frame)[0][:10].tolist()}")


@pytest.mark.parametrize("name", [n for n in FIXTURE_FILES if n not in NAMED_FIXTURES] or
                         [pytest.param(None, marks=pytest.mark.skip(reason="no further release references"))])
def test_further_release_references_are_bit_identical(name):
    preset, index, ref_packed, (t, h, w), seed = _load_fixture(name)
    assert seed == mask_seed(index)
    assert np.array_equal(render_mask_packed(preset, seed, size=(w, h), num_frames=t), ref_packed)


def test_fixture_folder_holds_the_named_references():
    if not FIXTURES.is_dir():
        pytest.skip(f"release mask fixtures {FIXTURES} are absent (expected ../shared/fixtures next to the checkout)")
    assert set(NAMED_FIXTURES) <= set(FIXTURE_FILES)


def test_seed_table():
    assert (mask_seed(0), mask_seed(1)) == (2357136044, 2546248239)
    assert mask_seed(999) == int(np.random.RandomState(0).randint(2**32, size=1000)[999])
    for bad in (-1, 1000):
        with pytest.raises(ValueError, match="mask index"):
            mask_seed(bad)


def test_preset_table_is_the_spec_table():
    assert sorted(PRESETS) == sorted(f"fgs-{s}_fgm-{m}_fgd-{d}" for s in "lh" for m in "lh" for d in "lh")
    p = get_preset("fgs-l_fgm-h_fgd-h")
    assert (p.vertices, p.brush_width, p.init_border_gap, p.init_speed, p.centroid, p.global_accel) == (
        (10, 22), (50, 125), 400, (9, 15), (150, 1), (1, 3))
    assert get_preset("fgs-h_fgm-l_fgd-l").centroid is None
    assert get_preset("fgs-h_fgm-h_fgd-l").labels == {"fgs": "h", "fgm": "h", "fgd": "l"}
    with pytest.raises(ValueError, match="valid: fgs-h_fgm-h_fgd-h"):
        get_preset("fgs-x")


def test_render_is_deterministic_and_frames_are_a_prefix():
    a = render_mask("fgs-h_fgm-h_fgd-h", mask_seed(3), num_frames=4)
    b = render_mask("fgs-h_fgm-h_fgd-h", mask_seed(3), num_frames=2)
    assert a.shape == (4, 1080, 1920) and a.dtype == bool
    assert np.array_equal(a[:2], b)  # frames are generated sequentially: num_frames only cuts the sequence
    assert a.any(axis=(1, 2)).all() and not a.all()
    assert not np.array_equal(a[0], a[3])  # it moves
    assert np.array_equal(render_mask_packed("fgs-h_fgm-h_fgd-h", mask_seed(3), num_frames=4),
                          np.packbits(a, axis=-1))


def test_presets_differ_for_the_same_seed():
    a = render_mask("fgs-l_fgm-l_fgd-l", mask_seed(5), num_frames=1)
    b = render_mask("fgs-h_fgm-l_fgd-l", mask_seed(5), num_frames=1)
    assert a.mean() < b.mean()


def test_size_is_the_generator_canvas():
    # Another canvas is what the release's generator draws at that size: the same draws, other bounds.
    hole = render_mask("fgs-h_fgm-l_fgd-l", mask_seed(0), size=(1001, 701), num_frames=3)
    assert hole.shape == (3, 701, 1001)
    assert hole.any()
    release = render_mask("fgs-h_fgm-l_fgd-l", mask_seed(0), num_frames=1)
    assert not np.array_equal(hole[0], release[0, :701, :1001])  # randint(W), the boxes: not a crop of 1080p
    # The release's gaps wherever the release can render (canvas > 2 * gap) ...
    assert border_gaps("fgs-l_fgm-l_fgd-l", (801, 801)) == (400, 400)
    assert border_gaps("fgs-h_fgm-l_fgd-l", (1920, 1080)) == (300, 300)
    # ... and limited where its loop would never end, so every size renders.
    assert border_gaps("fgs-l_fgm-l_fgd-l", (800, 480)) == (399, 239)
    small = render_mask("fgs-l_fgm-l_fgd-l", mask_seed(0), size=(832, 480), num_frames=2)
    assert small.shape == (2, 480, 832) and small.any() and not small.all()
    tiny = render_mask("fgs-h_fgm-h_fgd-h", mask_seed(0), size=(5, 3), num_frames=2)
    assert tiny.shape == (2, 3, 5)
    with pytest.raises(ValueError, match="positive"):
        render_mask("fgs-l_fgm-l_fgd-l", 0, size=(0, 480))


def test_bad_arguments():
    with pytest.raises(ValueError, match="num_frames"):
        render_mask("fgs-l_fgm-l_fgd-l", 0, num_frames=0)
    with pytest.raises(ValueError, match="seed"):
        render_mask("fgs-l_fgm-l_fgd-l", 2**32, num_frames=1)
    with pytest.raises(ValueError, match="unknown preset"):
        render_mask("nope", 0)


@pytest.mark.parametrize("width", [13, 16, 1920])
def test_packing_matches_pillow_bit_packer(width):
    image = Image.new("1", (width, 7), 1)
    ImageDraw.Draw(image).line((0.3, 1.7, width - 1.2, 5.5), fill=0, width=3)
    ref_known = np.unpackbits(np.frombuffer(image.tobytes("raw", "1"), np.uint8).reshape(7, -1), axis=-1,
                              count=width)
    assert np.array_equal(_packed_hole(image), np.packbits(ref_known == 0, axis=-1))


def test_release_constants():
    assert RELEASE_SIZE == (1920, 1080) and RELEASE_NUM_FRAMES == 90


def test_reused_canvas_draws_the_same_frames():
    fresh = [np.asarray(im).copy() for im in iter_mask_images("fgs-l_fgm-h_fgd-l", mask_seed(9), num_frames=6)]
    reused = [np.asarray(im).copy()
              for im in iter_mask_images("fgs-l_fgm-h_fgd-l", mask_seed(9), num_frames=6, reuse=True)]
    assert all(np.array_equal(a, b) for a, b in zip(fresh, reused)) and len(reused) == 6


# Per-frame hashes of the release's masks, pinned inside tests/ (computed from ../shared/fixtures/original-masks), so
# a bare checkout without ../shared still checks bit identity with the release.
PINNED_HASHES = Path(__file__).with_name("release_mask_hashes.json")


def _pinned_masks() -> list[dict]:
    import json

    return json.loads(PINNED_HASHES.read_text(encoding="utf-8"))["masks"]


@pytest.mark.parametrize("ref", _pinned_masks(), ids=lambda r: f"{r['preset']}-{r['index']}")
def test_pinned_release_frame_hashes(ref):
    import hashlib

    assert ref["seed"] == mask_seed(ref["index"])
    t, h, w = ref["shape"]
    ours = render_mask_packed(ref["preset"], ref["seed"], size=(w, h), num_frames=t)
    got = [hashlib.sha256(ours[k].tobytes()).hexdigest() for k in range(t)]
    bad = [k for k in range(t) if got[k] != ref["frame_sha256"][k]]
    assert not bad, f"frames {bad[:10]} differ from the release's"
    assert len(set(got)) == t  # the mask moves: every frame is different


@pytest.mark.parametrize("name", NAMED_FIXTURES)
def test_pinned_hashes_are_the_fixtures(name):
    import hashlib

    preset, index, ref_packed, shape, seed = _load_fixture(name)
    ref = next(r for r in _pinned_masks() if (r["preset"], r["index"]) == (preset, index))
    assert ref["shape"] == list(shape) and ref["seed"] == seed
    assert ref["frame_sha256"] == [hashlib.sha256(ref_packed[k].tobytes()).hexdigest() for k in range(shape[0])]


# --------------------------------------------------------------------------- the fast training-mask path


def test_fast_path_follows_the_release_vertex_paths():
    """The Python-float physics of render_mask_scaled moves every vertex exactly as the release's generator."""
    from devil_dataset.core.masks import _vertex_states

    for k, preset in enumerate(PRESETS):
        seed = mask_seed(k)
        release = [(b, x.tolist(), y.tolist()) for b, x, y in _vertex_states(preset, seed, RELEASE_SIZE, 90)]
        fast = [(b, list(x), list(y)) for b, x, y in _vertex_states(preset, seed, RELEASE_SIZE, 90, python_floats=True)]
        assert fast == release, preset


def test_both_physics_paths_run_one_body():
    """The NumPy path (render_mask) and the Python-float path (render_mask_scaled) are one function body built for
    two numeric backends, not two hand copies."""
    from devil_dataset.core import masks

    assert masks._move.__code__ is masks._move_float.__code__
    assert masks._add_polar.__code__ is masks._add_polar_float.__code__
    assert masks._move is not masks._move_float


def test_render_mask_scaled_is_close_to_render_then_cover_crop():
    from devil_dataset.core.cover_crop import cover_crop_mask
    from devil_dataset.core.mask_stats import mask_stats
    from devil_dataset.core.masks import render_mask_scaled

    for k, preset in enumerate(PRESETS):
        ref = cover_crop_mask(render_mask(preset, mask_seed(k), num_frames=8), (832, 480))
        fast = render_mask_scaled(preset, mask_seed(k), (832, 480), num_frames=8)
        assert fast.shape == ref.shape and fast.dtype == bool
        assert np.mean(fast != ref) < 0.002  # edge pixels only
        a, b = mask_stats(ref), mask_stats(fast)
        assert abs(b.mean_area / a.mean_area - 1) < 0.03 and abs(b.centroid_speed - a.centroid_speed) < 2e-4


def test_render_mask_scaled_frames_reverse_and_window(monkeypatch):
    from devil_dataset.core import masks
    from devil_dataset.core.masks import render_mask_scaled

    preset, seed = "fgs-l_fgm-h_fgd-h", mask_seed(3)
    full = render_mask_scaled(preset, seed, (320, 180), num_frames=30)
    assert np.array_equal(render_mask_scaled(preset, seed, (320, 180), num_frames=30, frames=range(5, 9)), full[5:9])
    backwards = render_mask_scaled(preset, seed, (320, 180), num_frames=30, reverse=True, frames=range(4))
    assert np.array_equal(backwards, full[::-1][:4])
    window = render_mask_scaled(preset, seed, (320, 180), num_frames=30, window=(40, 20, 128, 96))
    assert window.shape == (30, 96, 128) and np.mean(window != full[:, 20:116, 40:168]) < 0.002
    monkeypatch.setattr(masks, "_shared_view", lambda image: None)  # Pillow without Arrow export: a copy per frame
    assert np.array_equal(render_mask_scaled(preset, seed, (320, 180), num_frames=30), full)
    with pytest.raises(ValueError, match="outside the mask's 30 frames"):
        render_mask_scaled(preset, seed, (320, 180), num_frames=30, frames=range(25, 31))
    assert render_mask_scaled(preset, seed, (320, 180), num_frames=30, frames=range(0)).shape == (0, 180, 320)
