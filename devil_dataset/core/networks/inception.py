"""FID InceptionV3 pool3 features (2048-d) with pytorch-fid's network and the cached FID weights.

the release's metrics: InceptionV3 FID weights, 2048-d pool3, frames bilinearly resized to 299x299. The network is
pytorch-fid's ``fid_inception_v3`` structure (torchvision InceptionV3 skeleton with 1008 classes, no aux head,
and pytorch-fid's patched FIDInceptionA/C/E_1/E_2 blocks), built here without pytorch-fid's download; the
forward pass is pytorch-fid's ``InceptionV3`` with ``resize_input`` and ``normalize_input``: x / 255, bilinear
resize to 299x299 (align_corners=False), 2x - 1, blocks 0..3, global average pool. ``precision`` (float32, the
reference; tf32; bf16: :mod:`devil_dataset.core.networks.precision`) applies to that pass; features are float32.

    >>> import numpy as np
    >>> net = FIDInception(state=random_inception_state(seed=0))
    >>> net.features(np.zeros((1, 64, 64, 3), np.uint8)).shape
    (1, 2048)
"""
from __future__ import annotations

import warnings

import numpy as np
import torch  # noqa: TID253
import torch.nn.functional as F  # noqa: TID253
from torch import nn  # noqa: TID253

from ..weights import load_state_dict
from .precision import check_precision, network_precision, sample_batches  # noqa: TID253

# The release's metrics: frames are bilinearly resized to the Inception input size.
FID_INPUT_SIZE = 299
FID_DIMS = 2048


def build_fid_inception() -> nn.Module:
    """pytorch-fid's FID InceptionV3 structure with uninitialised-by-download (default-initialised) weights."""
    import torchvision
    from pytorch_fid import inception as pfi

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = torchvision.models.inception_v3(num_classes=1008, aux_logits=False, weights=None, init_weights=False)
    net.Mixed_5b = pfi.FIDInceptionA(192, pool_features=32)
    net.Mixed_5c = pfi.FIDInceptionA(256, pool_features=64)
    net.Mixed_5d = pfi.FIDInceptionA(288, pool_features=64)
    net.Mixed_6b = pfi.FIDInceptionC(768, channels_7x7=128)
    net.Mixed_6c = pfi.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6d = pfi.FIDInceptionC(768, channels_7x7=160)
    net.Mixed_6e = pfi.FIDInceptionC(768, channels_7x7=192)
    net.Mixed_7b = pfi.FIDInceptionE_1(1280)
    net.Mixed_7c = pfi.FIDInceptionE_2(2048)
    return net


def random_inception_state(seed: int = 0) -> dict[str, torch.Tensor]:
    """A state dict for :func:`build_fid_inception` with seeded random weights (tests and benchmarks only).

    BatchNorm statistics are randomised too so that the parity tests exercise them.
    """
    from .random_weights import seeded_random_state

    return seeded_random_state(build_fid_inception, seed)


class FIDInception(nn.Module):
    """Pool3 features of the FID Inception for uint8 RGB frames [N, H, W, 3] (one batch; callers chunk).

    ``state``: a state dict in pytorch-fid's layout; default: the cached ``inception`` weights. ``precision``: the
    arithmetic of :meth:`features` (:func:`~devil_dataset.core.networks.precision.network_precision`).
    """

    def __init__(self, device: str = "cpu", state: dict[str, torch.Tensor] | None = None,
                 precision: str = "float32") -> None:
        super().__init__()

        self.precision = check_precision(precision, prefix="FIDInception: ")
        if state is None:
            state = load_state_dict("inception")
        net = build_fid_inception()
        net.load_state_dict(state, strict=True)
        # pytorch-fid's InceptionV3 blocks 0..3 (block boundaries at the max pools and the final average pool)
        layer = net.get_submodule  # the child modules themselves (typed as modules, unlike attribute access)
        self.blocks = nn.Sequential(
            layer("Conv2d_1a_3x3"), layer("Conv2d_2a_3x3"), layer("Conv2d_2b_3x3"),
            nn.MaxPool2d(kernel_size=3, stride=2),
            layer("Conv2d_3b_1x1"), layer("Conv2d_4a_3x3"), nn.MaxPool2d(kernel_size=3, stride=2),
            layer("Mixed_5b"), layer("Mixed_5c"), layer("Mixed_5d"), layer("Mixed_6a"), layer("Mixed_6b"),
            layer("Mixed_6c"), layer("Mixed_6d"), layer("Mixed_6e"), layer("Mixed_7a"), layer("Mixed_7b"),
            layer("Mixed_7c"), nn.AdaptiveAvgPool2d(output_size=(1, 1)),
        )
        self.device = torch.device(device)
        self.eval().to(self.device)
        if self.device.type == "cpu":
            # oneDNN NHWC: ~30% less CPU time, same values ~1e-6. (Module.to accepts memory_format=; torch's type
            # stubs omit that overload.)
            self.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """float [N, 3, H, W] in [0, 1] -> [N, 2048] (pytorch-fid's resize and normalisation)."""
        x = F.interpolate(x, size=(FID_INPUT_SIZE, FID_INPUT_SIZE), mode="bilinear", align_corners=False)
        x = 2 * x - 1
        return self.blocks(x).flatten(1)

    @torch.inference_mode()
    def features(self, frames: np.ndarray | torch.Tensor) -> np.ndarray:
        """float32 [N, 2048] features of uint8 frames [N, H, W, 3], computed in ``self.precision``; on the CPU one
        frame per pass (:func:`~devil_dataset.core.networks.precision.sample_batches`)."""
        t = torch.as_tensor(frames).to(self.device)
        x = t.permute(0, 3, 1, 2).float() / 255.0
        out = []
        for s in sample_batches(len(x), self.device, len(x)):
            with network_precision(self.precision, self.device):
                out.append(self.forward(x[s]).float().cpu())
        return torch.cat(out).numpy() if out else np.zeros((0, FID_DIMS), np.float32)
