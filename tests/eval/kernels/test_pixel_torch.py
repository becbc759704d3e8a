"""The torch path of PSNR, SSIM and PCons equals the numpy path; on the CPU here, on CUDA where present.

Tolerance: 1e-9 absolute (PSNR and PCons in dB, SSIM), with infinities and NaN in the same places. In practice the
values are the same floats (the elementwise float32 steps are the reference's, the float64 sums exact or ordered);
SSIM's are asserted so.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.kernels import pixel
from devil_dataset.eval.kernels import pixel_torch as pt
from devil_dataset.eval.metrics.metric import EvalOptions, VideoSample
from devil_dataset.eval.metrics.pixel import resolve_pixel_backend
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.scoring.one_pass import evaluate

ATOL = 1e-9  # the torch path equals the numpy path within 1e-9 (dB for PSNR-type values, SSIM units)

NO_CUDA = "no CUDA device: the GPU run of the same code (the CPU run above covers it in CI)"
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_CUDA))]
SIZES = [(64, 96), (37, 53)]


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One torch thread: the suite runs two workers on two cores, where more threads only wait for each other
    (the values do not depend on it: test_results_do_not_depend_on_the_thread_count)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _same(a, b, atol: float = ATOL) -> None:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert np.array_equal(np.isposinf(a), np.isposinf(b)) and np.array_equal(np.isneginf(a), np.isneginf(b))
    fin = np.isfinite(a)
    np.testing.assert_allclose(a[fin], b[fin], rtol=0, atol=atol)


def _texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A smooth colour texture with fine noise (uint8 [h, w, 3]): structure for SSIM and the PCons search."""
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([np.sin(xx / (3 + c) + c) * np.cos(yy / (4 + c)) for c in range(3)], -1) * 120 + 128
    return np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)


