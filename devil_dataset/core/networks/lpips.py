"""LPIPS (AlexNet, v0.1 linear heads) through the ``lpips`` package, with the backbone from our weights cache.

the release's metrics: AlexNet, LPIPS v0.1 linear heads, inputs scaled to [-1, 1], full frame, frame mean. The release
(video-inpainting-evaluation ``lpips_computer.py``) feeds ``(uint8 / 255) * 2 - 1`` per frame; so do we.

The ``lpips`` package would download torchvision's ImageNet AlexNet; we build it with a random trunk
(``pnet_rand=True``, no download) and load the torchvision AlexNet state dict from the cache instead. The
linear heads are the ones shipped in the ``lpips`` wheel.

    >>> import numpy as np, torch
    >>> net = LPIPSNetwork(backbone_state=random_alexnet_state(seed=0))
    >>> a = np.zeros((2, 64, 64, 3), np.uint8)
    >>> net.distance(a, a).tolist()
    [0.0, 0.0]
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import torch  # noqa: TID253

from ..weights import load_state_dict
from .precision import check_precision, network_precision, sample_batches  # noqa: TID253

# LPIPS v0.1 on AlexNet (the release's metrics).
LPIPS_NET = "alex"
LPIPS_VERSION = "0.1"
# torchvision AlexNet ``features`` indices that lpips' slices hold: slice k keeps features[lo:hi].
_ALEX_SLICES = ((1, 0, 2), (2, 2, 5), (3, 5, 8), (4, 8, 10), (5, 10, 12))


def random_alexnet_state(seed: int = 0) -> dict[str, torch.Tensor]:
    """A torchvision AlexNet state dict with seeded random weights (tests and benchmarks only)."""
    import torchvision

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torchvision.models.alexnet(weights=None).state_dict()


def alexnet_features_to_lpips(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename torchvision AlexNet keys (``features.3.weight``) to lpips trunk keys (``net.slice2.3.weight``).

    >>> sorted(alexnet_features_to_lpips({"features.3.weight": 1, "classifier.1.weight": 2}))
    ['net.slice2.3.weight']
    """
    out = {}
    for key, value in state.items():
        parts = key.split(".")
        if parts[0] != "features":
            continue
        idx = int(parts[1])
        for k, lo, hi in _ALEX_SLICES:
            if lo <= idx < hi:
                out[f"net.slice{k}.{idx}.{'.'.join(parts[2:])}"] = value
    return out


def lpips_heads_path() -> Path:
    """The v0.1 AlexNet linear heads shipped inside the lpips wheel."""
    import lpips

    return Path(os.path.dirname(lpips.__file__)) / "weights" / f"v{LPIPS_VERSION}" / f"{LPIPS_NET}.pth"


class LPIPSNetwork:
    """LPIPS distance between uint8 RGB frames [N, H, W, 3]; one value per frame.

    ``backbone_state``: a torchvision AlexNet state dict; default: the cached ``alexnet`` weights. ``precision``:
    the arithmetic of :meth:`distance` (:func:`~devil_dataset.core.networks.precision.network_precision`).
    """

    def __init__(self, device: str = "cpu", backbone_state: dict[str, torch.Tensor] | None = None,
                 precision: str = "float32") -> None:
        import lpips


        self.precision = check_precision(precision, prefix="LPIPSNetwork: ")
        if backbone_state is None:
            backbone_state = load_state_dict("alexnet")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchvision's 'pretrained' deprecation inside lpips
            model = lpips.LPIPS(pretrained=True, net=LPIPS_NET, version=LPIPS_VERSION, pnet_rand=True, verbose=False)
        trunk = alexnet_features_to_lpips(backbone_state)
        expected = {k for k in model.state_dict() if k.startswith("net.")}
        if set(trunk) != expected:
            raise ValueError(f"AlexNet state dict does not fit lpips' trunk: got {sorted(trunk)[:4]}..., "
                             f"expected {sorted(expected)[:4]}...")
        model.load_state_dict(trunk, strict=False)
        self.model = model.eval().to(device)
        self.device = torch.device(device)
        if self.device.type == "cpu":
            self.model.to(memory_format=torch.channels_last)  # oneDNN NHWC convolutions

    @torch.inference_mode()
    def distance(self, frames0: np.ndarray | torch.Tensor, frames1: np.ndarray | torch.Tensor) -> np.ndarray:
        """Per-frame LPIPS (float64 [N]) between two uint8 [N, H, W, 3] stacks, computed in ``self.precision``;
        on the CPU one frame pair per pass (:func:`~devil_dataset.core.networks.precision.sample_batches`)."""
        x0 = _to_lpips_input(frames0, self.device)
        x1 = _to_lpips_input(frames1, self.device)
        out = []
        for s in sample_batches(len(x0), self.device, len(x0)):
            with network_precision(self.precision, self.device):
                out.append(self.model(x0[s], x1[s]).reshape(-1).double().cpu())
        return torch.cat(out).numpy() if out else np.zeros(0)


def _to_lpips_input(frames: np.ndarray | torch.Tensor, device: torch.device) -> torch.Tensor:
    """uint8 [N, H, W, 3] -> float32 [N, 3, H, W] in [-1, 1], as the release: (x / 255) * 2 - 1."""
    t = torch.as_tensor(frames).to(device)
    return (t.permute(0, 3, 1, 2).float() / 255.0) * 2.0 - 1.0
