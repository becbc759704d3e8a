"""The HTML diagnosis report: a tiny generated evaluation (2 methods x 2 slices x 2 clips), checked as files and,
where Debian's chromium and Selenium are present, in a real headless browser."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.core.engines import get_engine
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.protocols.devil.run import evaluate_directory
from devil_dataset.eval.report.html import error_map, pick_clips, write_clip_mp4, write_html_report
from devil_dataset.eval.stats.significance import compare_methods

from ..conftest import make_video, write_release_dirs

SLICES = ("fg_size_low", "fg_size_high")
METHODS = ("good", "noisy")


# What a results file records for a metric whose network weights are missing (evaluate.build_metrics).
LPIPS_SKIPPED = ("alexnet-owt-7be5be79.pth: not in the weights cache /cache/weights. It is needed by lpips. "
                 "On a connected machine run `devil weights download alexnet`")


def make_tiny_evaluation(root: Path) -> list[dict]:
    """Results documents of 2 methods on 2 slices (2 generated clips each; 'noisy' has 4x the noise); LPIPS was
    requested but skipped (weights missing), as on a machine without network weights."""
    docs = []
    for si, s in enumerate(SLICES):
        for mi, m in enumerate(METHODS):
            samples = []
            for c in range(2):
                gt, pred, hole = make_video(10 * si + c, t=6, h=48, w=64, noise=1 + 3 * mi + c)
                samples.append(VideoSample(f"{s}_clip{c}", gt, pred, hole))
            gt_dir, pred_dir = write_release_dirs(root / s / m, samples)
            doc = evaluate_directory(gt_dir, pred_dir, ["psnr", "ssim"], EvalOptions(device="cpu"),
                                     method=m, slice_name=s, progress=False)
            doc["summary"]["lpips"] = float("nan")
            doc["skipped"] = {"lpips": LPIPS_SKIPPED}
            docs.append(doc)
    return docs


@pytest.fixture(scope="module")
def tiny_report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("html_report")
    docs = make_tiny_evaluation(root / "eval")
    return write_html_report(docs, root / "report", comparisons=compare_methods(docs), engine=get_engine("local"))


def test_pick_clips_respects_direction():
    vids = {"a": {"lpips": 0.1}, "b": {"lpips": 0.3}, "c": {"lpips": 0.2}}
    assert pick_clips(vids, "lpips", 1) == (["b"], ["a"])  # LPIPS: lower is better
    assert pick_clips(vids, "psnr") == ([], [])


def test_error_map_gain_and_clip():
    gt = np.zeros((1, 1, 2, 3), np.uint8)
    pred = np.array([[[[10, 10, 10], [200, 200, 200]]]], np.uint8)
    assert error_map(gt, pred)[0, 0, :, 0].tolist() == [40, 255]


def test_clip_mp4_is_h264_baseline_with_all_frames(tmp_path):
    import av

    frames = make_video(0, t=7, h=47, w=63)[0]
    p = write_clip_mp4(frames, tmp_path / "c.mp4")
    with av.open(str(p)) as c:
        st = c.streams.video[0]
        assert st.codec_context.name == "h264" and st.codec_context.profile in ("Baseline", "Constrained Baseline")
        got = [f for f in c.decode(st)]
    assert len(got) == 7 and (got[0].width, got[0].height) == (64, 48)  # even size for yuv420p


def test_report_folder_is_self_contained(tiny_report):
    text = tiny_report.read_text()
    out = tiny_report.parent
    assert "http://" not in text and "https://" not in text  # no CDN
    srcs = re.findall(r'(?:src|href)="([^"]+)"', text)
    assert srcs and all((out / s).is_file() for s in srcs)
    vids = [s for s in srcs if s.endswith(".mp4")]
    # per slice: 2 clips (worst/best of each method, union) x (gt, masked, 2 x (output, error)) = 12 videos
    assert len(vids) == 2 * 2 * 6
    assert 'class="best"' in text and "PSNR ▲" in text and "fg_size_high" in text
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    assert size < 2_000_000


def test_report_with_two_jobs_writes_the_same_files(tmp_path, tiny_report):
    """Clips encoded in two worker processes (one slice per task) are the same files as in-process."""
    root = tiny_report.parent
    again = write_html_report(make_tiny_evaluation(tmp_path / "eval"), tmp_path / "report",
                              engine=get_engine("local", jobs=2))
    names = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(again.parent).as_posix() for p in again.parent.rglob("*") if p.is_file())
    clips = [n for n in names if n.startswith("clips/")]
    assert clips and all((root / n).read_bytes() == (again.parent / n).read_bytes() for n in clips)


def test_report_reuses_plots_drawn_for_the_same_table(tmp_path, tiny_report):
    """``plots_from`` (what write_report drew) fills plots/ with the same files, drawn once."""
    from devil_dataset.eval.report import score_table, write_report

    docs = make_tiny_evaluation(tmp_path / "eval")
    drawn = [p for p in write_report(score_table(docs), tmp_path / "tables") if p.suffix == ".png"]
    again = write_html_report(docs, tmp_path / "report", clips=False, plots_from=drawn, engine=get_engine("local"))
    plots = sorted((again.parent / "plots").iterdir())
    assert [p.name for p in plots] == sorted(p.name for p in (tiny_report.parent / "plots").iterdir())
    assert all(p.read_bytes() == (tmp_path / "tables" / p.name).read_bytes() for p in plots)
    page = again.read_text()
    assert all(f"plots/{p.name}" in page for p in plots)


def test_report_best_cell_is_the_better_method(tiny_report):
    text = tiny_report.read_text()
    row = re.search(r"<tr><td>fg_size_low</td>(.*?)</tr>", text, re.S).group(1)
    cells = re.findall(r'<td(?: class="(best|tied)")?[^>]*>([^<]*)(<sup>†</sup>)?<span class="se">±([^<]*)</span>'
                       r'</td>', row)
    # columns: PSNR good, PSNR noisy, SSIM good, SSIM noisy; the less noisy method wins both, and with 2 videos
    # no paired sign-flip test can separate them (smallest p = 2/4), so 'noisy' is marked as not different
    assert [c[0] for c in cells] == ["best", "tied", "best", "tied"]
    assert [bool(c[2]) for c in cells] == [False, True, False, True]  # the dagger, as in table1.md
    assert "† marks the methods not significantly different" in text
    assert ("with 2 videos and 1 method pair per slice and metric the smallest Holm-adjusted p a paired sign-flip "
            "test can give is 1 x 2/2^2 = 0.5 >= 0.05") in text


def test_report_cells_carry_the_per_slice_interval(tiny_report):
    """Each Table 1 cell: the mean, ± the standard error over the slice's videos, the interval in its title."""
    from devil_dataset.eval.report import fmt, video_intervals

    docs = make_tiny_evaluation(tiny_report.parent.parent / "eval")
    iv = video_intervals(docs)[("noisy", "fg_size_high")]["psnr"]
    text = tiny_report.read_text()
    row = re.search(r"<tr><td>fg_size_high</td>(.*?)</tr>", text, re.S).group(1)
    cell = re.findall(r'<td[^>]*title="([^"]*)"[^>]*>([^<]*)(?:<sup>†</sup>)?<span class="se">±([^<]*)</span>',
                      row)[1]
    assert cell[1] == fmt("psnr", iv["mean"]) and cell[2] == fmt("psnr", iv["se"])
    assert f"[{fmt('psnr', iv['ci'][0])}, {fmt('psnr', iv['ci'][1])}]" in cell[0] and "2 videos" in cell[0]


