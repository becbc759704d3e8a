"""Clipped infinite values marked everywhere and never winning, results scored differently refused or
marked, the significance floor said in every table, the relative change bounded, five methods readable."""
from __future__ import annotations

import math

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.kernels.pixel import one_grey_level_psnr
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.pixel import PConsMetric, PSNRMetric
from devil_dataset.eval.report import score_table, table1_markdown, table1_tsv, write_report
from devil_dataset.eval.report.caveats import Caveats, check_scoring, clipped_counts, significance_floor_note
from devil_dataset.eval.report.plots import plot_figures
from devil_dataset.eval.report.tables import per_video_rows, relative_improvement, relative_improvement_markdown


def _doc(method, slice_name, values, key="pcons_psnr_mask", clipped=(), parity="release"):
    videos = {f"c{i}": {key: float(v)} for i, v in enumerate(values)}
    return {"method": method, "slice": slice_name, "num_videos": len(values), "videos": videos,
            "summary": {key: float(np.mean(values))}, "clipped": {key: list(clipped)} if clipped else {},
            "provenance": {"options": {"parity": parity}, "metrics": {"pcons": {"clip": "[0, max finite] per video"}}}}


# The case: 4 of 5 PCons values infinite, clipped to the one finite value (37.74 ± 0.00), against a method
# with no clipped video.
CLIPPED = [_doc("mine", "fg_size_low", [37.74] * 5, clipped=["c1", "c2", "c3", "c4"]),
           _doc("telea", "fg_size_low", [30.0, 31.0, 29.0, 32.0, 30.5]),
           _doc("mine", "fg_size_high", [30.0, 31.0, 29.0, 33.0, 30.0]),
           _doc("telea", "fg_size_high", [28.0, 27.0, 29.0, 26.0, 28.5])]


def test_clipped_cells_are_marked_in_every_table_and_never_win(tmp_path):
    table, caveats = score_table(CLIPPED), Caveats(clipped_counts(CLIPPED))
    assert caveats.clipped == {("mine", "fg_size_low"): {"pcons_psnr_mask": 4}}
    md = table1_markdown(table, caveats=caveats)
    assert "| fg_size_low | mine | 37.74 \u221e4 |" in md and "| fg_size_low | telea | 30.50 |" in md  # no bold
    assert "| fg_size_high | mine | **30.60** |" in md  # a slice without clipped videos keeps its best
    assert "\u221en: n of the cell's videos had an infinite value" in md and "none of its cells is marked best" in md
    tsv = table1_tsv(table, caveats=caveats).splitlines()
    assert tsv[0].split("\t") == ["slice", "method", "PCons \u25b2", "PCons \u25b2 clipped videos"]
    assert tsv[1].split("\t") == ["fg_size_low", "mine", "37.74", "4"]
    written = {p.name: p for p in write_report(table, tmp_path, caveats=caveats, docs=CLIPPED)}
    assert "\u221en:" in written["table1_notes.md"].read_text()
    assert "37.74 \u221e" in written["per_video.tsv"].read_text()  # the clipped videos, one by one
    # figures: the method-performance value and the sensitivity label carry the count
    texts = {stem: [t.get_text() for ax in fig.axes for t in ax.texts + ax.get_yticklabels()] + [fig._suptitle and
                                                                                               fig._suptitle.get_text()]
             for stem, fig in plot_figures(table, caveats=caveats)}
    assert any("\u221e4" in t for t in texts["method_performance_pcons_psnr_mask"])
    assert any("mine" in t and "\u221e4" in t for t in texts["sensitivity_fg_size"])


def test_without_caveats_the_old_tables_are_unchanged():
    table = score_table(CLIPPED)
    assert "**37.74**" in table1_markdown(table)  # what the release's rule alone gives: a silent winner


