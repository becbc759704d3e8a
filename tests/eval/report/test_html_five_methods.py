"""A report of five methods with long names in headless Chromium: Table 1 fits a 1,400 px window
without a horizontal scroll (PCons not behind an inner scroll), every player gets a source and a poster and the
players low on the page load, every video is listed; a screenshot is saved in the test's folder."""
from __future__ import annotations

from pathlib import Path

import pytest

from devil_dataset.core.engines import get_engine
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.protocols.devil.run import evaluate_directory
from devil_dataset.eval.report.html import write_html_report
from devil_dataset.eval.stats.significance import compare_methods

from ..conftest import make_video, write_release_dirs
from .test_html import _wait, browser  # noqa: F401  (the module's Chromium fixture)

SLICES = ("fg_size_low", "fg_size_high")
METHODS = ("aligned-copyflow-propagation", "flow-propagation-v2", "navier-stokes-inpaint", "telea-baseline",
           "temporal-median-filter")


@pytest.fixture(scope="module")
def five_report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("html_five")
    docs = []
    for si, s in enumerate(SLICES):
        for mi, m in enumerate(METHODS):
            samples = []
            for c in range(2):
                gt, pred, hole = make_video(10 * si + c, t=6, h=64, w=80, noise=1 + mi + c)
                samples.append(VideoSample(f"{s}_clip{c}", gt, pred, hole))
            gt_dir, pred_dir = write_release_dirs(root / s / m, samples)
            docs.append(evaluate_directory(gt_dir, pred_dir, ["psnr", "ssim", "pcons", "warp_error"],
                                           EvalOptions(device="cpu", flow="dis"), method=m, slice_name=s,
                                           progress=False))
    return write_html_report(docs, root / "report", comparisons=compare_methods(docs), engine=get_engine("local"))


def test_five_methods_page_has_every_video_and_posters(five_report):
    text = five_report.read_text()
    assert text.count("<tr><td>fg_size_low</td><td>") == 5 * 2  # the per-video table: 5 methods x 2 clips
    assert (five_report.parent / "per_video.tsv").read_text().count("\n") == 1 + 5 * 2 * 2
    posters = [p for p in (five_report.parent / "clips").glob("*.jpg")]
    assert posters and len(posters) == len(list((five_report.parent / "clips").glob("*.mp4")))


def test_five_methods_report_in_chromium(browser, five_report, tmp_path):  # noqa: F811
    drv = browser
    drv.set_window_size(1400, 1000)
    drv.get(five_report.as_uri())
    page_w = drv.execute_script("return document.documentElement.clientWidth")
    tables = drv.execute_script(
        "return Array.from(document.querySelectorAll('table.t1')).map(t => [t.id, t.scrollWidth, "
        "t.parentElement.clientWidth, t.getBoundingClientRect().right, t.querySelector('thead').innerText])")
    assert len(tables) >= 2  # 5 methods x 4 metrics: split so that each table fits
    for tid, scroll_w, wrap_w, right, _ in tables:
        assert scroll_w <= wrap_w and right <= page_w, (tid, scroll_w, wrap_w, right, page_w)
    assert any("PCons" in head for *_, head in tables)  # PCons visible, not behind an inner scroll
    assert drv.execute_script("return document.documentElement.scrollWidth") <= page_w
    vids = drv.execute_script("return Array.from(document.querySelectorAll('video')).map(v => [v.currentSrc || "
                              "v.getAttribute('src'), v.getAttribute('poster')])")
    assert vids and all(src and poster for src, poster in vids)
    # the players at the bottom of the page: scrolled to, they load (no blank player)
    drv.execute_script("window.scrollTo(0, document.body.scrollHeight)")
    assert _wait(drv, "var v = Array.from(document.querySelectorAll('video')).slice(-12);"
                      "return v.every(x => x.readyState >= 2)", timeout=20), drv.execute_script(
        "return Array.from(document.querySelectorAll('video')).slice(-12).map(v => [v.readyState, v.networkState])")
    assert _wait(drv, "return Array.from(document.images).filter(i => i.closest('.plots')).every(i => i.complete "
                      "&& i.naturalWidth > 0)")
    errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    drv.execute_script("window.scrollTo(0, 0)")
    assert drv.save_screenshot(str(tmp_path / "five_methods_1400.png"))
    assert (tmp_path / "five_methods_1400.png").stat().st_size > 10_000