def test_report_marks_only_the_best_when_the_others_differ_significantly(tmp_path):
    docs = make_tiny_evaluation(tmp_path / "eval")
    comparisons = [{"slice": s, "metric": k, "a": "good", "b": "noisy", "n": 2, "mean_diff": 1.0, "ci": [0.5, 1.5],
                    "p": 0.001, "p_holm": 0.001} for s in SLICES for k in ("psnr", "ssim")]
    text = write_html_report(docs, tmp_path / "r", clips=False, plots=False, comparisons=comparisons,
                             engine=get_engine("local")).read_text()
    assert 'class="best"' in text and 'class="tied"' not in text
    comparisons = [dict(c, n=5) for c in comparisons]  # 2/2^5 = 0.0625: still no significance possible
    text = write_html_report(docs, tmp_path / "r1", clips=False, plots=False, comparisons=comparisons,
                             engine=get_engine("local")).read_text()
    assert "2/2^5 = 0.0625" in text
    comparisons = [dict(c, n=6) for c in comparisons]  # 2/2^6 < 0.05: no such note
    text = write_html_report(docs, tmp_path / "r3", clips=False, plots=False, comparisons=comparisons,
                             engine=get_engine("local")).read_text()
    assert 'id="power"' not in text
    # without comparisons: no significance marks and no legend for them
    text = write_html_report(docs, tmp_path / "r2", clips=False, plots=False,
                             engine=get_engine("local")).read_text()
    assert 'class="tied"' not in text and "† marks" not in text


def test_report_shows_only_computed_metrics_and_says_what_was_skipped(tiny_report):
    text = tiny_report.read_text()
    assert "LPIPS ▼" not in text and not list((tiny_report.parent / "plots").glob("*lpips*"))
    assert '<p class="skipped" id="skipped">Not computed: LPIPS (alexnet-owt-7be5be79.pth: not in the weights cache ' \
           '/cache/weights).</p>' in text
    assert "the sign is flipped, so a positive number always means the method does better" in text