def test_corrected_parity_caps_each_frame_independently_of_the_other_videos():
    """release: an infinite PSNR is clipped to the slice's largest finite value (it changes with the other videos);
    corrected: each identical frame is capped at the PSNR of a one-grey-level error, a value of the frame size."""
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 256, (3, 60, 64, 3), dtype=np.uint8)
    hole = np.zeros((3, 60, 64), bool)
    hole[:, 20:30, 20:30] = True
    perfect = VideoSample("a", gt, gt.copy(), hole)
    worse = gt.copy()
    worse[:, 20:30, 20:30] = 0
    other = VideoSample("b", gt, worse, hole)
    cap = one_grey_level_psnr(60 * 64 * 3)
    assert cap == pytest.approx(10 * math.log10(60 * 64 * 3 * 255 ** 2))
    corrected = EvalOptions(parity="corrected")
    assert corrected.psnr_cap == "one_grey_level" and EvalOptions().psnr_cap == "slice_max"
    alone = PSNRMetric(corrected)
    assert alone.update(perfect) == {"psnr": pytest.approx(cap)}
    both = PSNRMetric(corrected)
    both.update(perfect), both.update(other)
    assert both.compute()["psnr"] == pytest.approx((cap + PSNRMetric(corrected).update(other)["psnr"]) / 2)
    release = PSNRMetric(EvalOptions())
    release.update(perfect), release.update(other)
    assert release.compute()["psnr"] == pytest.approx(release.values["psnr"][1])  # clipped to the other video's
    pcons = PConsMetric(corrected).update(VideoSample("a", gt, gt, hole))
    assert math.isfinite(pcons["pcons_psnr_mask"]) or math.isnan(pcons["pcons_psnr_mask"])
    static = np.repeat(gt[:1], 3, axis=0)  # identical consecutive frames: every PCons pair infinite
    assert PConsMetric(corrected).update(VideoSample("s", static, static, hole)) == {
        "pcons_psnr_mask": pytest.approx(one_grey_level_psnr(50 * 50 * 3))}
    assert PSNRMetric(corrected).provenance()["clip"] != PSNRMetric(EvalOptions()).provenance()["clip"]


def test_mixed_scoring_refused_with_files_and_fields_or_marked():
    docs = [_doc("telea", "fg_size_low", [30.0, 31.0]), _doc("mine", "fg_size_low", [33.0, 34.0], parity="corrected")]
    with pytest.raises(DevilError) as err:
        check_scoring(docs, ["base/telea.json", "mine.json"])
    text = str(err.value)
    assert "parity: \"release\" in base/telea.json; \"corrected\" in mine.json" in text and "--allow-mixed" in text
    mixed = check_scoring(docs, allow_mixed=True)
    assert mixed == {("telea", "fg_size_low"): 'parity "release" (others "corrected")'} or \
        mixed == {("mine", "fg_size_low"): 'parity "corrected" (others "release")'}
    md = table1_markdown(score_table(docs), caveats=Caveats(mixed=mixed))
    assert "\u00a7" in md and "**" not in md.split("\n\n")[0].split("\n")[2 + (0 if ("telea", "fg_size_low") in mixed
                                                                                 else 1)]
    assert "scored differently from the other results" in md
    assert check_scoring(docs[:1] * 2) == {}
    # a metric computed in only one document is no conflict; pixel_backend (where it ran) is no conflict either
    a, b = _doc("x", "s", [1.0]), _doc("y", "s", [1.0])
    a["provenance"]["metrics"]["ssim"] = {"mode": "release", "pixel_backend": "numpy"}
    b["provenance"]["metrics"]["pcons"]["pixel_backend"] = "torch"
    assert check_scoring([a, b]) == {}


def test_significance_floor_in_every_table(tmp_path):
    from devil_dataset.eval.report.comparisons import significance

    rows, iv = significance(CLIPPED)
    note = significance_floor_note(rows)
    assert "with 5 videos and 1 method pair per slice and metric" in note and "2/2^5 = 0.0625 >= 0.05" in note
    md = table1_markdown(score_table(CLIPPED), comparisons=rows, uncertainty=iv)
    assert note in md
    write_report(score_table(CLIPPED), tmp_path, comparisons=rows, intervals=iv, plots=False)
    assert note in (tmp_path / "table1_notes.md").read_text()  # beside the TSV
    six = [_doc(m, "s", v) for m, v in (("a", [1.0, 2, 3, 4, 5, 6]), ("b", [0.0] * 6))]
    assert significance_floor_note(significance(six)[0]) == ""  # 2/64 < 0.05: reachable


