"""RAFT optical flow (torchvision ``raft_large``, C_T_SKHT_V2 weights from our cache).

Same convention as :func:`devil_dataset.core.flow.dis_flow`: flow [H, W, 2] (dx, dy) from frame0 to frame1 with
frame0(p) ~ frame1(p + flow(p)). Inputs are uint8 RGB; they are scaled to [-1, 1] as torchvision's
``OpticalFlow`` preset does, replicate-padded to a multiple of 8 (and to at least 128x128, the smallest size
torchvision's RAFT accepts) and the flow is cropped back. ``precision`` (float32, the reference; tf32; bf16:
:mod:`devil_dataset.core.networks.precision`) applies to the network's pass; flows are float32.

    >>> import numpy as np
    >>> raft = RAFTFlow(state=random_raft_state(seed=0))
    >>> raft.flow(np.zeros((64, 64, 3), np.uint8), np.zeros((64, 64, 3), np.uint8)).shape
    (64, 64, 2)
"""
from __future__ import annotations

import numpy as np
import torch  # noqa: TID253
import torch.nn.functional as F  # noqa: TID253

from ..weights import cached_network, load_state_dict
from .precision import check_precision, network_precision, precision_view, sample_batches  # noqa: TID253

# torchvision's default number of refinement iterations for raft_large.
RAFT_ITERATIONS = 12
RAFT_DIVISOR = 8  # RAFT works at 1/8 resolution
RAFT_MIN_SIZE = 128  # torchvision's correlation pyramid needs feature maps of at least 16x16


def random_raft_state(seed: int = 0) -> dict[str, torch.Tensor]:
    """A raft_large state dict with seeded random weights (tests only)."""
    from torchvision.models.optical_flow import raft_large

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return raft_large(weights=None).state_dict()


class RAFTFlow:
    """Batched RAFT flow between uint8 RGB frames, computed in ``precision``
    (:func:`~devil_dataset.core.networks.precision.network_precision`)."""

    def __init__(self, device: str = "cpu", state: dict[str, torch.Tensor] | None = None,
                 iterations: int = RAFT_ITERATIONS, precision: str = "float32") -> None:
        from torchvision.models.optical_flow import raft_large


        self.precision = check_precision(precision, prefix="RAFTFlow: ")
        self._views: dict[str, RAFTFlow] = {precision: self}
        if state is None:
            state = load_state_dict("raft")
        model = raft_large(weights=None)
        model.load_state_dict(state, strict=True)
        self.model = model.eval().to(device)
        self.device = torch.device(device)
        self.iterations = iterations

    @torch.inference_mode()
    def flow_batch(self, frames0: np.ndarray, frames1: np.ndarray) -> np.ndarray:
        """Flows float32 [N, H, W, 2] from ``frames0[i]`` to ``frames1[i]`` (uint8 [N, H, W, 3])."""
        x0 = _prepare(frames0, self.device)
        x1 = _prepare(frames1, self.device)
        h, w = x0.shape[-2:]
        ph = max(RAFT_MIN_SIZE, h + (-h) % RAFT_DIVISOR) - h
        pw = max(RAFT_MIN_SIZE, w + (-w) % RAFT_DIVISOR) - w
        if ph or pw:
            pad = (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2)
            x0, x1 = F.pad(x0, pad, mode="replicate"), F.pad(x1, pad, mode="replicate")
        flows = []
        for s in sample_batches(len(x0), self.device, len(x0)):  # on the CPU one pair per pass
            with network_precision(self.precision, self.device):
                flows.append(self.model(x0[s], x1[s], num_flow_updates=self.iterations)[-1])
        flow = torch.cat(flows)
        if ph or pw:
            flow = flow[..., ph // 2: ph // 2 + h, pw // 2: pw // 2 + w]
        return flow.permute(0, 2, 3, 1).float().cpu().numpy()

    def at_precision(self, precision: str) -> "RAFTFlow":
        """This network (the same model object, nothing reloaded) computing in ``precision``; one view per
        precision, so asking twice gives the same object.

        >>> raft = RAFTFlow(state=random_raft_state(seed=0))
        >>> bf = raft.at_precision("bf16")
        >>> bf.precision, bf.model is raft.model, bf is raft.at_precision("bf16"), bf.at_precision("float32") is raft
        ('bf16', True, True, True)
        """
        return precision_view(self, self._views, precision, "RAFTFlow")

    def flow(self, frame0: np.ndarray, frame1: np.ndarray) -> np.ndarray:
        """Flow [H, W, 2] from one uint8 RGB frame to another."""
        return self.flow_batch(frame0[None], frame1[None])[0]


def _prepare(frames: np.ndarray, device: torch.device) -> torch.Tensor:
    t = torch.as_tensor(np.ascontiguousarray(frames)).to(device)
    return (t.permute(0, 3, 1, 2).float() / 255.0) * 2.0 - 1.0


def cached_raft(device: str = "cpu", precision: str = "float32") -> RAFTFlow:
    """One RAFT model per (device, weights file) per process (loading takes a while), seen through one view per
    ``precision`` (:meth:`RAFTFlow.at_precision`): a flow never comes from another precision's pass."""

    check_precision(precision, prefix="cached_raft: ")
    return cached_network("raft", device, lambda: RAFTFlow(device)).at_precision(precision)
