"""Side by side with the release's own metric code: PSNR, SSIM, PCons, warp error on the same videos.

    python benchmarks/release_metrics.py --release-repo PATH [--quick] [--videos N] [--frames T] [--size W H]

``PATH`` is a checkout of the release, MichiganCOG/devil at commit 95a7a1e with its evaluation submodule
(MichiganCOG/video-inpainting-evaluation, pinned at d339a12) initialised, or a checkout of that submodule alone.
Nothing of it is copied here: its metric computers are imported from ``PATH`` at run time (see "Shims" below for
the few missing pieces bridged). Without ``--release-repo`` the script says how to get it and exits 2.

Writes generated videos (textured panning scenes with a drifting elliptic hole, ``eval_engine.make_clip``) in the
release's layout (``frame_%04d_gt.png`` + ``frame_%04d_mask.png`` per video, ``frame_%04d_pred.png`` per method)
and two methods' predictions (noise of two strengths inside the hole), then times, in this invocation:

* the release, method A: its ground-truth features for the warp error as ``compute_flow_occlusion.py`` makes them
  (forward and backward flow per pair, ``detect_occlusion``, ``.flo`` + occlusion PNG written), with the DIS flow
  of ``devil_dataset.core.flow.dis_flow`` in place of FlowNet2 so that both sides see the same flows; then its
  four metric computers (``PSNRComputer``, ``SSIMComputer``, ``PConsPSNRMaskComputer``, ``WarpErrorMaskComputer``:
  the metrics of its results table) run one after the other in this process;
* the release, method B: the four computers again, reading the features of A (the release stores them per split);
* ``devil evaluate``'s path (``evaluate_dataset``, ground truth and masks decoded from the same PNGs inside the
  timing): method A without a cache, method A with an empty ``GroundTruthCache`` (cold), method B with the cache
  the cold run filled (warm).

It prints each side's per-video values with the largest difference per metric (exit status 1 when one exceeds
:data:`EQUAL_REL_TOL`, or when devil's values with and without the cache differ), and the ratios release / devil
(cold and warm; the goal: 2.7x cold, at least 10x warm), with the CPU model. Default size:
2 videos x 45 frames at 832x480 (a few minutes on a small CPU); ``--quick``: 2 videos x 10 frames at
416x240.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.flow import dis_flow  # noqa: E402
from devil_dataset.core.release_format import (  # noqa: E402
    read_frame_pngs,
    read_mask_pngs,
    write_frame_pngs,
    write_mask_pngs,
)
from devil_dataset.eval.metrics.metric import EvalOptions  # noqa: E402
from devil_dataset.eval.scoring.evaluate import evaluate_dataset  # noqa: E402
from devil_dataset.eval.scoring.gt_cache import GroundTruthCache  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_engine import make_clip, timed  # noqa: E402  (the engine benchmark's clips and timer)

#: The release this package cites and its evaluation submodule's pinned commit (``git ls-tree 95a7a1e``).
RELEASE_URL = "https://github.com/MichiganCOG/devil.git"
RELEASE_COMMIT = "95a7a1e"
EVAL_SUBMODULE = "video-inpainting-evaluation"
EVAL_URL = "https://github.com/MichiganCOG/video-inpainting-evaluation.git"
EVAL_COMMIT = "d339a12"
GET_RELEASE = (f"  git clone {RELEASE_URL} devil && cd devil && git checkout {RELEASE_COMMIT} \\\n"
               f"    && git submodule update --init {EVAL_SUBMODULE}   # {EVAL_URL} at {EVAL_COMMIT}\n"
               "then run with --release-repo devil (or with the path of the video-inpainting-evaluation checkout)")

#: The side-by-side: 2 videos x 45 frames at 832x480 (DEVIL's scoring size).
DEFAULT_VIDEOS, DEFAULT_FRAMES, DEFAULT_SIZE = 2, 45, (832, 480)
QUICK_VIDEOS, QUICK_FRAMES, QUICK_SIZE = 2, 10, (416, 240)
#: The goals: release time / devil time, cold and with the ground-truth cache warm.
GOAL_COLD, GOAL_WARM = 2.7, 10.0
#: Noise amplitude (+-, grey levels) of the two methods' predictions inside the hole.
METHOD_NOISE = {"A": 24, "B": 64}
#: The release's command-line defaults of ``evaluate_inpainting.py`` (PCons patch size and search width).
RELEASE_PCONS_PATCH, RELEASE_PCONS_SEARCH = 50, 20
#: Largest relative difference release vs devil counted as equal: float64 rounding (both sides do the same
#: float32/float64 operations, summed in another order; SSIM's window sums are exact on our side, running sums on the
#: release's).
EQUAL_REL_TOL = {"psnr": 1e-12, "ssim": 1e-12, "pcons": 1e-12, "warp_error": 1e-12}
#: Our metric names and the release's metric computer (module, class) giving the same result key.
METRICS = {
    "psnr": ("psnr", "psnr_computer", "PSNRComputer"),
    "ssim": ("ssim", "ssim_computer", "SSIMComputer"),
    "pcons": ("pcons_psnr_mask", "pcons_psnr_mask_computer", "PConsPSNRMaskComputer"),
    "warp_error": ("warp_error_mask", "warp_error_mask_computer", "WarpErrorMaskComputer"),
}


class ReleaseMissing(Exception):
    """The release checkout named by ``--release-repo`` is absent or incomplete (the message says what)."""


# ------------------------------------------------------------------------------------------------------- shims
# SHIMS: the release's code is imported unchanged; only these pieces, absent from a CPU machine with a current
# scikit-image, are bridged. Each is installed only where the real piece is missing, and listed in the output.

def resample2d_forward(input1: Any, input2: Any, output: Any, kernel_size: int = 1, bilinear: bool = True) -> int:
    """SHIM for ``resample2d_cuda.forward``, FlowNet2's compiled CUDA warping kernel (the release builds it with
    ``install-flownet2.sh``; it does not exist without CUDA): the kernel's forward pass on CPU tensors, with its
    arithmetic: per pixel, float32 ``xf = x + dx``, ``alpha = xf - floor(xf)`` (same for y), the four neighbours
    clamped into the frame, each term ``(1. - alpha) * (1. - beta) * v`` computed in double and cast to float,
    the four summed in float32 in the kernel's order. Only the bilinear mode with ``kernel_size`` 1 (what
    ``Resample2d()`` uses everywhere in the release's metrics).

    >>> import torch
    >>> img = torch.arange(12, dtype=torch.float32).reshape(1, 1, 3, 4)
    >>> out = torch.zeros_like(img)
    >>> _ = resample2d_forward(img, torch.full((1, 2, 3, 4), 0.5), out)
    >>> out[0, 0, 0].tolist()
    [2.5, 3.5, 4.5, 5.0]
    """
    import torch

    if kernel_size != 1 or not bilinear:
        raise NotImplementedError(f"resample2d shim: only bilinear, kernel_size 1 (got {kernel_size}, {bilinear})")
    b, c = input1.shape[:2]
    h, w = output.shape[2:]
    x = torch.arange(w, dtype=torch.float32, device=input2.device).view(1, 1, w)
    y = torch.arange(h, dtype=torch.float32, device=input2.device).view(1, h, 1)
    xf = x + input2[:, 0].float()
    yf = y + input2[:, 1].float()
    x0, y0 = torch.floor(xf), torch.floor(yf)
    alpha = (xf - x0).double().unsqueeze(1)
    beta = (yf - y0).double().unsqueeze(1)
    h1, w1 = input1.shape[2:]
    xl, xr = x0.long().clamp(0, w - 1), (x0 + 1).long().clamp(0, w - 1)
    yt, yb = y0.long().clamp(0, h - 1), (y0 + 1).long().clamp(0, h - 1)
    flat = input1.reshape(b, c, h1 * w1)

    def px(yy: Any, xx: Any) -> Any:  # input1[b, :, yy, xx] as float64 [B, C, H, W]
        index = (yy * w1 + xx).view(b, 1, h * w).expand(b, c, h * w)
        return torch.gather(flat, 2, index).view(b, c, h, w).double()

    val = ((1. - alpha) * (1. - beta) * px(yt, xl)).float()
    val = val + (alpha * (1. - beta) * px(yt, xr)).float()
    val = val + ((1. - alpha) * beta * px(yb, xl)).float()
    val = val + (alpha * beta * px(yb, xr)).float()
    output.copy_(val)
    return 1


@contextlib.contextmanager
def cuda_calls_on_cpu() -> Iterator[None]:
    """SHIM for the release's ``.cuda()`` calls (``common_util.flow.detect_occlusion`` moves its flows and warping
    layer to the GPU unconditionally): without CUDA, ``Tensor.cuda`` and ``Module.cuda`` return their object
    unchanged for the duration, so the same code runs on CPU. With CUDA, nothing is changed."""
    import torch

    if torch.cuda.is_available():
        yield
        return
    saved = torch.Tensor.cuda, torch.nn.Module.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    torch.nn.Module.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.cuda, torch.nn.Module.cuda = saved  # type: ignore[method-assign]


def ssim_as_release_skimage(im1: np.ndarray, im2: np.ndarray, *, multichannel: bool = False,
                            data_range: float | None = None, **kwargs: Any) -> float:
    """SHIM for the release's ``structural_similarity(gt, comp, multichannel=True)`` as its pinned scikit-image
    0.17.2 (``requirements.txt``) computes it, on a scikit-image >= 0.19: ``multichannel`` became ``channel_axis``
    (a current version ignores the old keyword); a float image without ``data_range`` took the dtype's range,
    (-1, 1) for floats, so 2 (current versions refuse it); and 0.17.2 converted both images to float64 before
    filtering (``im1.astype(np.float64)``), where current versions keep float32. With float64 inputs the current
    code runs 0.17.2's statements (per channel, the same filter, formula and means).

    >>> a = np.zeros((8, 8, 3), np.float32)
    >>> float(ssim_as_release_skimage(a, a, multichannel=True))
    1.0
    """
    from skimage.metrics import structural_similarity
    from skimage.util.dtype import dtype_range

    if data_range is None:
        dmin, dmax = dtype_range[im1.dtype.type]
        data_range = dmax - dmin
    if multichannel:
        kwargs["channel_axis"] = -1
    return float(structural_similarity(im1.astype(np.float64), im2.astype(np.float64), data_range=data_range,
                                       **kwargs))


class NumpyForReadFlo(types.ModuleType):
    """SHIM for the release's ``read_flo`` under NumPy >= 2 (its environment has NumPy 1.x): it reads the header
    with ``int(np.fromfile(f, np.int32, count=1))``, and NumPy 2 refuses ``int()`` of a one-element 1-d array. Given
    to ``common_util.flow`` as its ``np``: everything is NumPy's, except that ``fromfile`` with ``count=1`` returns
    that one element as a 0-d array (same value, same dtype).

    >>> with tempfile.TemporaryFile() as f:
    ...     _ = f.write(np.int32(7).tobytes()), f.seek(0)
    ...     NumpyForReadFlo().fromfile(f, np.int32, count=1).tolist()
    7
    """

    def __init__(self) -> None:
        super().__init__("numpy_for_read_flo")

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)

    def fromfile(self, file: Any, dtype: Any = float, count: int = -1, **kwargs: Any) -> np.ndarray:
        data = np.fromfile(file, dtype, count=count, **kwargs)
        return data.reshape(()) if count == 1 and data.size == 1 else data


def _skimage_before_019() -> bool:
    from importlib.metadata import version

    major, minor = (int(p) for p in version("scikit-image").split(".")[:2])
    return (major, minor) < (0, 19)


def find_eval_root(release_repo: Path) -> Path:
    """The folder holding the release's evaluation package ``src/compute_metrics``: ``PATH/video-inpainting-
    evaluation`` in a checkout of MichiganCOG/devil, or ``PATH`` itself (a checkout of the submodule alone)."""
    if not release_repo.is_dir():
        raise ReleaseMissing(f"--release-repo {release_repo}: not a directory")
    for root in (release_repo / EVAL_SUBMODULE, release_repo):
        if (root / "src" / "compute_metrics" / "psnr_computer.py").is_file():
            return root
    if (release_repo / EVAL_SUBMODULE).is_dir():
        raise ReleaseMissing(f"--release-repo {release_repo}: {EVAL_SUBMODULE}/ is empty or incomplete (the "
                             f"submodule is not initialised: git -C {release_repo} submodule update --init "
                             f"{EVAL_SUBMODULE})")
    raise ReleaseMissing(f"--release-repo {release_repo}: no src/compute_metrics/psnr_computer.py here or under "
                         f"{EVAL_SUBMODULE}/ (not a checkout of the release)")


def _bare_package(name: str, path: Path) -> None:
    """Register package ``name`` at ``path`` without running its ``__init__.py``."""
    module = types.ModuleType(name)
    module.__path__ = [str(path)]
    module.__package__ = name
    sys.modules[name] = module


def load_release(eval_root: Path) -> tuple[dict[str, Any], list[str]]:
    """The release's modules (its metric computers, ``common_util.flow``, ``image`` and ``misc``), imported from
    ``eval_root``; and the shims installed, one line each.

    Its package is named ``src``; ``src.compute_metrics`` is registered bare: its ``__init__.py`` imports every
    computer (FID, LPIPS, PVCS, VFID: networks and their weights), while only the four pixel and warp computers
    are needed here.
    """
    shims: list[str] = []
    if any(name == "src" or name.startswith("src.") for name in sys.modules):
        raise ReleaseMissing("a module named 'src' is already imported; run this script in a fresh interpreter")
    _bare_package("src", eval_root / "src")
    _bare_package("src.compute_metrics", eval_root / "src" / "compute_metrics")
    import torch

    if importlib.util.find_spec("resample2d_cuda") is None or not torch.cuda.is_available():
        shim = types.ModuleType("resample2d_cuda")
        shim.forward = resample2d_forward  # type: ignore[attr-defined]
        sys.modules["resample2d_cuda"] = shim
        shims.append("resample2d_cuda (FlowNet2's compiled CUDA warping kernel; not built, or no CUDA): "
                     "resample2d_forward, its forward pass on CPU tensors with the kernel's arithmetic")
    modules: dict[str, Any] = {key: importlib.import_module(f"src.compute_metrics.{module}")
                               for key, (_, module, _) in METRICS.items()}
    for name in ("flow", "image", "misc"):
        modules[name] = importlib.import_module(f"src.common_util.{name}")
    if not _skimage_before_019():
        modules["ssim"].ssim = ssim_as_release_skimage  # the module's own name for skimage's function
        shims.append("skimage structural_similarity as under the release's scikit-image 0.17.2: multichannel=True "
                     "-> channel_axis=-1, float data range (-1, 1) -> 2, float64 arithmetic (ssim_as_release_skimage)")
    if int(np.__version__.split(".")[0]) >= 2:
        modules["flow"].np = NumpyForReadFlo()
        shims.append("numpy in common_util.flow (read_flo) under NumPy >= 2: fromfile(count=1) gives a 0-d array, "
                     "which int() accepts (NumpyForReadFlo)")
    if not torch.cuda.is_available():
        shims.append("torch .cuda() in detect_occlusion: returns the CPU tensor/module (no CUDA here)")
    return modules, shims


# ------------------------------------------------------------------------------------------------- the videos
def make_videos(root: Path, videos: int, frames: int, w: int, h: int) -> list[str]:
    """Ground truth and masks in ``root/gt`` (the release's ``--gt_root`` layout), predictions of methods A and B
    in ``root/pred-A``, ``root/pred-B``: the ground truth outside the hole, noise inside. Returns the video names."""
    names = []
    for i in range(videos):
        name = f"clip{i:04d}"
        gt, hole = make_clip(i, frames, h, w)
        write_frame_pngs(gt, root / "gt" / name, "gt")
        write_mask_pngs(hole, root / "gt" / name)
        for k, (method, noise) in enumerate(METHOD_NOISE.items()):
            rng = np.random.default_rng(100 * i + k)
            noisy = np.clip(gt.astype(np.int16) + rng.integers(-noise, noise + 1, gt.shape), 0, 255).astype(np.uint8)
            write_frame_pngs(np.where(hole[..., None], noisy, gt), root / f"pred-{method}" / name, "pred")
        names.append(name)
    return names


# ------------------------------------------------------------------------------------------------ the release
def release_features(rel: dict[str, Any], gt_root: Path, feats_root: Path) -> None:
    """The warp error's ground-truth features as the release's ``src/main/compute_flow_occlusion.py`` makes them,
    per video and pair t: forward and backward flow, ``detect_occlusion(bw_flow, fw_flow)`` (the release's
    argument order), ``fw_flow/<video>/%05d.flo`` and ``fw_occlusion/<video>/%05d.png`` written with its own
    ``save_flo`` / ``save_img``. The flow is DIS (:func:`devil_dataset.core.flow.dis_flow`, what ``devil
    evaluate`` uses with ``EvalOptions(flow="dis")``) on the frames read by its ``read_img``, in place of FlowNet2
    (whose resizing to multiples of 64 is FlowNet2's own and does not apply)."""
    cuf, cui = rel["flow"], rel["image"]
    for video in sorted(os.listdir(gt_root)):
        flow_dir = feats_root / "fw_flow" / video
        occ_dir = feats_root / "fw_occlusion" / video
        flow_dir.mkdir(parents=True, exist_ok=True)
        occ_dir.mkdir(parents=True, exist_ok=True)
        frames = sorted((gt_root / video).glob("*_gt.png"))
        for t in range(len(frames) - 1):
            img1 = np.rint(cui.read_img(str(frames[t])) * 255).astype(np.uint8)  # read_img: float32 x / 255
            img2 = np.rint(cui.read_img(str(frames[t + 1])) * 255).astype(np.uint8)
            fw_flow, bw_flow = dis_flow(img1, img2), dis_flow(img2, img1)
            with cuda_calls_on_cpu():
                fw_occ = cuf.detect_occlusion(bw_flow, fw_flow)
            with contextlib.redirect_stdout(io.StringIO()):  # save_flo / save_img print every file name
                cuf.save_flo(fw_flow, str(flow_dir / f"{t:05d}.flo"))
                cui.save_img(fw_occ, str(occ_dir / f"{t:05d}.png"), binary=True)


class _Queue:
    """What a release computer sends its parent process (``('result', name, values)`` and progress)."""

    def __init__(self) -> None:
        self.items: list[tuple] = []

    def put(self, item: tuple) -> None:
        self.items.append(item)


def release_metric(rel: dict[str, Any], key: str, gt_root: Path, pred_root: Path, feats_root: Path) -> np.ndarray:
    """Per-video values of one release metric computer, run in this process (``compute_metric``; the release's
    ``evaluate_inpainting.py`` starts each computer as its own process) with its default options."""
    _, module, cls = METRICS[key]
    names, counts = rel["misc"].get_video_names_and_frame_counts(str(gt_root), None)
    import torch

    opts = argparse.Namespace(gt_root=str(gt_root), pred_root=str(pred_root), eval_feats_root=str(feats_root),
                              video_names=names, video_frame_counts=counts, sim_cons_ps=RELEASE_PCONS_PATCH,
                              sim_cons_sw=RELEASE_PCONS_SEARCH, cuda=torch.cuda.is_available())
    queue = _Queue()
    with open(os.devnull, "w") as log:
        getattr(rel[key], cls)(opts, queue, log).compute_metric()
    for kind, _, data in queue.items:
        if kind == "result":
            return np.asarray(data, np.float64)
    raise RuntimeError(f"release {cls}: no result ({[i[0] for i in queue.items]})")


# ------------------------------------------------------------------------------------------------------ devil
def png_rows(gt_root: Path, names: list[str]) -> list[dict]:
    """Rows for ``evaluate_dataset``: each video's ground truth and hole decoded from the release layout."""
    return [{"clip_id": n, "frames": read_frame_pngs(gt_root / n, "gt"), "hole": read_mask_pngs(gt_root / n)}
            for n in names]


def devil_run(gt_root: Path, names: list[str], pred_root: Path, cache: GroundTruthCache | None) -> dict:
    """``devil evaluate``'s path on one method: decode the ground truth, then ``evaluate_dataset``."""
    return evaluate_dataset("release-metrics", "all", pred_root, list(METRICS), EvalOptions(device="cpu", flow="dis"),
                            progress=False, rows=png_rows(gt_root, names), gt_cache=cache)


def warm_up(root: Path) -> None:
    """``devil evaluate``'s imports and first calls on a tiny clip, outside the timings (the release's modules are
    imported by :func:`load_release` before)."""
    gt, hole = make_clip(99, 3, 64, 96)
    write_frame_pngs(gt, root / "gt" / "w", "gt")
    write_mask_pngs(hole, root / "gt" / "w")
    write_frame_pngs(gt, root / "pred" / "w", "pred")
    devil_run(root / "gt", ["w"], root / "pred", None)


# ------------------------------------------------------------------------------------------------------ report
def cpu_model() -> str:
    """``lscpu``'s model name (or the platform's processor string)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        import platform

        return platform.processor() or "unknown CPU"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def compare(release: dict[str, np.ndarray], doc: dict,
            names: list[str]) -> dict[str, tuple[float, float, float, float]]:
    """Per metric: (release mean, devil mean, max |release - devil|, max |release - devil| / |release|) over the
    videos.

    >>> doc = {"videos": {"a": {"psnr": 30.0, "ssim": 0.5, "pcons_psnr_mask": 20.0, "warp_error_mask": 0.01}}}
    >>> rel = {"psnr": np.array([30.0]), "ssim": np.array([0.5]), "pcons": np.array([20.0]),
    ...        "warp_error": np.array([0.02])}
    >>> compare(rel, doc, ["a"])["warp_error"]
    (0.02, 0.01, 0.01, 0.5)
    """
    out = {}
    for key, (result_key, _, _) in METRICS.items():
        ours = np.array([doc["videos"][n][result_key] for n in names], np.float64)
        theirs = release[key]
        diff = np.abs(theirs - ours)
        out[key] = (float(theirs.mean()), float(ours.mean()), float(diff.max()),
                    float(np.max(diff / np.maximum(np.abs(theirs), np.finfo(np.float64).tiny))))
    return out


def _timing_rows(rows: list[tuple[str, tuple[float, float, Any]]]) -> None:
    print(f"{'stage':<58}{'wall s':>9}{'CPU s':>9}")
    for label, (wall, cpu, _) in rows:
        print(f"{label:<58}{wall:9.2f}{cpu:9.2f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release-repo", type=Path, metavar="PATH",
                    help=f"checkout of {RELEASE_URL} at {RELEASE_COMMIT} with {EVAL_SUBMODULE} initialised "
                         "(or of that submodule alone); required")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_VIDEOS} videos x {QUICK_FRAMES} frames at {QUICK_SIZE[0]}x{QUICK_SIZE[1]}")
    ap.add_argument("--videos", type=int, default=DEFAULT_VIDEOS)
    ap.add_argument("--frames", type=int, default=DEFAULT_FRAMES)
    ap.add_argument("--size", type=int, nargs=2, default=DEFAULT_SIZE, metavar=("W", "H"))
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch's CPU threads (only the release's warping uses torch here; default 1: on a small "
                         "shared machine its OpenMP threads spin waiting for each other)")
    args = ap.parse_args(argv)
    if args.release_repo is None:
        print(f"release_metrics.py: --release-repo PATH is required: the release's own metric code is imported from "
              f"a checkout of it, never copied here. To get it:\n{GET_RELEASE}", file=sys.stderr)
        return 2
    try:
        eval_root = find_eval_root(args.release_repo.expanduser().resolve())
        rel, shims = load_release(eval_root)
    except ReleaseMissing as exc:
        print(f"release_metrics.py: {exc}\nTo get the release:\n{GET_RELEASE}", file=sys.stderr)
        return 2
    videos, frames, (w, h) = ((QUICK_VIDEOS, QUICK_FRAMES, QUICK_SIZE) if args.quick
                              else (args.videos, args.frames, tuple(args.size)))
    if frames < 2 or videos < 1 or min(w, h) < RELEASE_PCONS_PATCH + 2 * RELEASE_PCONS_SEARCH:
        ap.error(f"need at least 1 video, 2 frames and {RELEASE_PCONS_PATCH + 2 * RELEASE_PCONS_SEARCH} px per side "
                 "(the release's PCons patch and search)")
    print(f"{videos} videos x {frames} frames at {w}x{h}, methods A and B (noise +-{METHOD_NOISE['A']} and "
          f"+-{METHOD_NOISE['B']} in the hole); metrics {' '.join(METRICS)}; DIS flow on both sides; CPU: "
          f"{cpu_model()} ({os.cpu_count()} logical CPUs)")
    import torch

    torch.set_num_threads(max(1, args.torch_threads))
    print(f"release code: {eval_root}; torch CPU threads: {torch.get_num_threads()}; load average at start: "
          f"{os.getloadavg()[0]:.2f}")
    for line in shims:
        print(f"  shim: {line}")
    with tempfile.TemporaryDirectory(prefix="release-metrics-") as tmp:
        root = Path(tmp)
        names = make_videos(root, videos, frames, w, h)
        gt_root, feats = root / "gt", root / "eval-feats"
        warm_up(root / "warm-up")

        def release_method(method: str) -> dict[str, tuple[float, float, np.ndarray]]:
            return {key: timed(lambda key=key: release_metric(rel, key, gt_root, root / f"pred-{method}", feats))
                    for key in METRICS}

        rel_feats = timed(lambda: release_features(rel, gt_root, feats))
        rel_a = release_method("A")
        rel_b = release_method("B")
        plain_a = timed(lambda: devil_run(gt_root, names, root / "pred-A", None))
        cache = GroundTruthCache(root / "gt-cache")
        cold_a = timed(lambda: devil_run(gt_root, names, root / "pred-A", cache))
        warm = GroundTruthCache(root / "gt-cache")
        warm_b = timed(lambda: devil_run(gt_root, names, root / "pred-B", warm))
    rel_a_metrics, rel_b_metrics = sum_timings(list(rel_a.values())), sum_timings(list(rel_b.values()))
    rel_a_total = sum_timings([rel_feats, rel_a_metrics])
    rows: list[tuple[str, tuple[float, float, Any]]] = [
        ("release: warp error features (DIS flow + occlusion, written)", rel_feats)]
    rows += [(f"release: {METRICS[k][2]}, method {m}", v) for m, r in (("A", rel_a), ("B", rel_b))
             for k, v in r.items()]
    rows += [("release, method A: features + 4 computers", rel_a_total),
             ("release, method B: 4 computers (features of A reused)", rel_b_metrics),
             ("devil evaluate, method A, no cache", plain_a),
             ("devil evaluate, method A, cold cache (computes, stores)", cold_a),
             ("devil evaluate, method B, warm cache (second method)", warm_b)]
    _timing_rows(rows)
    print(f"load average at the end (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} logical CPUs")
    print(f"gt cache: {cache.stats.misses} entries written ({cache.stats.written_bytes / 2**20:.0f} MiB) by the cold "
          f"run; warm run: {warm.stats.hits} hits, {warm.stats.misses} misses")
    same_plain = plain_a[2]["videos"] == cold_a[2]["videos"]
    print(f"devil values with and without the cache identical: {same_plain}")
    print(f"{'metric':<12}{'method':>7}{'release mean':>17}{'devil mean':>17}{'max |diff|':>12}{'max rel':>10}  "
          "per video (release, devil)")
    worst: dict[str, float] = {}
    for method, release_values, doc in (("A", rel_a, cold_a[2]), ("B", rel_b, warm_b[2])):
        values = {k: v[2] for k, v in release_values.items()}
        for key, (r_mean, d_mean, diff, rel_diff) in compare(values, doc, names).items():
            worst[key] = max(worst.get(key, 0.0), rel_diff)
            pairs = ", ".join(f"({values[key][i]:.10g}, {doc['videos'][n][METRICS[key][0]]:.10g})"
                              for i, n in enumerate(names))
            print(f"{key:<12}{method:>7}{r_mean:17.10g}{d_mean:17.10g}{diff:12.3g}{rel_diff:10.2g}  {pairs}")
    differ = [k for k, v in worst.items() if not v <= EQUAL_REL_TOL[k]]
    print("largest relative difference per metric (tolerance): "
          + ", ".join(f"{k} {v:.2g} ({EQUAL_REL_TOL[k]:.0e})" for k, v in worst.items())
          + f"; values equal within it: {'yes' if not differ else 'NO: ' + ' '.join(differ)}")
    cold_ratio, warm_ratio = rel_a_total[0] / cold_a[0], rel_a_total[0] / warm_b[0]
    verdict = {True: "met", False: "NOT met"}
    print(f"release (features + computers) / devil evaluate: cold cache {cold_ratio:.1f}x wall "
          f"({rel_a_total[1] / cold_a[1]:.1f}x CPU; goal {GOAL_COLD}x: {verdict[cold_ratio >= GOAL_COLD]}), "
          f"no cache {rel_a_total[0] / plain_a[0]:.1f}x wall, warm cache {warm_ratio:.1f}x wall "
          f"({rel_a_total[1] / warm_b[1]:.1f}x CPU; goal {GOAL_WARM:.0f}x: {verdict[warm_ratio >= GOAL_WARM]})")
    print(f"like for like, both with stored ground-truth features (release method B / devil warm cache): "
          f"{rel_b_metrics[0] / warm_b[0]:.1f}x wall, {rel_b_metrics[1] / warm_b[1]:.1f}x CPU")
    return 1 if differ or not same_plain else 0


def sum_timings(parts: list[tuple[float, float, Any]]) -> tuple[float, float, None]:
    """(wall, CPU, None): the sums of several ``timed`` results."""
    return sum(p[0] for p in parts), sum(p[1] for p in parts), None


__all__ = ["EQUAL_REL_TOL", "ReleaseMissing", "compare", "cuda_calls_on_cpu", "find_eval_root", "load_release", "main",
           "release_features", "release_metric", "resample2d_forward", "ssim_as_release_skimage"]

if __name__ == "__main__":
    sys.exit(main())
