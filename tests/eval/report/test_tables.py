"""Report tables with known numbers give exact strings; relative improvement; plots are written."""
from __future__ import annotations

import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.report import (
    relative_improvement,
    relative_improvement_markdown,
    relative_improvement_tsv,
    score_table,
    table1_markdown,
    table1_tsv,
    write_report,
)

# Paper Table 1-like numbers (CPNet on fg_displacement_high is the paper's reference).
DOCS = [
    {"method": "CPNet", "slice": "fg_displacement_high", "summary": {
        "psnr": 36.6201, "ssim": 0.98071, "lpips": 0.0273449, "pvcs": 0.14621, "fid": 4.8512, "vfid": 0.03671,
        "vfid_clips": 0.06219, "warp_error_mask": 0.000957, "pcons_psnr_mask": 40.3312}},
    {"method": "STTN", "slice": "fg_displacement_high", "summary": {
        "psnr": 35.1, "ssim": 0.9812, "lpips": 0.031, "pvcs": 0.15, "fid": 5.0, "vfid": 0.04, "vfid_clips": 0.07,
        "warp_error_mask": 0.001, "pcons_psnr_mask": 39.0}},
    {"method": "CPNet", "slice": "fg_displacement_low", "summary": {
        "psnr": 30.0, "ssim": 0.95, "lpips": 0.05, "pvcs": 0.2, "fid": 10.0, "vfid": 0.1, "vfid_clips": 0.12,
        "warp_error_mask": 0.002, "pcons_psnr_mask": 38.0}},
]

HEADER = ("| slice | method | PSNR ▲ | SSIM ▲ | LPIPS ▼ | PVCS ▼ | FID ▼ | VFID ▼ | VFID (clips) ▼ | "
          "Warp error (mask) ▼ | PCons ▲ |")


def test_table1_markdown_exact():
    expected = "\n".join([
        HEADER,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| fg_displacement_low | CPNet | 30.00 | 0.9500 | 0.050000 | 0.2000 | 10.00 | 0.1000 | 0.1200 | "
        "0.002000 | 38.00 |",
        "| fg_displacement_high | CPNet | **36.62** | 0.9807 | **0.027345** | **0.1462** | **4.85** | **0.0367** | "
        "**0.0622** | **0.000957** | **40.33** |",
        "| fg_displacement_high | STTN | 35.10 | **0.9812** | 0.031000 | 0.1500 | 5.00 | 0.0400 | 0.0700 | "
        "0.001000 | 39.00 |",
    ]) + "\n"
    assert table1_markdown(score_table(DOCS)) == expected


def test_table1_tsv_exact_and_key_selection():
    expected = (
        "slice\tmethod\tPSNR ▲\tLPIPS ▼\n"
        "fg_displacement_low\tCPNet\t30.00\t0.050000\n"
        "fg_displacement_high\tCPNet\t36.62\t0.027345\n"
        "fg_displacement_high\tSTTN\t35.10\t0.031000\n"
    )
    assert table1_tsv(score_table(DOCS), ["psnr", "lpips"]) == expected


def test_ties_are_not_bold_and_missing_values_are_blank():
    docs = [{"method": "A", "slice": "all", "summary": {"psnr": 30.001, "fid": 3.0}},
            {"method": "B", "slice": "all", "summary": {"psnr": 30.004}}]
    assert table1_markdown(score_table(docs)) == (
        "| slice | method | PSNR ▲ | FID ▼ |\n|---|---|---:|---:|\n| all | A | 30.00 | 3.00 |\n| all | B | 30.00 |  |\n"
    )


def test_relative_improvement_signs():
    ri = relative_improvement(score_table(DOCS))
    assert list(ri) == [("fg_displacement", "CPNet")]  # STTN has no low slice
    row = ri[("fg_displacement", "CPNet")]
    assert row["psnr"] == pytest.approx(2 * (36.6201 - 30.0) / (36.6201 + 30.0))  # symmetric relative change
    assert row["lpips"] == pytest.approx(-2 * (0.0273449 - 0.05) / (0.0273449 + 0.05))  # lower is better: negated
    assert relative_improvement_tsv(score_table(DOCS), ["psnr", "lpips"]) == (
        "attribute\tmethod\tPSNR\tLPIPS\nfg_displacement\tCPNet\t+19.87%\t+58.58%\n"
    )
    assert relative_improvement_markdown(score_table(DOCS), ["fid"]).endswith("| fg_displacement | CPNet | +69.34% |\n")


def test_duplicate_results_rejected():
    with pytest.raises(DevilError, match="CPNet on fg_displacement_high"):
        score_table(DOCS + DOCS[:1])


def test_write_report_files(tmp_path):
    written = write_report(score_table(DOCS), tmp_path, ["psnr", "lpips"])
    names = sorted(p.name for p in written)
    assert names == sorted([
        "table1.md", "table1.tsv", "table1_notes.md", "relative_improvement.md", "relative_improvement.tsv",
        "method_performance_psnr.png", "method_performance_lpips.png", "slice_difficulty_psnr.png",
        "slice_difficulty_lpips.png", "sensitivity_fg_displacement.png",
    ])
    for p in written:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 1000
    assert not list(tmp_path.glob(".tmp-*"))


