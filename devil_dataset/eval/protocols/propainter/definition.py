"""ProPainter / E2FGVI's protocol as the registry reads it: result keys, layout, metrics and what each needs, parity
modes and the papers' DAVIS / YouTube-VOS table (``docs/propainter-protocol.md``).

    >>> PROTOCOL.key("ewarp").arrow, PROTOCOL.default_metrics
    ('▼', ('psnr', 'ssim', 'vfid'))
"""
from __future__ import annotations

from ....core.weights import verify_cached
from ...metrics.metric import EvalOptions
from ..declaration import EvaluationProtocol, InputLayout, PaperTable, ResultKey

#: The protocol's metrics: per frame, frame-weighted (``psnr``, ``ssim`` and the hole-only ``hole_psnr``,
#: ``hole_ssim``); per dataset (``vfid``); per video, video-weighted (``ewarp``).
FRAME_METRICS: tuple[str, ...] = ("psnr", "ssim", "hole_psnr", "hole_ssim")
#: Per frame, frame-weighted, computed by a network (in the network pass).
NETWORK_FRAME_METRICS: tuple[str, ...] = ("hole_lpips",)
PROPAINTER_METRICS: tuple[str, ...] = (*FRAME_METRICS, *NETWORK_FRAME_METRICS, "vfid", "ewarp")
#: What their script prints (``Average Frame PSNR/SSIM/VFID``).
DEFAULT_PROPAINTER_METRICS: tuple[str, ...] = ("psnr", "ssim", "vfid")
#: The network weights each metric of the protocol needs (checked before any work).
METRIC_WEIGHTS: dict[str, tuple[str, ...]] = {"vfid": ("i3d",), "hole_lpips": ("alexnet",)}
#: The network a caller may inject for each metric (``evaluate_propainter(networks=...)``).
METRIC_NETWORK: dict[str, str] = {"vfid": "i3d", "hole_lpips": "lpips"}

#: The column groups papers print, in order.
DATASETS: tuple[str, ...] = ("DAVIS", "YouTube-VOS")
#: The metrics papers print in each group, in order (the other computed metrics follow them).
TABLE_KEYS: tuple[str, ...] = ("psnr", "ssim", "vfid", "ewarp")
#: Every metric of the protocol: its header, printed scale and digits (the direction is the key's).
COLUMNS: dict[str, tuple[str, float, int]] = {
    "psnr": ("PSNR", 1.0, 2),
    "ssim": ("SSIM", 1.0, 4),
    "vfid": ("VFID", 1.0, 3),
    "ewarp": ("E_warp (×10⁻³)", 1e3, 3),
    "hole_psnr": ("hole PSNR", 1.0, 2),
    "hole_ssim": ("hole SSIM", 1.0, 4),
    "hole_lpips": ("hole LPIPS", 1.0, 4),
}


def _weights_of(metric: str):
    def check(options: EvalOptions) -> None:
        for name in METRIC_WEIGHTS[metric]:
            verify_cached(name)
    return check


PROTOCOL = EvaluationProtocol(
    name="propainter",
    description="ProPainter / E2FGVI's DAVIS / YouTube-VOS table (PSNR, SSIM, VFID, E_warp) as their code computes it",
    keys=(ResultKey("psnr", True, ".2f", "PSNR"), ResultKey("ssim", True, ".4f", "SSIM"),
          ResultKey("hole_psnr", True, ".2f", "hole PSNR"), ResultKey("hole_ssim", True, ".4f", "hole SSIM"),
          ResultKey("hole_lpips", False, ".6f", "hole LPIPS"), ResultKey("vfid", False, ".4f", "VFID"),
          # sig4: four significant digits (an E_warp of 0.000512 prints 0.0005120): the papers' E_warp x 10^-3
          ResultKey("ewarp", False, "sig4", "E_warp")),
    layouts=(InputLayout("davis", ("gt_dir", "mask_dir", "pred_dir"),
                         "GT/JPEGImages/<video>/*.jpg, MASKS/<video>/00000.png ..., PRED/<video>/*.png at 432x240"),),
    metrics=PROPAINTER_METRICS,
    default_metrics=DEFAULT_PROPAINTER_METRICS,
    needs={m: _weights_of(m) for m in METRIC_WEIGHTS},
    parity_modes={"release": "their I3D BatchNorm in training mode for VFID (each video's own statistics)",
                  "corrected": "BatchNorm in eval mode (the running statistics)"},
    paper_table=PaperTable(DATASETS, TABLE_KEYS, COLUMNS, {"ewarp": r"$E_{warp}$ ($\times 10^{-3}$)"},
                           {"vfid": "VFID: one number per dataset, no interval"}),
    evaluate="devil_dataset.eval.protocols.propainter.run:evaluate_request",
)

__all__ = ["COLUMNS", "DATASETS", "DEFAULT_PROPAINTER_METRICS", "FRAME_METRICS", "METRIC_NETWORK", "METRIC_WEIGHTS",
           "NETWORK_FRAME_METRICS", "PROPAINTER_METRICS", "PROTOCOL", "TABLE_KEYS"]