# ------------------------------------------------------------------------------------------- real browser
def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def browser():
    found = _chromium()
    if found is None:
        print("skipping: no chromium/chromedriver (apt-get install chromium chromium-driver)")
        pytest.skip("no chromium/chromedriver found (apt-get install chromium chromium-driver)")
    selenium = pytest.importorskip("selenium", reason="selenium not installed (pip install .[test])")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    del selenium
    opts = webdriver.ChromeOptions()
    opts.binary_location = found[0]
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--autoplay-policy=no-user-gesture-required",
              "--window-size=1400,1000"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(found[1]), options=opts)
    drv.set_page_load_timeout(30)
    yield drv
    drv.quit()


def _wait(drv, script: str, timeout: float = 10.0):
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = drv.execute_script(script)
        if v:
            return v
        time.sleep(0.1)
    return drv.execute_script(script)


ARTIFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"


def test_report_in_chromium(browser, tiny_report):
    drv = browser
    drv.get(tiny_report.as_uri())
    n = drv.execute_script("return document.querySelectorAll('video').length")
    assert n == 24
    assert _wait(drv, "return Array.from(document.querySelectorAll('video')).every(v => v.readyState >= 2)"), \
        drv.execute_script("return Array.from(document.querySelectorAll('video')).map(v => [v.src, v.readyState, "
                           "v.error && v.error.code])")
    # play every group; every video element advances
    drv.execute_script("document.querySelectorAll('.group .play').forEach(b => b.click())")
    assert _wait(drv, "return Array.from(document.querySelectorAll('video')).every(v => v.currentTime > 0.05)")
    drv.execute_script("document.querySelectorAll('video').forEach(v => { v.pause(); v.currentTime = 0.05; })")
    # frame stepping: pause + next frame puts all videos on frame 2
    drv.execute_script("var g = document.querySelectorAll('.group')[1]; g.querySelector('.next').click();")
    assert _wait(drv, "var g = document.querySelectorAll('.group')[1];"
                      "return g.querySelector('.pos').textContent.startsWith('frame 2')")
    # sorting: click the 'good' PSNR column twice (asc, then desc) and read the order
    def column(col):
        return drv.execute_script(f"return Array.from(document.querySelectorAll('#table1 tbody tr'))"
                                  f".map(r => parseFloat(r.cells[{col}].dataset.value))")
    drv.execute_script("document.querySelector('#table1 th[data-col=\"1\"]').click()")
    asc = column(1)
    assert asc == sorted(asc)
    drv.execute_script("document.querySelector('#table1 th[data-col=\"1\"]').click()")
    assert column(1) == sorted(asc, reverse=True)
    errors = [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert drv.save_screenshot(str(ARTIFACTS / "html_report.png"))


def test_report_reads_well_at_1400px(browser, tiny_report):
    """What a reader sees on a 1400 px window: Table 1 and every figure within the page, figures drawn (no broken
    or empty image) and shown at least at 80 % of their size, the skipped-metrics line present."""
    drv = browser
    drv.set_window_size(1400, 1000)
    drv.get(tiny_report.as_uri())
    assert _wait(drv, "return Array.from(document.images).every(i => i.complete)")
    page_w = drv.execute_script("return document.documentElement.clientWidth")
    assert 1300 < page_w <= 1400
    t1 = drv.execute_script("var t = document.getElementById('table1'), w = t.parentElement;"
                            "return [t.scrollWidth, w.clientWidth, t.getBoundingClientRect().right]")
    assert t1[0] <= t1[1] and t1[2] <= page_w, t1  # all of Table 1's columns visible, no horizontal scroll
    assert drv.execute_script("return document.documentElement.scrollWidth") <= page_w
    imgs = drv.execute_script("return Array.from(document.querySelectorAll('.plots img')).map(i => [i.getAttribute"
                              "('src'), i.naturalWidth, i.clientWidth, i.getBoundingClientRect().right])")
    assert len(imgs) == 2 * 2 + 1  # psnr and ssim: performance + difficulty each; the fg_size sensitivity
    for src, natural, shown, right in imgs:
        assert natural > 0 and shown >= 0.8 * natural and right <= page_w, (src, natural, shown, right)
    skipped = drv.execute_script("var p = document.getElementById('skipped'); return p && p.innerText")
    assert skipped and skipped.startswith("Not computed: LPIPS")
    assert drv.execute_script("return document.getElementById('ri-sign').innerText").startswith("Relative")
    shot = drv.get_screenshot_as_png()
    (ARTIFACTS / "html_report_1400.png").parent.mkdir(parents=True, exist_ok=True)
    drv.set_window_size(1400, 3000)
    drv.execute_script("window.scrollTo(0, 0)")
    (ARTIFACTS / "html_report_1400.png").write_bytes(shot)
    assert drv.save_screenshot(str(ARTIFACTS / "html_report_1400_tall.png"))