def _clip(h: int, w: int, t: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gt, pred, hole): a scene panning 2 px/frame, holes touching the border, an empty hole (frame 2), a full hole
    (frame 3, predicted far off), a hole predicted exactly (frame 4: PSNR inf), elsewhere a noisy prediction."""
    rng = np.random.default_rng(seed)
    canvas = _texture(rng, h, w + 2 * t)
    gt = np.stack([canvas[:, 2 * i : 2 * i + w] for i in range(t)])
    pred = np.clip(gt.astype(np.int16) + rng.integers(-40, 41, gt.shape), 0, 255).astype(np.uint8)
    hole = np.zeros((t, h, w), bool)
    hole[0, : h // 3, : w // 3] = True  # top-left corner
    hole[1, h // 2 :, w - w // 4 :] = True  # bottom-right corner
    hole[3:4] = True
    pred[3:4] = np.where(gt[3:4] < 128, 255, 0)
    hole[4:5, h // 4 : h // 2, w // 4 : w // 2] = True
    pred[4:5] = gt[4:5]
    hole[5:, 5 : h - 5, 0:7] = True  # left border
    return gt, pred, hole


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
def test_psnr_equals_numpy(device, size):
    gt, pred, hole = _clip(*size)
    comp = np.where(hole[..., None], pred, gt)
    for test in (comp, pred):
        _same(pt.psnr_frames(test, gt, device=device, batch_size=4), pixel.psnr_frames(test, gt))
    got = pt.psnr_frames(comp, gt, hole, device=device, batch_size=4)
    _same(got, pixel.psnr_frames(comp, gt, hole))
    assert np.isinf(got[[2, 4]]).all() and np.isfinite(got[[0, 1, 3, 5]]).all()
    # 64x96: the full hole of frame 3 sums more than the exact limit, so the whole frame is summed (not exact)
    total = np.sum(np.square(pixel._as_float(gt[3]) - pixel._as_float(comp[3])), dtype=np.float64)
    assert (total > pixel._EXACT_SUM_LIMIT) == (size == (64, 96))
    assert pt.psnr(comp, gt, hole, device=device) == pytest.approx(pixel.psnr(comp, gt, hole), abs=ATOL)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("mode", ["release", "standard"])
def test_ssim_equals_numpy(device, size, mode):
    gt, pred, hole = _clip(*size)
    comp = np.where(hole[..., None], pred, gt)
    for test in (comp, pred, gt):
        got = pt.ssim_frames(test, gt, mode, device=device, batch_size=4)
        assert got.tolist() == pixel.ssim_frames(test, gt, mode).tolist()  # the same floats on every device
    assert got.tolist() == [1.0] * len(gt)  # identical frames
    assert pt.ssim(comp, gt, mode, device=device) == pytest.approx(pixel.ssim(comp, gt, mode), abs=ATOL)


def test_ssim_modes_and_small_frames_fail_like_numpy():
    a = np.zeros((1, 6, 20, 3), np.uint8)
    for fn in (pixel.ssim_frames, pt.ssim_frames):
        with pytest.raises(ValueError):
            fn(a, a)
    b = np.zeros((1, 8, 8, 3), np.uint8)
    with pytest.raises(DevilError, match="unknown ssim mode 'relase'"):
        pt.ssim_frames(b, b, "relase")
    with pytest.raises(ValueError, match="shape mismatch"):
        pt.ssim_frames(b, a)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", [(40, 40), (37, 53), (9, 300)])
def test_window_means_are_the_numpy_floats(device, size):
    """SSIM's local means from exact window sums: torch's elementwise additions give OpenCV's box sums' floats."""
    from devil_dataset.eval.kernels import ssim_window

    rng = np.random.default_rng(1)
    gt = rng.integers(0, 256, (2, *size, 3), dtype=np.uint8)
    test = rng.integers(0, 256, gt.shape, dtype=np.uint8)
    got = pt.ssim_window_means(torch.from_numpy(gt).to(device), torch.from_numpy(test).to(device))
    for f in range(2):
        for g, e in zip(got, ssim_window.window_means(gt[f], test[f])):
            assert g.dtype == torch.float64 and np.array_equal(g[f].cpu().numpy(), e)


@pytest.mark.parametrize("device", DEVICES)
def test_pcons_equals_numpy(device):
    gt, pred, hole = _clip(64, 96, t=7)
    comp = np.where(hole[..., None], pred, gt)
    comp[6] = comp[5]  # an identical pair: the best patch matches exactly (inf); so does the clean pan of pair 4
    expected = pixel.pcons_psnr_mask_pairs(comp, hole)
    got = pt.pcons_psnr_mask_pairs(comp, hole, device=device, batch_size=3)
    _same(got, expected)
    assert np.isnan(got[2]) and np.isinf(got[[4, 5]]).all() and np.isfinite(got[[0, 1, 3]]).all()
    assert pt.pcons_psnr_mask(comp, hole, device=device) == pytest.approx(pixel.pcons_psnr_mask(comp, hole), abs=ATOL)
    assert np.isnan(pt.pcons_psnr_mask(comp, np.zeros_like(hole), device=device))
    assert pt.pcons_psnr_mask_pairs(comp[:1], hole[:1], device=device).shape == (0,)


def test_pcons_centroid_and_size_errors():
    h = np.zeros((3, 60, 70), bool)
    h[0, 0:3, 66:70] = True  # corner: clipped into the frame
    h[2, 10:31, 5:9] = True
    assert pt.hole_centroid_topleft(h).tolist() == pixel.hole_centroid_topleft(h, (60, 70)).tolist()
    small = np.zeros((2, 37, 53, 3), np.uint8)
    for fn in (pixel.pcons_psnr_mask_pairs, pt.pcons_psnr_mask_pairs):
        with pytest.raises(ValueError, match="smaller than the 50x50 PCons patch"):
            fn(small, np.ones((2, 37, 53), bool))


def test_results_do_not_depend_on_the_thread_count():
    """Per-frame sums reduce in a fixed order: 1 and 3 threads give the same floats (frames large enough for
    torch to split its work)."""
    gt, pred, hole = _clip(160, 240, t=3)
    comp = np.where(hole[..., None], pred, gt)
    threads = torch.get_num_threads()
    runs = []
    try:
        for n in (1, 3):
            torch.set_num_threads(n)
            runs.append((pt.psnr_frames(pred, gt), pt.ssim_frames(pred, gt), pt.pcons_psnr_mask_pairs(comp, hole)))
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(*runs):
        assert np.array_equal(a, b, equal_nan=True)


def test_resolve_pixel_backend():
    assert resolve_pixel_backend(EvalOptions()) == ("numpy", "cpu")
    assert resolve_pixel_backend(EvalOptions(pixel_backend="numpy", device="cuda")) == ("numpy", "cpu")
    assert resolve_pixel_backend(EvalOptions(pixel_backend="torch")) == ("torch", "cpu")
    auto = resolve_pixel_backend(EvalOptions(device="auto"))
    assert auto == (("torch", "cuda") if torch.cuda.is_available() else ("numpy", "cpu"))
    if not torch.cuda.is_available():
        with pytest.raises(DevilError, match="device 'cuda': no CUDA device"):
            resolve_pixel_backend(EvalOptions(pixel_backend="auto", device="cuda"))


def _videos() -> list[VideoSample]:
    """Two clips: clip0 has a frame without a hole (PSNR inf, clipped to clip1's value), clip1 is finite."""
    out = []
    for i, t in enumerate((5, 4)):
        gt, pred, hole = _clip(64, 96, t=t, seed=i)
        if i:
            hole[2, 10:30, 20:50] = True
        out.append(VideoSample(f"clip{i}", gt, pred, hole))
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_evaluate_with_the_torch_backend_equals_numpy(device):
    """Per-video values and summaries of PSNR, SSIM, PCons and the warp error agree; provenance names the
    backend and device."""
    names = ["psnr", "ssim", "pcons", "warp_error"]
    runs = {}
    for backend in ("numpy", "torch"):
        metrics, _ = build_metrics(names, EvalOptions(pixel_backend=backend, device=device, flow="dis",
                                                      batch_size=3))
        runs[backend] = evaluate(_videos(), metrics, progress=False)
    ref, got = runs["numpy"], runs["torch"]
    assert sorted(got.videos) == ["clip0", "clip1"] and got.clipped == ref.clipped
    assert ref.clipped["psnr"] == ["clip0"]
    for clip, row in ref.videos.items():
        assert sorted(got.videos[clip]) == sorted(row)
        for key, value in row.items():
            _same(got.videos[clip][key], value)
    for key, value in ref.summary.items():
        _same(got.summary[key], value)
    assert np.isfinite([ref.summary[k] for k in ("psnr", "ssim", "pcons_psnr_mask", "warp_error_mask")]).all()
    for name in names:
        assert got.metric_provenance[name]["pixel_backend"] == "torch"
        assert got.metric_provenance[name]["pixel_device"] == device
        assert ref.metric_provenance[name]["pixel_backend"] == "numpy"


def test_ssim_metric_on_torch_prepares_nothing():
    """On the torch backend the device filters the ground truth itself: prepare() shares nothing, and a reference
    prepared by the numpy backend is not needed (the same value)."""
    video = _videos()[0]
    torch_metric, = build_metrics(["ssim"], EvalOptions(pixel_backend="torch"))[0].values()
    numpy_metric, = build_metrics(["ssim"], EvalOptions())[0].values()
    assert torch_metric.prepare(video.gt) is None
    reference = numpy_metric.prepare(video.gt)
    expected = numpy_metric.update(video, reference)["ssim"]
    assert torch_metric.update(video, reference)["ssim"] == pytest.approx(expected, abs=ATOL)
    assert torch_metric.compute()["ssim"] == pytest.approx(expected, abs=ATOL)
