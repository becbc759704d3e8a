"""Network speed at 832x480 with random weights: LPIPS, FID Inception (vs pytorch-fid's own pass), I3D windows.

    python benchmarks/networks.py            # 8 frames per 2-D network, 2 I3D window pairs, + a 2048-d Frechet
    python benchmarks/networks.py --quick    # 4 frames, 1 window pair, no Frechet timing
    python benchmarks/networks.py --device cuda --batch 32 --video-frames 90

Figures are frames per second of one video's composite-vs-GT work:
- LPIPS: frame pairs per second (both frames through AlexNet);
- FID: frames per second of our feature pass, and the ratio to pytorch-fid's ``InceptionV3`` forward on the
  same frames with the same weights in the same run (features are asserted equal);
- I3D: PVCS windows per second (one GT + one composite 10-frame window, four layers compared, Mixed_5c means
  kept for VFID clips); a 90-frame clip needs 81 windows (stride 1), so fps = windows/s;
- VFID whole-video pass: frames per second of one T-frame clip through I3D (``--video-frames``).
Weights are random (no real weights offline); speed does not depend on their values.

    python benchmarks/networks.py --arithmetic           # the cost of the fixed arithmetic
    python benchmarks/networks.py --precision            # the precision section instead
    python benchmarks/networks.py --precision --device cuda

Arithmetic section: each network's CPU pass at 832x480 four ways, each in a fresh process (the ISA
pins are environment variables read at start): ``before`` (the whole batch in one pass on torch's default
threads, no ISA pins: this package before the fixed arithmetic), ``fixed`` (one sample per pass on one thread: the
values no longer depend on the batch size or thread count), ``pinned`` (``fixed`` plus the AVX2 pins of
``core/cpu_pins`` with oneDNN's and MKL's kernels, ``DEVIL_NETWORK_KERNELS=native``: the pinned path, the same on AVX2
and AVX-512 machines of one vendor) and ``portable`` (the pins plus ``core/networks/portable``: the same on Intel and
AMD, the default). Wall seconds, best of ``--reps``; the ratios are ``fixed`` / ``before``, ``pinned`` /
``before`` and ``portable`` / ``pinned``, measured in the same invocation. One process: the engines
run two (``--jobs``), each on one thread, so a two-core machine stays busy either way.

Precision section: each network (LPIPS, FID Inception, I3D, RAFT; random weights of the real architectures) in
``tf32`` and ``bf16`` (``devil_dataset.core.networks.precision``) against ``float32`` on the same inputs: the
outputs' largest absolute deviation and that deviation relative to the largest float32 output (the per-element
ratio is meaningless next to the zeros of ReLU features), the metric values each gives (mean LPIPS; FID between
the two frame sets; mean PVCS and VFID (clips) over the windows; RAFT's end-point error against float32's flow),
and the speed ratio float32 time / mode time, both timed in the same run. On a CPU tf32 is float32 (it must
deviate by exactly 0) and bf16 is real; without native bf16 (oneDNN needs AVX512-BF16 or AMX) it is emulated and
slower. Sizes are small on a CPU (``--precision-size``, default 128x80 there, 832x480 on CUDA).
"""
from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from pathlib import Path
from typing import Iterator

import numpy as np
import torch
from scipy.linalg import LinAlgWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state  # noqa: E402
from devil_dataset.core.networks.inception import FIDInception, random_inception_state  # noqa: E402
from devil_dataset.core.networks.lpips import LPIPSNetwork, random_alexnet_state  # noqa: E402
from devil_dataset.core.networks.precision import effective_precision  # noqa: E402
from devil_dataset.core.networks.raft import RAFTFlow, random_raft_state  # noqa: E402
from devil_dataset.eval import metrics as M  # noqa: E402
from devil_dataset.eval.metrics.metric import VideoSample  # noqa: E402

W, H = 832, 480  # the release's evaluation size
# Precision section: the modes compared with float32 (devil_dataset.core.networks.precision.PRECISIONS), and the
# frame size on a CPU, where bf16 without native support is one to two orders of magnitude slower than float32
# (measured on this project's AVX2 AMD EPYC: RAFT 70x, I3D 32x), so the section stays within minutes there.
PRECISION_MODES = ("tf32", "bf16")
PRECISION_CPU_SIZE = (128, 80)


