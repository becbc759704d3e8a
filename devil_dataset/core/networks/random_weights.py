"""Seeded random weights for the evaluation networks: offline parity tests and benchmarks use them.

Convolutions get Kaiming-normal weights and BatchNorm layers random affine parameters and running statistics,
so that a comparison with a reference implementation exercises every parameter.

    >>> import torch.nn as nn
    >>> a = seeded_random_state(lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)), seed=1)
    >>> b = seeded_random_state(lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)), seed=1)
    >>> all(bool((a[k] == b[k]).all()) for k in a)
    True
"""
from __future__ import annotations

from typing import Callable

import torch  # noqa: TID253
from torch import nn  # noqa: TID253


def seeded_random_state(build: Callable[[], nn.Module], seed: int = 0) -> dict[str, torch.Tensor]:
    """State dict of ``build()`` with seeded random convolution weights and BatchNorm parameters/statistics."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = build()
        for m in net.modules():
            if isinstance(m, nn.modules.conv._ConvNd):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            elif isinstance(m, nn.modules.batchnorm._BatchNorm):
                assert m.running_mean is not None and m.running_var is not None  # track_running_stats=True
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.1, 0.1)
        return net.state_dict()
