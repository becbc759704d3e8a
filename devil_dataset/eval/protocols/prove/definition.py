"""PROVE's removal protocol as the registry reads it: RC-S / RC-T (DINOv2) and the background / masked PSNR / SSIM
against the input, the three folders it reads, what each metric needs, parity modes and its removal table
(``docs/removal.md``).

    >>> PROTOCOL.key("rc_s").arrow, PROTOCOL.key("rc_t").arrow, PROTOCOL.default_metrics[:2]
    ('▲', '▼', ('rc_s', 'rc_t'))
"""
from __future__ import annotations

import importlib

from ...metrics.metric import EvalOptions
from ...metrics.registry import METRICS, MetricEntry
from ..declaration import EvaluationProtocol, InputLayout, PaperTable, ResultKey

#: RC-S / RC-T: the reference-free metrics, through DINOv2 (their names are their result keys).
REMOVAL_METRICS: tuple[str, ...] = ("rc_s", "rc_t")
#: RC-S / RC-T's metric classes (xiaomi-research/prove utils/metrics.py; ``docs/removal.md``): RC-S, the fill against
#: its surroundings (higher is better), RC-T, the fill between consecutive frames (lower is better). The registry adds
#: them to the metric table, before the background metrics (the report's column order).
METRIC_CLASSES: tuple[MetricEntry, ...] = (
    MetricEntry("rc_s", f"{__package__}.removal:RCSMetric", ("rc_s",), (True,), (".4f",), True),
    MetricEntry("rc_t", f"{__package__}.removal:RCTMetric", ("rc_t",), (False,), (".4f",), True),
)
#: The background / masked PSNR / SSIM against the input video (:mod:`devil_dataset.eval.metrics.removal_fidelity`).
FIDELITY_METRICS: tuple[str, ...] = ("bg_psnr", "bg_ssim", "masked_psnr", "masked_ssim")
#: The metrics of ``--protocol prove``; all are the defaults (RC-S / RC-T skipped with a note without DINOv2).
PROVE_METRICS: tuple[str, ...] = (*REMOVAL_METRICS, *FIDELITY_METRICS)
#: The removal table's columns: header, printed scale and digits.
COLUMNS: dict[str, tuple[str, float, int]] = {
    "rc_s": ("RC-S", 1.0, 4), "rc_t": ("RC-T", 1.0, 4), "bg_psnr": ("BG PSNR", 1.0, 2),
    "bg_ssim": ("BG SSIM", 1.0, 4), "masked_psnr": ("Masked PSNR", 1.0, 2), "masked_ssim": ("Masked SSIM", 1.0, 4),
}


def _dinov2(options: EvalOptions) -> None:
    """RC-S / RC-T need the DINOv2 model (loaded once per process and device: the run reuses it)."""
    importlib.import_module("devil_dataset.eval.protocols.prove.removal").dinov2_for(options)


PROTOCOL = EvaluationProtocol(
    name="prove",
    description="PROVE's object-removal evaluation without ground truth: RC-S, RC-T, background / masked fidelity",
    keys=tuple(ResultKey(k, hib, f, k) for e in (*METRIC_CLASSES, *(METRICS[n] for n in FIDELITY_METRICS))
               for k, hib, f in zip(e.keys, e.higher_is_better, e.formats)),
    layouts=(InputLayout("removal", ("input_dir", "pred_dir", "mask_dir"),
                         "IN/<name>.mp4 (or frame folders), RESULT/<name>.mp4, MASKS/<name>.mp4, matched by name"),),
    metrics=PROVE_METRICS,
    default_metrics=PROVE_METRICS,
    needs={m: _dinov2 for m in REMOVAL_METRICS},
    parity_modes={"release": "the MMDs in PROVE's float32", "corrected": "the MMDs in float64"},
    paper_table=PaperTable(
        (), ("rc_s", "rc_t", "bg_psnr", "bg_ssim", "masked_psnr", "masked_ssim"), COLUMNS,
        {"rc_s": "RC-S", "rc_t": "RC-T", "bg_psnr": "BG PSNR", "bg_ssim": "BG SSIM", "masked_psnr": "Masked PSNR",
         "masked_ssim": "Masked SSIM"},
        {"rc_s": "RC-S: the fill against its surroundings, RC-T: the fill between consecutive frames (PROVE, DINOv2 "
                 "patch features, MMD)",
         "bg_psnr": "BG: outside the mask against the input video; Masked: inside it; a result leaving the "
                    "background untouched has its PSNR capped at the one-grey-level PSNR 10 log10(N 255^2)"},
        arrows=("\u25b2", "\u25bc")),
    evaluate="devil_dataset.eval.protocols.prove.run:evaluate_request",
    notes="devil_dataset.eval.protocols.prove.run:removal_lines",
    metric_classes=METRIC_CLASSES,
    metric_classes_before="bg_psnr",
)

__all__ = ["COLUMNS", "FIDELITY_METRICS", "METRIC_CLASSES", "PROTOCOL", "PROVE_METRICS", "REMOVAL_METRICS"]