def _run(fn) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one call. CPU seconds (all threads) are robust to other
    processes sharing the machine; wall seconds are what a user waits on an idle machine with as many threads."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    w, c = time.perf_counter(), time.process_time()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - w, time.process_time() - c


def _timed(fn, reps: int = 1) -> tuple[float, float]:
    fn()  # warm-up (oneDNN primitive creation, allocations)
    runs = [_run(fn) for _ in range(reps)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def _best_interleaved(fn_a, fn_b, reps: int) -> tuple[tuple[float, float], tuple[float, float]]:
    fn_a(), fn_b()  # warm-up both
    a, b = [], []
    for _ in range(reps):
        a.append(_run(fn_a))
        b.append(_run(fn_b))
    best = lambda rs: (min(r[0] for r in rs), min(r[1] for r in rs))  # noqa: E731
    return best(a), best(b)


def deviation(ref: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """(max |other - ref|, that / max |ref|) of two outputs of one shape.

    >>> deviation(np.array([0.0, 2.0, -4.0]), np.array([0.0, 2.5, -4.0]))
    (0.5, 0.125)
    """
    ref, other = np.asarray(ref, np.float64), np.asarray(other, np.float64)
    if ref.shape != other.shape:
        raise ValueError(f"deviation: shapes differ: {ref.shape} vs {other.shape}")
    d = float(np.abs(other - ref).max()) if ref.size else 0.0
    scale = float(np.abs(ref).max()) if ref.size else 0.0
    return d, (d / scale if scale > 0 else float("inf") if d > 0 else 0.0)


def _fid_of(a: np.ndarray, b: np.ndarray) -> float:
    ga, gb = M.GaussianStats(), M.GaussianStats()
    ga.add(a)
    gb.add(b)
    with warnings.catch_warnings():  # few samples: singular covariances (see precision_rows)
        warnings.simplefilter("ignore", LinAlgWarning)
        return M.frechet_of(ga, gb)


def _networks(device: str, gt: np.ndarray, comp: np.ndarray, hole: np.ndarray, frames: int, fid_frames: int,
              pairs: int, raft_pairs: int) -> dict[str, tuple]:
    """network name -> (build(precision), call(net) -> (outputs, metric values)) on fixed inputs."""
    t = pairs + 9  # frames of a clip with ``pairs`` 10-frame windows
    video = VideoSample("precision", gt[:t], comp[:t], hole[:t])  # its composite is ``comp``: the hole is the box

    def lpips(net):
        d = net.distance(gt[:frames], comp[:frames])
        return d, {"LPIPS": float(d.mean())}

    def fid(net):
        a, b = net.features(gt[:fid_frames]), net.features(comp[:fid_frames])
        return np.concatenate([a, b]), {"FID": _fid_of(a, b)}

    def i3d(net):
        p = M.I3DVideoPass(net, video, device, pairs)
        feats = np.concatenate([p.gt_windows, p.comp_windows])  # Mixed_5c window means (the VFID features)
        return feats, {"PVCS": float(p.pvcs.mean()), "VFID (clips)": _fid_of(p.gt_windows, p.comp_windows)}

    def raft(net):
        return net.flow_batch(gt[:raft_pairs], gt[1: raft_pairs + 1]), {}

    return {
        "LPIPS": (lambda p: LPIPSNetwork(device, random_alexnet_state(), precision=p), lpips),
        "FID": (lambda p: FIDInception(device, random_inception_state(), precision=p), fid),
        "I3D": (lambda p: load_i3d(device, random_i3d_state()).at_precision(p), i3d),
        "RAFT": (lambda p: RAFTFlow(device, random_raft_state(), precision=p), raft),
    }


EPE_KEY = "EPE vs float32 (px)"


# A first call faster than this is repeated ``reps`` times (warm-up: oneDNN primitives, cuDNN autotuning) and the
# best time kept; a slower one (bf16 emulated on a CPU: tens of seconds) is timed once, its warm-up negligible.
REPEAT_BELOW_S = 5.0


def _measure(call, net, device: str, reps: int) -> tuple:
    """(what ``call(net)`` returned the first time, its best time): process CPU seconds on a CPU (robust to other
    processes sharing the machine), wall seconds on a GPU."""
    out: list = []
    which = 0 if torch.device(device).type == "cuda" else 1
    first = _run(lambda: out.append(call(net)))[which]
    times = [first]
    while first < REPEAT_BELOW_S and len(times) <= reps:
        times.append(_run(functools.partial(call, net))[which])
    return out[0], min(times)


def precision_rows(device: str = "cpu", size: tuple[int, int] = PRECISION_CPU_SIZE, frames: int = 4,
                   fid_frames: int = 4, pairs: int = 1, raft_pairs: int = 1, modes: tuple[str, ...] = PRECISION_MODES,
                   networks: tuple[str, ...] = ("LPIPS", "FID", "I3D", "RAFT")) -> Iterator[dict]:
    """One row per (network, mode), as each is measured: output deviation from float32, metric values, float32
    and mode seconds.

    Each network's float32 and mode passes run on the same inputs; the first call of each gives the outputs
    (times: :func:`_measure`). FID and VFID (clips) from a few samples have singular covariances: their values
    are rough, but both precisions compute the same quantity.

    >>> rows = precision_rows(size=(64, 48), frames=2, networks=("LPIPS",), modes=("tf32",))
    >>> [(r["network"], r["mode"], r["effective"], r["max_abs"]) for r in rows]
    [('LPIPS', 'tf32', 'float32', 0.0)]
    """
    w, h = size
    rng = np.random.default_rng(0)
    n = max(frames, fid_frames, pairs + 9, raft_pairs + 1)
    gt = rng.integers(0, 256, (n, h, w, 3), dtype=np.uint8)
    comp = gt.copy()  # a "composite": the GT with a noise box (the hole) in its middle third
    hole = np.zeros(gt.shape[:3], bool)
    hole[:, h // 3: 2 * h // 3, w // 3: 2 * w // 3] = True
    comp[hole] = rng.integers(0, 256, comp[hole].shape, dtype=np.uint8)
    table = _networks(device, gt, comp, hole, frames, fid_frames, pairs, raft_pairs)
    reps = 3 if torch.device(device).type == "cuda" else 2
    for name in networks:
        build, call = table[name]
        ref_net = build("float32")
        (ref_out, ref_metrics), ref_s = _measure(call, ref_net, device, reps)
        for mode in modes:
            net = build(mode)
            (out, metrics), mode_s = _measure(call, net, device, reps)
            max_abs, max_rel = deviation(ref_out, out)
            if name == "RAFT":  # end-point error of the mode's flow against float32's
                epe = np.linalg.norm(np.asarray(out, np.float64) - ref_out, axis=-1)
                metrics, ref_metrics = {EPE_KEY: float(epe.mean())}, {EPE_KEY: 0.0}
            yield {"network": name, "mode": mode, "effective": effective_precision(mode, device),
                   "max_abs": max_abs, "max_rel": max_rel, "metrics": metrics, "ref_metrics": ref_metrics,
                   "float32_s": ref_s, "mode_s": mode_s}


def _bf16_note(device: str) -> str:
    if torch.device(device).type == "cuda":
        return f"bf16 supported: {torch.cuda.is_bf16_supported()}, {torch.cuda.get_device_name()}"
    try:
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # pragma: no cover - a torch without the probe
        native = False
    return (f"CPU capability {torch.backends.cpu.get_cpu_capability()}, oneDNN native bf16: "
            f"{'yes' if native else 'no (emulated)'}")


def print_precision_section(device: str, size: tuple[int, int], frames: int, fid_frames: int, pairs: int,
                            raft_pairs: int) -> None:
    """Print :func:`precision_rows` as a table (the ``--precision`` section)."""
    print(f"precision vs float32 on {device} ({_bf16_note(device)}), frames {size[0]}x{size[1]}: LPIPS {frames} "
          f"pairs, FID 2 x {fid_frames} frames, I3D {pairs} window pair(s), RAFT {raft_pairs} pair(s)")
    print("network mode (applied)   max|d|      max|d|/max|ref|  metric: float32 -> mode (|d|, rel)"
          "                 time float32 / mode: speed ratio")
    print(f"(FID from 2 x {fid_frames} frames, VFID (clips) from 2 x {pairs} windows: two close sets (GT and "
          "composite differ in a box), so a mode's rounding noise, independent between the two passes, is large "
          "next to their difference and enters both covariances: these metrics move more than the features)")
    for r in precision_rows(device, size, frames, fid_frames, pairs, raft_pairs):
        parts: list[str] = []
        for key, value in r["metrics"].items():
            ref = r["ref_metrics"][key]
            d = abs(value - ref)
            rel = d / abs(ref) if ref else float("nan")
            parts.append(f"{key} {ref:.6g} -> {value:.6g} ({d:.2g}, {rel:.2%})" if key != EPE_KEY
                         else f"{key} {value:.4g}")
        print(f"{r['network']:<7} {r['mode']:<4} ({r['effective']:<7}) {r['max_abs']:10.4g}  {r['max_rel']:10.4g}"
              f"       {'; '.join(parts):<55} {r['float32_s']:7.2f} s / {r['mode_s']:7.2f} s: "
              f"{r['float32_s'] / r['mode_s']:.2f}x", flush=True)


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected WIDTHxHEIGHT, e.g. 160x96") from None
    if w < 8 or h < 8:
        raise argparse.ArgumentTypeError(f"{text!r}: width and height must be at least 8")
    return w, h


ARITHMETIC_MODES = ("before", "fixed", "pinned", "portable")


def _arithmetic_child(mode: str, reps: int, size: tuple[int, int]) -> dict[str, tuple[float, float]]:
    """(wall, process CPU) seconds (each the best of ``reps``) of each network's pass in this process, computed the
    ``mode`` way."""
    import os

    from devil_dataset.core.networks import inception, lpips, precision, raft
    from devil_dataset.eval.kernels import frechet
    from devil_dataset.eval.metrics import i3d as i3d_metrics

    if mode == "before":  # the whole batch in one pass on torch's default threads; BLAS on its default threads
        precision.NETWORK_CPU_THREADS = os.cpu_count() or 1
        frechet.FRECHET_BLAS_THREADS = os.cpu_count() or 1
        whole = lambda n, device, batch: [slice(0, n)] if n else []  # noqa: E731
        for module in (lpips, inception, raft, i3d_metrics):
            module.sample_batches = whole  # type: ignore[attr-defined]
    w, h = size
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 256, (11, h, w, 3), dtype=np.uint8)
    comp = gt.copy()
    comp[:, h // 3: 2 * h // 3, w // 3: 2 * w // 3] = rng.integers(0, 256, (11, 2 * h // 3 - h // 3,
                                                                         2 * w // 3 - w // 3, 3))
    lp = LPIPSNetwork("cpu", random_alexnet_state())
    fid = FIDInception("cpu", random_inception_state())
    net = load_i3d("cpu", random_i3d_state())
    rf = RAFTFlow("cpu", random_raft_state())
    video = VideoSample("bench", gt, comp, np.zeros(gt.shape[:3], bool))
    feats = np.abs(rng.normal(size=(4096, 2048))).astype(np.float32)  # pool3-like: non-negative

    def statistics() -> None:  # before: float64 sums per batch of 8 (the former GaussianStats); now: exact sums
        if mode == "before":
            s1, s2 = np.zeros(2048), np.zeros((2048, 2048))
            for i in range(0, len(feats), 8):
                x = feats[i:i + 8].astype(np.float64)
                s1 += x.sum(axis=0)
                s2 += x.T @ x
        else:
            stats = M.GaussianStats()
            for i in range(0, len(feats), 8):
                stats.add(feats[i:i + 8])
            stats.cov()

    sigma = np.cov(feats[:3000].astype(np.float64), rowvar=False)
    calls = {"LPIPS (8 frame pairs)": lambda: lp.distance(gt[:8], comp[:8]),
             "FID Inception (8 frames)": lambda: fid.features(gt[:8]),
             "I3D PVCS (2 windows)": lambda: M.I3DVideoPass(net, video, "cpu", 2),
             "RAFT (2 pairs)": lambda: rf.flow_batch(gt[:2], gt[1:3]),
             "FID statistics (4096 x 2048-d)": statistics,
             "Frechet distance (2048-d)": lambda: M.frechet_distance(sigma[0] * 0, sigma, sigma[1] * 0, sigma * 1.1)}
    return {name: _timed(fn, reps) for name, fn in calls.items()}


def print_arithmetic_section(reps: int, size: tuple[int, int]) -> None:
    """Run :func:`_arithmetic_child` in a fresh process per mode and print the times and ratios."""
    import json
    import os
    import subprocess

    from devil_dataset.core.cpu_pins import AVX2_PINS, pin_level, pinned_environment
    from devil_dataset.core.networks.portable import NETWORK_KERNELS_ENV

    times = {}
    for mode in ARITHMETIC_MODES:
        env = {k: v for k, v in os.environ.items() if k not in AVX2_PINS and k != NETWORK_KERNELS_ENV}
        if mode in ("before", "fixed"):
            env["DEVIL_FAST_SIMD"] = "1"
        else:
            env.pop("DEVIL_FAST_SIMD", None)
        if mode == "pinned":  # the pinned path: the pins with oneDNN's and MKL's own kernels
            env[NETWORK_KERNELS_ENV] = "native"
        if mode in ("pinned", "portable"):  # the child imports torch first: its pins come with its start
            env.update(pinned_environment(env))
        out = subprocess.run([sys.executable, __file__, "--arithmetic-child", mode, "--reps", str(reps),
                              "--arithmetic-size", f"{size[0]}x{size[1]}"], env=env, capture_output=True, text=True,
                             check=True)
        times[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{size[0]}x{size[1]}, CPU, wall seconds best of {reps}; pins here: {pin_level()[1]}")
    print("portable/pinned also in process CPU seconds (both one thread: robust to other load on the machine)")
    print(f"{'network':28s} {'before':>9s} {'fixed':>9s} {'pinned':>9s} {'portable':>9s}  fixed/before  "
          "pinned/before  portable/pinned  (CPU)")
    for name in times["before"]:
        b, f, p, q = (times[m][name][0] for m in ARITHMETIC_MODES)
        cpu = times["portable"][name][1] / times["pinned"][name][1]
        print(f"{name:28s} {b:9.3f} {f:9.3f} {p:9.3f} {q:9.3f}  {f / b:12.2f}  {p / b:13.2f}  {q / p:15.2f}"
              f"  {cpu:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer frames/windows, skip the Frechet timing")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--video-frames", type=int, default=0, help="also time a whole-video VFID pass of this many frames")
    ap.add_argument("--batch", type=int, default=0,
                    help="frames per 2-D network batch and 4x the I3D window pairs (default 8 / 2, as EvalOptions)")
    ap.add_argument("--precision", action="store_true",
                    help="run the precision section (tf32 and bf16 vs float32: deviation, metric values, speed) "
                    "instead of the speed section")
    ap.add_argument("--precision-size", type=_size, default=None, metavar="WxH",
                    help=f"frame size of the precision section (default {PRECISION_CPU_SIZE[0]}x"
                    f"{PRECISION_CPU_SIZE[1]} on a CPU, {W}x{H} on CUDA)")
    ap.add_argument("--arithmetic", action="store_true",
                    help="run the arithmetic section (cost of one thread, one sample per pass and the AVX2 pins)")
    ap.add_argument("--arithmetic-child", choices=ARITHMETIC_MODES, help=argparse.SUPPRESS)
    ap.add_argument("--arithmetic-size", type=_size, default=(W, H), metavar="WxH",
                    help=f"frame size of the arithmetic section (default {W}x{H})")
    ap.add_argument("--reps", type=int, default=2, help="timed repetitions of the arithmetic section (best kept)")
    args = ap.parse_args()
    if args.arithmetic_child:
        import json

        print(json.dumps(_arithmetic_child(args.arithmetic_child, args.reps, args.arithmetic_size)))
        return
    if args.arithmetic:
        print_arithmetic_section(args.reps, args.arithmetic_size)
        return
    if args.precision:
        cuda = torch.device(args.device).type == "cuda"
        size = args.precision_size or ((W, H) if cuda else PRECISION_CPU_SIZE)
        frames = args.batch or (8 if cuda else (2 if args.quick else 4))
        if not cuda:  # one thread: CPU seconds without the spin-waits of threads descheduled on a shared machine
            torch.set_num_threads(1)
        print(f"torch {torch.__version__}, threads {torch.get_num_threads()}; times: "
              f"{'wall' if cuda else 'process CPU'} seconds")
        print_precision_section(args.device, size, frames=frames, fid_frames=64 if cuda else 2 * frames,
                                pairs=max(2, frames // 4) if cuda else 2, raft_pairs=frames if cuda else 1)
        return
    n = args.batch or (4 if args.quick else 8)
    pairs = max(1, args.batch // 4) if args.batch else (1 if args.quick else 2)
    rng = np.random.default_rng(0)
    gt = rng.integers(0, 256, (max(n, pairs + 9), H, W, 3), dtype=np.uint8)
    comp = gt.copy()
    comp[:, 160:320, 300:500] = rng.integers(0, 256, (len(gt), 160, 200, 3), dtype=np.uint8)
    print(f"device {args.device}, {W}x{H}, torch {torch.__version__}, threads {torch.get_num_threads()}")

    # LPIPS
    lp = LPIPSNetwork(args.device, random_alexnet_state())
    dt, cpu = _timed(lambda: lp.distance(gt[:n], comp[:n]))
    print(f"LPIPS (AlexNet v0.1)      : {n / dt:8.2f} frame pairs/s   {cpu / n:7.2f} CPU-s per pair (batch {n})")

    # FID features: ours vs pytorch-fid's InceptionV3 forward with the same weights
    state = random_inception_state()
    ours = FIDInception(args.device, state)
    from pytorch_fid import inception as pfi

    orig = pfi.load_state_dict_from_url
    pfi.load_state_dict_from_url = lambda *a, **k: state
    try:
        ref = pfi.InceptionV3([3]).eval().to(args.device)
    finally:
        pfi.load_state_dict_from_url = orig

    def ref_pass() -> np.ndarray:
        with torch.no_grad():
            x = torch.from_numpy(gt[:n]).to(args.device).permute(0, 3, 1, 2).float() / 255.0
            return ref(x)[0].flatten(1).cpu().numpy()

    # interleaved repetitions, best of each: robust to other processes sharing the CPU
    (dt_ours, cpu_ours), (dt_ref, cpu_ref) = _best_interleaved(lambda: ours.features(gt[:n]), ref_pass,
                                                                reps=1 if args.quick else 2)
    np.testing.assert_allclose(ours.features(gt[:n]), ref_pass(), rtol=1e-4, atol=1e-5)
    print(f"FID Inception features    : {n / dt_ours:8.2f} frames/s        {cpu_ours / n:7.2f} CPU-s per frame; "
          f"pytorch-fid {n / dt_ref:.2f} frames/s, {cpu_ref / n:.2f} CPU-s per frame; ratio (CPU time) "
          f"{cpu_ref / cpu_ours:.2f}x, (wall) {dt_ref / dt_ours:.2f}x; features equal")

    # I3D windows (PVCS + VFID clips share one pass)
    net = load_i3d(args.device, random_i3d_state())
    video = VideoSample("bench", gt[: pairs + 9], comp[: pairs + 9], np.zeros(gt[: pairs + 9].shape[:3], bool))
    dt, cpu = _timed(lambda: M.I3DVideoPass(net, video, args.device, pairs))
    print(f"I3D PVCS windows          : {pairs / dt:8.3f} windows/s  {cpu / pairs:7.1f} CPU-s per window pair "
          f"(= per frame of a clip; {pairs} GT+composite pairs per batch)")
    if args.video_frames:
        clip = np.resize(gt, (args.video_frames, H, W, 3))
        v = VideoSample("long", clip, clip, np.zeros(clip.shape[:3], bool))
        p = M.I3DVideoPass.__new__(M.I3DVideoPass)
        p.net, p.device = net, torch.device(args.device)
        p.gt_u8 = torch.as_tensor(v.gt).to(p.device)
        dt, cpu = _timed(lambda: p._video_feature(p.gt_u8))
        print(f"I3D whole-video (VFID)    : {args.video_frames / dt:8.2f} frames/s  {cpu / args.video_frames:7.2f} "
              f"CPU-s per frame ({args.video_frames} frames)")

    if not args.quick:
        x = rng.normal(size=(4000, 2048))
        y = x[:, ::-1] * 1.1 + 0.1
        stats = (x.mean(0), np.cov(x, rowvar=False), y.mean(0), np.cov(y, rowvar=False))
        dt, cpu = _run(lambda: M.frechet_distance(*stats))
        print(f"Frechet distance 2048-d   : {dt:8.2f} s wall, {cpu:.1f} CPU-s (scipy.linalg.sqrtm, as the release)")


if __name__ == "__main__":
    main()
