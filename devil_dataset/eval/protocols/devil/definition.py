"""DEVIL's own protocol as the registry reads it: every metric class's result keys (the metric floor's; a class
another protocol declares is that protocol's) (the release's formats), read through
:mod:`devil_dataset.eval.scoring` from a built slice (dataset mode), or from the release's folders (directory mode)
through the one runner (:mod:`devil_dataset.eval.protocols.devil.run`).

    >>> PROTOCOL.key("psnr").title, PROTOCOL.key("warp_error_mask").arrow
    ('PSNR', '▼')
"""
from __future__ import annotations

from ...metrics.registry import DEVIL_METRICS, FLOOR_METRICS, METRICS
from ..declaration import EvaluationProtocol, InputLayout, ResultKey

#: Column titles of the report (paper Table 1 names); a key without one is titled by its name.
TITLES: dict[str, str] = {
    "psnr": "PSNR", "ssim": "SSIM", "lpips": "LPIPS", "pvcs": "PVCS", "fid": "FID", "vfid": "VFID",
    "vfid_clips": "VFID (clips)", "warp_error_mask": "Warp error (mask)", "pcons_psnr_mask": "PCons",
}

PROTOCOL = EvaluationProtocol(
    name="devil",
    description="DEVIL's protocol: the release's metrics over a slice of a built dataset or the release's folders",
    keys=tuple(ResultKey(k, hib, f, TITLES.get(k, k)) for e in (METRICS[n] for n in FLOOR_METRICS)
               for k, hib, f in zip(e.keys, e.higher_is_better, e.formats)),
    layouts=(InputLayout("dataset", ("dataset", "config", "predictions"), "a slice of a built DEVIL dataset"),
             InputLayout("directory", ("gt_dir", "pred_dir"), "the release's frame_%04d_gt/mask/pred.png folders",
                         evaluate="devil_dataset.eval.protocols.devil.run:evaluate_folders")),
    metrics=FLOOR_METRICS,
    default_metrics=DEVIL_METRICS,
    parity_modes={"release": "the release's SSIM data range 2, PVCS padding and slice-max clipping",
                  "corrected": "SSIM data range 1, each window's own padding, one-grey-level PSNR cap"},
)
