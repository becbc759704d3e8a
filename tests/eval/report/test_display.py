"""Display: figures' titles with the ∞n clause fit the figure, groups of one video print no interval (and
say why), counts of one are singular, E_warp keeps its significant digits."""
from __future__ import annotations

import numpy as np

from devil_dataset.eval.report import PLOT_DPI, plot_figures, score_table, video_intervals
from devil_dataset.eval.report.caveats import Caveats, clipped_counts, significance_floor_note
from devil_dataset.eval.report.comparisons import compare_text, power_note, significance


def _clipped_docs() -> list[dict]:
    rng = np.random.default_rng(1)
    docs = []
    for s in ("fg_size_low", "fg_size_high", "fg_motion_low", "fg_motion_high"):
        for i, m in enumerate(("aligned-copy-with-a-long-name", "flow-propagation-variant", "telea")):
            videos = {f"{s}-{c}": {"pcons_psnr_mask": float(30 + i + rng.normal(0, 1)),
                                   "psnr": float(30 + i + rng.normal(0, 1))} for c in range(5)}
            summary = {k: sum(v[k] for v in videos.values()) / 5 for k in ("pcons_psnr_mask", "psnr")}
            docs.append({"method": m, "slice": s, "summary": summary, "videos": videos,
                         "clipped": {"pcons_psnr_mask": [f"{s}-0"], "psnr": [f"{s}-1"]}})
    return docs


def test_titles_with_the_clipped_clause_fit_the_figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    docs = _clipped_docs()
    figures = list(plot_figures(score_table(docs), intervals=video_intervals(docs),
                                caveats=Caveats(clipped_counts(docs))))
    assert len(figures) == 6
    for stem, fig in figures:
        FigureCanvasAgg(fig)
        fig.set_dpi(PLOT_DPI)
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        w, h = fig.bbox.width, fig.bbox.height
        titles = [ax.title for ax in fig.axes] + ([fig._suptitle] if fig._suptitle is not None else [])
        assert any("\u221e" in t.get_text() or "clipped" in t.get_text() for t in titles), stem
        for t in titles:
            b = t.get_window_extent(r)
            assert b.x0 >= -1 and b.x1 <= w + 1 and b.y1 <= h + 1, (stem, t.get_text(), b, w)
        for ax in fig.axes:
            b = ax.get_tightbbox(r)
            assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= w + 1 and b.y1 <= h + 1, (stem, b, w, h)


def test_counts_of_one_are_singular():
    one = [{"method": m, "slice": "fg_size_low", "videos": {"c0": {"psnr": v}}, "summary": {"psnr": v}}
           for m, v in (("a", 30.0), ("b", 31.0))]
    rows, _ = significance(one)
    assert "with 1 video and 1 method pair" in significance_floor_note(rows)
    text = compare_text(rows, "a", "b")
    assert "1 videos" not in text and "with 1 video the smallest" in text
    assert power_note({"fg_size_low": 1}).startswith("note: with 1 video per slice")


def test_a_group_of_one_video_has_no_interval_and_says_why():
    from devil_dataset.diagnosis.report import group_cell

    one = {"mean": 30.0, "ci": [float("nan"), float("nan")], "n": 1}
    assert group_cell("psnr", one) == "30.00 (n=1: no interval from one value)"
    assert "[, ]" not in group_cell("psnr", one)
    assert group_cell("ewarp", {"mean": 0.000512, "ci": [0.0004, 0.0006], "n": 4}) == \
        "0.0005120 [0.0004000, 0.0006000] (n=4)"


def test_a_config_without_predictions_is_noted_once(tmp_path):
    """'no predictions for config all' was printed once per method: one note per config names them all."""
    from devil_dataset.diagnosis.pairs import Pair
    from devil_dataset.diagnosis.scores import dataset_scores

    preds = {m: tmp_path / m for m in ("a", "b", "c", "d")}
    for folder in preds.values():
        folder.mkdir()
    pairs = [Pair("v0", "m0", None, ("fg_size_low",)), Pair("v1", "m1", None, ("fg_size_high",))]  # type: ignore
    _, notes = dataset_scores(tmp_path / "dataset", pairs, preds)
    assert len(notes) == 2 and sum("config fg_size_high" in n for n in notes) == 1
    assert notes[1].startswith("no predictions for config fg_size_high: a (") and "d (" in notes[1]


def _scored_with_an_empty_mask(method: str, seed: int) -> dict:
    """Three videos scored for real, the last with an empty mask (PSNR infinite, SSIM 1.0)."""
    from devil_dataset.eval import Evaluator

    rng = np.random.default_rng(seed)
    ev = Evaluator(["psnr", "ssim"])
    for i in range(3):
        gt = rng.integers(0, 256, (3, 32, 32, 3), dtype=np.uint8)
        hole = np.zeros((3, 32, 32), bool)
        if i < 2:
            hole[:, 8:20, 8:20] = True
        pred = np.clip(gt.astype(int) + rng.integers(-40, 40, gt.shape), 0, 255).astype(np.uint8)
        ev.update(pred, gt, hole, clip_id=f"clip{i}")
    return ev.results(method, "fg_size_low")


def test_a_video_with_an_empty_mask_is_named_and_marked(tmp_path, capsys):
    """The empty-mask video raised the mean SSIM without a word: the console names it, Table 1 marks the
    cells whose mean holds it (∅n) and its notes name it."""
    from devil_dataset.cli import main
    from devil_dataset.cli.evaluate import _print_summary
    from devil_dataset.eval.scoring.results import write_results

    doc = _scored_with_an_empty_mask("mine", 0)
    assert doc["videos"]["clip2"]["ssim"] == 1.0 and "clip2" in doc["clipped"]["psnr"]
    _print_summary(doc)
    out = capsys.readouterr().out
    assert "mine on fg_size_low: video clip2 identical to the ground truth in every pixel (an empty mask?)" in out
    other = _scored_with_an_empty_mask("telea", 1)
    paths = [write_results(tmp_path / f"{d['method']}.json", d) for d in (doc, other)]
    assert main(["report", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("| fg_size_low | mine |"))
    assert row.count("\u22051") == 2  # PSNR and SSIM cells
    assert "\u2205n: n of the cell's videos were scored identical to the ground truth" in out
    assert "mine on fg_size_low: clip2" in out
