"""``devil diagnose --input-dir``: DEVIL's diagnosis of object removals without ground truth, on the procedure every
diagnosis follows (:mod:`devil_dataset.diagnosis.procedure`): inputs checked before anything is written, the cache
with its lines, values cached by content and scoring identity, a headline that says what could not be tested."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.diagnosis import removal
from devil_dataset.diagnosis.attributes import AttributeOptions
from devil_dataset.diagnosis.removal import RemovalInputs, diagnose_removals, labelling_layout
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.protocols.propainter.layout import list_davis_videos, read_davis_video
from devil_dataset.eval.protocols.prove.kernels import grey_mask
from devil_dataset.eval.protocols.prove.layout import list_prove_videos, read_frames

from ..eval.prove_data import tiny_dinov2_folder, write_varied_layout

OPTIONS = AttributeOptions(scoring_size=(96, 80), detector="orb")
IDENTITY = {"name": "seeded normal features"}


def _features(images):
    rng = np.random.default_rng(len(images))
    return np.stack([rng.normal(size=(i.shape[0] // 14, i.shape[1] // 14, 4)) for i in images])


def _diagnose(out: Path, inputs: Path, masks: Path, preds, cache: Path | str, **kw):
    return diagnose_removals(out, input_dir=inputs, mask_dir=masks, predictions=preds, options=OPTIONS,
                             cache_dir=cache, network=_features, network_identity=IDENTITY, progress=False, **kw)


@pytest.fixture(scope="module")
def six_videos(tmp_path_factory):
    """Six 6-frame removals of two methods, diagnosed once with a cache: (root, inputs, masks, preds, result,
    stderr). Six videos make tertile groups of 2; 6 frames give no camera or scene motion score."""
    root = tmp_path_factory.mktemp("removal6")
    inputs, masks, preds = write_varied_layout(root / "set", videos=6, frames=6)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        result = _diagnose(root / "out", inputs, masks, preds, root / "cache")
    return root, inputs, masks, preds, result, err.getvalue()


def _warm_copy(six_videos, tmp_path) -> Path:
    root = six_videos[0]
    shutil.copytree(root / "cache", tmp_path / "cache")
    return tmp_path / "cache"


def test_labelling_layout_is_the_input_with_thresholded_masks(tmp_path):
    inputs, masks, preds = write_varied_layout(tmp_path / "set", videos=2, frames=3)
    layout = list_prove_videos(inputs, preds["copy-fill"], masks)
    gt, mk = labelling_layout(layout.videos, tmp_path / "lab")
    [first, _] = list_davis_videos(gt, mk)
    frames, hole = read_davis_video(first, size=(96, 80))
    np.testing.assert_array_equal(frames, read_frames(inputs / "v00.mp4"))
    src = read_frames(masks / "v00.mp4")
    np.testing.assert_array_equal(hole, np.stack([grey_mask(m) > 127 for m in src]))  # PROVE's threshold
    assert hole.sum() > 0


def test_cli_errors(tmp_path, capsys):
    assert main(["diagnose", "--input-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "--input-dir needs --mask-dir" in capsys.readouterr().err


def test_removals_diagnosed_by_attribute(six_videos):
    _, _, _, _, result, _ = six_videos
    assert set(result.scores) == {"copy-fill", "noise-fill"}
    assert {k for v in result.scores["copy-fill"].values() for k in v} == {"rc_s", "rc_t"}
    assert {f.key for f in result.findings} == {"rc_s", "rc_t"}
    assert (six_videos[0] / "out" / "diagnosis.md").read_text().count("rc_t") > 2


def test_tiny_groups_say_no_significance_was_possible(six_videos):
    """Groups of 2 and 2: the permutation test cannot go below 2 / C(4, 2) = 0.333 (Holm over the two tested
    attributes: 0.667), so the headline says no significance was possible, not merely 'no significant difference'."""
    _, _, _, _, result, _ = six_videos
    tested = [f for f in result.findings if f.method == "copy-fill" and f.key == "rc_s"]
    assert tested and all((f.low["n"], f.high["n"]) == (2, 2) for f in tested)
    assert all(f.min_p_holm == pytest.approx(len(tested) * 2 / 6) for f in tested)
    for line in result.headline():
        assert "no significance was possible at alpha 0.05 for fg_size (groups of 2 and 2 pairs: the smallest " \
               f"attainable Holm p is {len(tested) * 2 / 6:.3g})" in line
        assert "no significant difference" not in line


def test_headline_names_attributes_without_scores(six_videos):
    """6-frame videos: no camera motion (10 frames needed) and no scene motion score for any video, said in the
    printed headline and in diagnosis.md."""
    root, _, _, _, result, _ = six_videos
    report = (root / "out" / "diagnosis.md").read_text()
    for line in [*result.headline(), report]:
        assert "camera_motion: no video has a score (camera motion needs at least 10 frames" in line
        assert "bg_scene_motion: no video has a score (scene motion needs a low-camera-motion segment" in line


def test_attributes_only_without_predictions(six_videos, tmp_path, capsys):
    """`--input-dir IN --mask-dir MASKS` without --predictions: the attributes of the test set, no scores."""
    _, inputs, masks, _, _, _ = six_videos
    code = main(["diagnose", "--input-dir", str(inputs), "--mask-dir", str(masks), "--out", str(tmp_path / "o"),
                 "--scoring-size", "96x80", "--detector", "orb", "--cache", str(_warm_copy(six_videos, tmp_path)),
                 "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.err
    rows = (tmp_path / "o" / "attributes.tsv").read_text().splitlines()[1:]
    assert [r.split("\t")[0] for r in rows] == [f"v{i:02d}" for i in range(6)]
    assert not (tmp_path / "o" / "diagnosis.md").exists()
    assert "camera_motion: no video has a score" in out.out and "computed 0, from cache 30" in out.out


def test_bad_results_named_together_before_anything_is_written(tmp_path, capsys):
    """Two unreadable results of two methods: one error naming both, exit 2, --out left empty."""
    inputs, masks, preds = write_varied_layout(tmp_path / "set", videos=2, frames=3)
    bad = [preds["copy-fill"] / "v00.mp4", preds["noise-fill"] / "v01.mp4"]
    for path in bad:
        path.write_bytes(b"not a video")
    code = main(["diagnose", "--input-dir", str(inputs), "--mask-dir", str(masks), "--out", str(tmp_path / "o"),
                 "--cache", "none", "--quiet", "--predictions", *(f"{m}={p}" for m, p in preds.items())])
    err = capsys.readouterr().err
    assert code == 2
    assert "2 bad inputs (nothing written)" in err and all(f"{p}: unreadable video" in err for p in bad)
    assert not (tmp_path / "o").exists() or list((tmp_path / "o").rglob("*")) == []


def test_read_only_cache_is_said(tmp_path, unwritable_folder, capsys):
    inputs, masks, preds = write_varied_layout(tmp_path / "set", videos=2, frames=3, methods=("copy-fill",))
    result = _diagnose(tmp_path / "out", inputs, masks, preds, unwritable_folder)
    err = capsys.readouterr().err
    assert f"--cache {unwritable_folder} cannot be written" in err and "without storing" in err
    assert set(result.scores) == {"copy-fill"} and list(unwritable_folder.iterdir()) == []


def _entries(cache: Path) -> dict[str, list[Path]]:
    kinds: dict[str, list[Path]] = {"value": [], "content": [], "values": []}
    for p in sorted(cache.rglob("*.json")):
        content = json.loads(p.read_text())["content"]
        kinds[next(k for k in kinds if k in content)].append(p)
    return kinds


def test_damaged_entries_are_named(six_videos, tmp_path, capsys):
    """A changed attribute value, content-index entry and metric-value entry are recomputed and each named."""
    cache = _warm_copy(six_videos, tmp_path)
    kinds = _entries(cache)
    damaged = [kinds["value"][0], kinds["content"][0], kinds["values"][0]]
    for path in damaged:
        text = path.read_text()
        at = next(i for i in range(text.index('"content"'), len(text)) if text[i].isdigit())
        path.write_text(text[:at] + ("7" if text[at] != "7" else "8") + text[at + 1:])  # one digit, still JSON
    _, inputs, masks, preds, cold, _ = six_videos
    result = _diagnose(tmp_path / "out", inputs, masks, preds, cache)
    err = capsys.readouterr().err
    assert result.scores == cold.scores and result.table.rows == cold.table.rows
    lines = [line for line in err.splitlines() if "damaged entr" in line and "recomputed and rewritten" in line]
    assert all(any(str(p) in line for line in lines) for p in damaged), err


def test_warm_run_scores_nothing(six_videos, tmp_path, monkeypatch):
    """RC-S / RC-T cached by content and scoring identity: a warm run scores no video; another parity or model is
    another identity."""
    cache = _warm_copy(six_videos, tmp_path)
    monkeypatch.setattr(removal, "score_prove_video", lambda *a, **k: pytest.fail("scored a video again"))
    _, inputs, masks, preds, cold, _ = six_videos
    result = _diagnose(tmp_path / "out", inputs, masks, preds, cache)
    assert result.scores == cold.scores and result.stats.metric_values == (12, 0)
    assert cold.stats.metric_values == (0, 12)

    def identity(parity: str = "release", network: dict | None = IDENTITY) -> str:
        return RemovalInputs(inputs, masks, preds, ("rc_s", "rc_t"), OPTIONS, EvalOptions(protocol="prove",
                             parity=parity), tmp_path, _features, network).scoring_identity()

    assert identity() != identity(parity="corrected") and identity() != identity(network={"name": "other"})
    assert identity(network=None) == ""  # an injected network without identity: nothing cached


@pytest.mark.slow  # loads a tiny random DINOv2 through transformers and scores every crop twice (~30 s on 2 cores)
def test_cli_warm_run_with_a_model_scores_nothing(tmp_path, capsys):
    inputs, masks, preds = write_varied_layout(tmp_path / "set", videos=2, frames=3, methods=("copy-fill",))
    argv = ["diagnose", "--input-dir", str(inputs), "--mask-dir", str(masks), "--scoring-size", "96x80",
            "--detector", "orb", "--cache", str(tmp_path / "cache"), "--quiet", "--dino-model",
            str(tiny_dinov2_folder(str(tmp_path))), "--predictions", f"copy-fill={preds['copy-fill']}"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert "metric values: 0 (method, pair) from cache, 2 scored" in capsys.readouterr().out
    assert main([*argv, "--out", str(tmp_path / "b")]) == 0
    assert "metric values: 2 (method, pair) from cache, 0 scored" in capsys.readouterr().out
    assert (tmp_path / "a" / "diagnosis.md").read_bytes() == (tmp_path / "b" / "diagnosis.md").read_bytes()


def _png_masks(masks: Path, root: Path, kind: str) -> Path:
    """The mask videos of ``masks`` (object > 127) as folders of PNG frames holding 0/255 (``binary``), 0/1
    (``zero_one``: DAVIS-style label PNGs) or palette indices 0/1 with DAVIS's palette (``palette``)."""
    from PIL import Image

    out = root / kind
    for video in sorted(masks.glob("*.mp4")):
        (out / video.stem).mkdir(parents=True)
        for t, m in enumerate(read_frames(video)):
            obj = (grey_mask(m) > 127).astype(np.uint8)
            if kind == "palette":
                image = Image.fromarray(obj, "P")
                image.putpalette([0, 0, 0, 128, 0, 0] + [0] * (3 * 254))
            else:
                image = Image.fromarray(obj * (255 if kind == "binary" else 1), "L")
            image.save(out / video.stem / f"{t:05d}.png")
    return out


