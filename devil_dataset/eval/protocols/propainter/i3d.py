"""The ProPainter / E2FGVI protocol's VFID features (``docs/propainter-protocol.md``): one I3D vector per
whole video, the network's BatchNorm in the mode the parity names.

Their evaluation (sczhou/ProPainter ``core/metrics.py``, MCG-NKU/E2FGVI the same) feeds each whole video alone
(a batch of one; the ground truth and the composite in separate passes) as float [1, 3, T, H, W] in [0, 1] (uint8
/ 255, no normalisation), takes I3D's ``Mixed_5c`` output and averages it over W, H and T (in that order): a
1024-d vector per video. Their script never calls ``eval()`` on the I3D, so every BatchNorm normalises with the
statistics of the video in the batch (``batch_norm="video"``, parity ``release``); ``batch_norm="running"``
(parity ``corrected``) uses the checkpoint's running statistics, as DEVIL's own VFID does. The network object is
shared with DEVIL's metrics: :func:`video_batch_statistics` switches its BatchNorm layers for one pass and restores
them, and never updates their running statistics.

    >>> import numpy as np
    >>> from devil_dataset.core.networks.i3d import load_i3d, random_i3d_state
    >>> net = load_i3d("cpu", random_i3d_state(0))
    >>> frames = np.random.default_rng(0).integers(0, 256, (8, 64, 64, 3), dtype=np.uint8)
    >>> video_feature(net, frames, "video").shape, video_feature(net, frames, "running").dtype
    ((1024,), dtype('float64'))
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ....core.errors import UnknownNameError

#: BatchNorm modes of the VFID pass, per parity: ``release`` = their script (the network left in training mode:
#: each video's own statistics), ``corrected`` = eval mode (the checkpoint's running statistics).
BATCH_NORM_OF_PARITY: dict[str, str] = {"release": "video", "corrected": "running"}
BATCH_NORM_MODES: dict[str, str] = {
    "video": "training mode: each video normalised with its own statistics (their script never calls eval())",
    "running": "eval mode: the checkpoint's running statistics",
}
#: The layer their ``extract_features(x, 'Logits')`` ends at (the loop over end points stops after it).
FEATURE_LAYER = "Mixed_5c"


@contextlib.contextmanager
def video_batch_statistics(net: Any) -> Iterator[None]:
    """Inside the block every BatchNorm layer of ``net`` normalises with the statistics of its input (training mode)
    without touching its running statistics (``track_running_stats`` off); both are restored afterwards."""
    from torch import nn

    layers = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [(m.training, m.track_running_stats) for m in layers]
    try:
        for m in layers:
            m.train()
            m.track_running_stats = False
        yield
    finally:
        for m, (training, track) in zip(layers, saved):
            m.train(training)
            m.track_running_stats = track


def video_feature(net: Any, frames: np.ndarray, batch_norm: str, device: str = "cpu") -> np.ndarray:
    """The VFID vector of one whole video: uint8 [T, H, W, 3] RGB -> float64 [1024], ``Mixed_5c`` averaged over W,
    H, T, the video alone in the batch, BatchNorm per ``batch_norm`` (:data:`BATCH_NORM_MODES`)."""
    import torch

    from ....core.networks.precision import network_threads

    if batch_norm not in BATCH_NORM_MODES:
        raise UnknownNameError(f"unknown batch_norm {batch_norm!r}; valid: {', '.join(BATCH_NORM_MODES)}")
    dev = torch.device(device)
    x = torch.from_numpy(np.ascontiguousarray(frames)).to(dev).permute(3, 0, 1, 2)[None].float().div_(255.0)
    mode = video_batch_statistics(net) if batch_norm == "video" else contextlib.nullcontext()
    with torch.inference_mode(), network_threads(dev), mode:
        act = net.endpoints(x, (FEATURE_LAYER,))[0]
        return act.mean(4).mean(3).mean(2)[0].double().cpu().numpy()


__all__ = ["BATCH_NORM_MODES", "BATCH_NORM_OF_PARITY", "FEATURE_LAYER", "video_batch_statistics", "video_feature"]