def test_relative_change_stays_readable_near_zero():
    """A warp error of 0.0003 -> 0.0136 gave -4441.67% as (hi - lo) / lo; the symmetric change is bounded."""
    t = {("m", "fg_size_low"): {"warp_error_mask": 0.0003}, ("m", "fg_size_high"): {"warp_error_mask": 0.0136}}
    r = relative_improvement(t)[("fg_size", "m")]["warp_error_mask"]
    assert r == pytest.approx(-2 * (0.0136 - 0.0003) / (0.0136 + 0.0003)) and -2 <= r <= 2
    assert "-191.37%" in relative_improvement_markdown(t)
    fig = dict(plot_figures(t))["sensitivity_fg_size"]
    assert "2(hi\u2212lo)/(|hi|+|lo|)" in fig._suptitle.get_text()


def test_findings_name_only_computed_metrics():
    from devil_dataset.eval.report.findings import check_findings, findings_markdown

    t = {("telea", "fg_size_low"): {"psnr": 30.0, "lpips": float("nan")},
         ("telea", "fg_size_high"): {"psnr": 25.0, "lpips": float("nan")}}
    text = findings_markdown(check_findings(t))
    assert "lpips" not in text.lower() and "(psnr)" in text
    empty = findings_markdown(check_findings({("telea", "fg_size_low"): {"warp_error_mask": 1.0}}))
    assert "psnr" not in empty and "ssim" not in empty


def test_per_video_rows_list_every_video():
    header, rows = per_video_rows(CLIPPED)
    assert header == ["slice", "method", "clip", "PCons \u25b2"] and len(rows) == 20
    assert [r[:3] for r in rows[:2]] == [["fg_size_low", "mine", "c0"], ["fg_size_low", "mine", "c1"]]
    assert rows[1][3] == "37.74 \u221e" and rows[0][3] == "37.74"


def test_five_long_method_names_do_not_overlap_on_the_x_axis():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    names = ["aligned-copyflow-propagation", "flow-propagation-v2", "navier-stokes-inpaint", "telea-baseline",
             "temporal-median-filter"]
    t = {(m, s): {"psnr": 30.0 + i, "ssim": 0.9} for i, m in enumerate(names) for s in ("fg_size_low", "fg_size_high")}
    for stem, fig in plot_figures(t):
        if not stem.startswith("method_performance"):
            continue
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        boxes = [lbl.get_window_extent(canvas.get_renderer()) for lbl in fig.axes[0].get_xticklabels()]
        assert len(boxes) == 5
        for i in range(4):
            assert not boxes[i].overlaps(boxes[i + 1]), (stem, i)
        width, _ = fig.get_size_inches() * fig.dpi
        assert all(0 <= b.x0 and b.x1 <= width for b in boxes)


def test_relative_change_of_clipped_cells_is_marked():
    table, caveats = score_table(CLIPPED), Caveats(clipped_counts(CLIPPED))
    md = relative_improvement_markdown(table, caveats=caveats)
    assert "| fg_size | mine | " in md and " \u221e4 |" in md.split("| fg_size | mine |")[1].split("\n")[0]
    from devil_dataset.eval.report.tables import relative_improvement_tsv

    tsv = relative_improvement_tsv(table, caveats=caveats).splitlines()
    assert tsv[0].endswith("\tclipped videos") and tsv[1].split("\t")[-1] == "PCons 4"


def test_html_marks_clipped_cells_and_lists_every_video(tmp_path):
    import re

    from devil_dataset.core.engines import get_engine
    from devil_dataset.eval.report.comparisons import significance
    from devil_dataset.eval.report.html import write_html_report

    rows, _ = significance(CLIPPED)
    index = write_html_report(CLIPPED, tmp_path, clips=False, plots=False, comparisons=rows,
                              caveats=Caveats(clipped_counts(CLIPPED)), engine=get_engine("local"))
    text = index.read_text()
    low = re.search(r"<tr><td>fg_size_low</td>(.*?)</tr>", text, re.S).group(1)
    assert '<sup class="clip">\u221e4</sup>' in low and 'class="best"' not in low  # marked, and nobody wins
    high = re.search(r"<tr><td>fg_size_high</td>(.*?)</tr>", text, re.S).group(1)
    assert 'class="best"' in high and "\u221e" not in high
    assert 'id="caveats"' in text and "none of its cells is marked best" in text
    assert 'id="power"' in text and "2/2^5 = 0.0625" in text
    assert text.count("<tr><td>fg_size_low</td><td>mine</td>") == 5  # every video of the per-video table
    assert (tmp_path / "per_video.tsv").read_text().count("\u221e") == 4