@pytest.mark.parametrize(("kind", "said"), [("zero_one", "masks hold 0/1 (not 0/255) in 3 of 3 videos"),
                                            ("palette", "masks are palette PNGs (DAVIS annotations) in 3 of 3 videos")])
def test_masks_read_as_the_prove_protocol_reads_them(tmp_path, capsys, kind, said):
    """0/1 and palette masks label the same attributes as the same masks at 0/255 (PROVE's > 127 alone reads them as
    empty: no size, no motion), and the console and attributes.json say what was read."""
    inputs, masks, _ = write_varied_layout(tmp_path / "set", videos=3, frames=4, methods=())

    def attributes(mask_dir: Path, out: Path) -> dict:
        code = main(["diagnose", "--input-dir", str(inputs), "--mask-dir", str(mask_dir), "--out", str(out),
                     "--scoring-size", "96x80", "--detector", "orb", "--cache", "none", "--quiet"])
        assert code == 0
        return json.loads((out / "attributes.json").read_text())

    plain = attributes(_png_masks(masks, tmp_path, "binary"), tmp_path / "plain")
    assert "masks hold" not in capsys.readouterr().err and plain["options"]["mask_reading"] == {}
    read = attributes(_png_masks(masks, tmp_path, kind), tmp_path / kind)
    assert said in capsys.readouterr().err
    assert {v["mask_values"]["kind"] for v in read["options"]["mask_reading"].values()} == {kind}
    assert read["rows"] == plain["rows"]
    assert all(r["scores"]["fg_size"] > 0 for r in read["rows"])


def test_labelling_copy_of_an_older_run_is_written_again(tmp_path):
    """A labelling copy whose marker does not record the mask reading (written before masks were read as the prove
    protocol reads them) is written again, not reused."""
    inputs, masks, _ = write_varied_layout(tmp_path / "set", videos=1, frames=3, methods=())
    layout = list_prove_videos(inputs, inputs, masks)
    root = tmp_path / "lab"
    labelling_layout(layout.videos, root)
    first = (root / "MASKS" / "v00" / "00000.png").read_bytes()
    (root / "MASKS" / "v00" / "00000.png").write_bytes(b"stale")
    labelling_layout(layout.videos, root)  # a marker of this version: reused
    assert (root / "MASKS" / "v00" / "00000.png").read_bytes() == b"stale"
    (root / "GT" / "v00" / ".done").write_text("3\n")  # the older marker: the frame count alone
    labelling_layout(layout.videos, root)
    assert (root / "MASKS" / "v00" / "00000.png").read_bytes() == first