# ------------------------------------------------------------------------------------------------ figures
def _grid_docs() -> list[dict]:
    """3 methods x 4 attribute slices x 5 videos, SSIM near 0.98-0.99 (differences a bar from zero would hide),
    PSNR, and LPIPS skipped (weights missing) as a results file records it."""
    import numpy as np

    rng = np.random.default_rng(0)
    docs = []
    for s in ("fg_size_low", "fg_size_high", "fg_motion_low", "fg_motion_high"):
        for i, m in enumerate(("A", "B", "C")):
            videos = {f"{s}-{c}": {"ssim": float(0.98 + 0.004 * i + rng.normal(0, 0.002)),
                                   "psnr": float(30 + i + rng.normal(0, 1))} for c in range(5)}
            summary = {k: sum(v[k] for v in videos.values()) / 5 for k in ("ssim", "psnr")}
            docs.append({"method": m, "slice": s, "summary": {**summary, "lpips": float("nan")}, "videos": videos,
                         "skipped": {"lpips": "alexnet.pth: not in the weights cache /w. It is needed by lpips."}})
    return docs


def _figures(docs):
    from devil_dataset.eval.report import plot_figures, video_intervals

    return list(plot_figures(score_table(docs), intervals=video_intervals(docs)))


def test_figures_show_only_computed_keys_and_no_empty_axes():
    figs = dict(_figures(_grid_docs()))
    assert sorted(figs) == sorted(["method_performance_psnr", "method_performance_ssim", "slice_difficulty_psnr",
                                   "slice_difficulty_ssim", "sensitivity_fg_size", "sensitivity_fg_motion"])
    for stem, fig in figs.items():
        for ax in fig.axes:
            assert ax.lines or ax.collections or ax.patches, f"{stem}: empty axes"
    assert len(figs["sensitivity_fg_size"].axes) == 2  # one panel per computed key, none left empty


def test_figures_text_fits_and_figures_fit_a_report_column():
    """No cut titles, labels or legends: every text box lies inside the figure; 660 px wide (a report column)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from devil_dataset.eval.report import PLOT_DPI, PLOT_WIDTH_IN

    for stem, fig in _figures(_grid_docs()):
        FigureCanvasAgg(fig)
        fig.set_dpi(PLOT_DPI)
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        w, h = fig.bbox.width, fig.bbox.height
        assert round(w) == round(PLOT_WIDTH_IN * PLOT_DPI) == 660
        boxes = [ax.get_tightbbox(r) for ax in fig.axes] + [lg.get_window_extent(r) for lg in fig.legends]
        if fig._suptitle is not None:
            boxes.append(fig._suptitle.get_window_extent(r))
        for b in boxes:
            assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= w + 1 and b.y1 <= h + 1, (stem, b, w, h)


def test_means_are_points_with_whiskers_on_a_zoomed_axis():
    """SSIM 0.98 vs 0.99 stays visible (axis not from zero); per-method whiskers are the standard error over
    videos of the results' intervals."""
    import math

    from matplotlib.container import ErrorbarContainer

    from devil_dataset.eval.report import video_intervals

    docs = _grid_docs()
    figs = dict(_figures(docs))
    ax = figs["method_performance_ssim"].axes[0]
    assert not ax.patches  # no bars
    assert ax.get_ylim()[0] > 0.95
    ax = figs["slice_difficulty_ssim"].axes[0]
    assert ax.get_ylim()[0] > 0.95
    conts = {c.get_label(): c for c in ax.containers if isinstance(c, ErrorbarContainer)}
    assert sorted(conts) == ["A", "B", "C", "mean over methods"]
    se = video_intervals(docs)[("B", "fg_size_low")]["ssim"]["se"]
    x = [t.get_text() for t in ax.get_xticklabels()].index("fg_size_low")
    segs = conts["B"].lines[2][0].get_segments()
    assert segs[x][1][1] - segs[x][0][1] == pytest.approx(2 * se)
    # the mean over methods' whisker: standard error across the three methods' means
    vals = [d["summary"]["ssim"] for d in docs if d["slice"] == "fg_size_low"]
    mean = sum(vals) / 3
    se_m = math.sqrt(sum((v - mean) ** 2 for v in vals) / 2 / 3)
    seg = conts["mean over methods"].lines[2][0].get_segments()[x]
    assert seg[1][1] - seg[0][1] == pytest.approx(2 * se_m)


def test_plots_are_deterministic(tmp_path):
    from devil_dataset.eval.report import video_intervals, write_plots

    docs = _grid_docs()
    a = write_plots(score_table(docs), tmp_path / "a", ["ssim"], intervals=video_intervals(docs))
    b = write_plots(score_table(docs), tmp_path / "b", ["ssim"], intervals=video_intervals(docs))
    assert len(a) == 4 and [p.name for p in a] == [p.name for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))


def test_skipped_metrics_named_with_their_reason():
    from devil_dataset.eval.report import skipped_line, skipped_metrics

    docs = _grid_docs()
    assert skipped_metrics(docs) == {"lpips": "alexnet.pth: not in the weights cache /w"}
    assert skipped_line(skipped_metrics(docs)) == "Not computed: LPIPS (alexnet.pth: not in the weights cache /w)."
    # a key computed by some document is not reported as skipped; one metric with two keys names both
    docs[0]["summary"]["lpips"] = 0.1
    docs[1]["skipped"] = {"vfid": "i3d.pt: missing"}
    assert skipped_metrics(docs) == {"vfid": "i3d.pt: missing", "vfid_clips": "i3d.pt: missing"}
    assert skipped_line({}) == ""
    assert "LPIPS" not in table1_markdown(score_table(_grid_docs()))  # no empty column


def test_relative_improvement_file_says_how_it_is_signed(tmp_path):
    written = write_report(score_table(DOCS), tmp_path, ["psnr", "lpips"], plots=False)
    text = next(p for p in written if p.name == "relative_improvement.md").read_text()
    assert text.startswith("Relative improvement between each attribute's low and high slice as the symmetric "
                           "relative change 2 (high - low) / (|high| + |low|)") and "sign is flipped" in text
    assert text.endswith("| fg_displacement | CPNet | +19.87% | +58.58% |\n")
