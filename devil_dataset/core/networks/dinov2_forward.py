"""DINOv2's forward pass as plain torch functions over the tensors of a ``model.safetensors``: the network of
PROVE's RC-S and RC-T (``docs/removal.md``), without importing ``transformers`` at run time.

Why not transformers' own ``Dinov2Model``: importing its module pulls transformers' model-loading machinery
(``modeling_utils``, ``torch._dynamo``, ``torch.distributed.tensor``), 4 to 6 s of a process that scores a few
videos in less. The pass below calls the same torch functions, in the same order, on the same tensors as
transformers' ``modeling_dinov2.py`` with eager attention (embeddings: the patch convolution, the CLS token, the
position embeddings interpolated bicubically to the grid; per layer: layer norm, q/k/v projections, ``q @ k^T`` times
``head_dim ** -0.5``, softmax, ``@ v``, the output projection, layer scale and residual, then layer norm, the MLP
(GELU) or SwiGLU FFN, layer scale and residual; a final layer norm), so inside
:func:`~devil_dataset.core.networks.portable.portable_arithmetic` it gives transformers' bits
(``tests/core/test_networks_dinov2_forward.py`` compares them on random models of several shapes; transformers is a
test dependency).

Tensor names are the Hub checkpoints' (``facebook/dinov2-*``, what ``save_pretrained`` writes):
``encoder.layer.N.attention.attention.{query,key,value}``, ``attention.output.dense``, ``mlp.fc1`` / ``mlp.fc2`` or
SwiGLU's ``mlp.weights_in`` (gate and up projections stacked) / ``mlp.weights_out``. The ``dinov2/`` prefix a
``Dinov2Backbone`` or a task model adds is accepted.

    >>> import torch
    >>> config = {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "patch_size": 14,
    ...           "image_size": 28, "mlp_ratio": 2}
    >>> g = torch.Generator().manual_seed(0)
    >>> tensors = {name: torch.randn(*shape, generator=g) for name, shape in expected_shapes(config).items()}
    >>> weights = Dinov2Weights.from_tensors(config, tensors)
    >>> dinov2_forward(weights, torch.zeros(1, 3, 28, 42)).shape  # CLS + a 2x3 grid of 8 channels
    torch.Size([1, 7, 8])
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import torch  # noqa: TID253
import torch.nn.functional as F  # noqa: TID253

from ..errors import WeightsCorruptError

#: ``config.json`` defaults of transformers' ``Dinov2Config`` (the fields the pass reads).
CONFIG_DEFAULTS: dict[str, Any] = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                                   "mlp_ratio": 4, "hidden_act": "gelu", "layer_norm_eps": 1e-6, "image_size": 224,
                                   "patch_size": 14, "num_channels": 3, "qkv_bias": True, "use_swiglu_ffn": False}
#: The activations the MLP of a DINOv2 checkpoint uses (``hidden_act``), as ``torch.nn.functional`` computes them.
ACTIVATIONS = {"gelu": F.gelu}
#: Prefixes a checkpoint may put before the backbone's tensor names (a ``Dinov2Backbone`` or a task model).
NAME_PREFIXES: tuple[str, ...] = ("", "dinov2.")


def _setting(config: Mapping[str, Any], name: str) -> Any:
    return config.get(name, CONFIG_DEFAULTS[name])


def swiglu_width(config: Mapping[str, Any]) -> int:
    """The hidden width of the SwiGLU FFN: two thirds of ``hidden_size * mlp_ratio``, rounded up to a multiple of 8
    (DINOv2's ``SwiGLUFFNFused``, transformers' ``Dinov2SwiGLUFFN``).

    >>> swiglu_width({"hidden_size": 1536, "mlp_ratio": 4})  # the giant's
    4096
    """
    width = int(_setting(config, "hidden_size") * _setting(config, "mlp_ratio"))
    return (int(width * 2 / 3) + 7) // 8 * 8


def expected_shapes(config: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """Every tensor the pass reads, by its checkpoint name, with its shape.

    >>> shapes = expected_shapes({"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2})
    >>> shapes["embeddings.position_embeddings"], shapes["encoder.layer.0.mlp.fc1.weight"], len(shapes)
    ((1, 257, 8), (32, 8), 24)
    """
    d = int(_setting(config, "hidden_size"))
    p = int(_setting(config, "patch_size"))
    grid = int(_setting(config, "image_size")) // p
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.cls_token": (1, 1, d), "embeddings.position_embeddings": (1, grid * grid + 1, d),
        "embeddings.patch_embeddings.projection.weight": (d, int(_setting(config, "num_channels")), p, p),
        "embeddings.patch_embeddings.projection.bias": (d,), "layernorm.weight": (d,), "layernorm.bias": (d,)}
    if _setting(config, "use_swiglu_ffn"):
        width = swiglu_width(config)
        mlp = {"mlp.weights_in.weight": (2 * width, d), "mlp.weights_in.bias": (2 * width,),
               "mlp.weights_out.weight": (d, width), "mlp.weights_out.bias": (d,)}
    else:
        width = int(d * _setting(config, "mlp_ratio"))
        mlp = {"mlp.fc1.weight": (width, d), "mlp.fc1.bias": (width,), "mlp.fc2.weight": (d, width),
               "mlp.fc2.bias": (d,)}
    per_layer: dict[str, tuple[int, ...]] = {"norm1.weight": (d,), "norm1.bias": (d,), "norm2.weight": (d,),
                                             "norm2.bias": (d,), "layer_scale1.lambda1": (d,),
                                             "layer_scale2.lambda1": (d,), "attention.output.dense.weight": (d, d),
                                             "attention.output.dense.bias": (d,), **mlp}
    for proj in ("query", "key", "value"):
        per_layer[f"attention.attention.{proj}.weight"] = (d, d)
        if _setting(config, "qkv_bias"):
            per_layer[f"attention.attention.{proj}.bias"] = (d,)
    for n in range(int(_setting(config, "num_hidden_layers"))):
        shapes.update({f"encoder.layer.{n}.{k}": v for k, v in per_layer.items()})
    return shapes


@dataclass
class Dinov2Weights:
    """A DINOv2's tensors (float32, by checkpoint name without prefix) and the ``config.json`` settings the pass
    reads; the interpolated position embeddings of each grid are kept once made."""

    config: dict[str, Any]
    tensors: dict[str, torch.Tensor]
    _positions: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict, repr=False)

    @classmethod
    def from_tensors(cls, config: Mapping[str, Any], tensors: Mapping[str, torch.Tensor],
                     source: str = "the tensors") -> Dinov2Weights:
        """The weights from a name -> tensor table, checked against :func:`expected_shapes` (a ``dinov2.`` prefix
        dropped, tensors cast to float32): a missing tensor or one of another shape is a
        :class:`~devil_dataset.core.errors.WeightsCorruptError` naming ``source`` and the first three."""
        config = {**CONFIG_DEFAULTS, **config}
        if config["hidden_act"] not in ACTIVATIONS:
            raise WeightsCorruptError(f"{source}: hidden_act {config['hidden_act']!r} is not a DINOv2 activation "
                                      f"({', '.join(ACTIVATIONS)})")
        wanted = expected_shapes(config)
        found: dict[str, torch.Tensor] = {}
        for name in wanted:
            tensor = next((tensors[p + name] for p in NAME_PREFIXES if p + name in tensors), None)
            if tensor is not None:
                found[name] = tensor
        bad = [n for n in wanted if n not in found or tuple(found[n].shape) != wanted[n]]
        if bad:
            raise WeightsCorruptError(
                f"{source}: lacks {len(bad)} tensor(s) of a {config['num_hidden_layers']}-layer DINOv2, or holds them "
                f"in another shape ({', '.join(bad[:3])}{' ...' if len(bad) > 3 else ''})")
        return cls(config, {n: t.to(torch.float32).contiguous() for n, t in found.items()})

    def to(self, device: str | torch.device) -> Dinov2Weights:
        """The weights on ``device``."""
        return Dinov2Weights(self.config, {n: t.to(device) for n, t in self.tensors.items()})

    def positions(self, grid_h: int, grid_w: int) -> torch.Tensor:
        """The position embeddings of a ``grid_h`` x ``grid_w`` patch grid, CLS first: the checkpoint's own when the
        grid is its square grid, else its patch embeddings resized bicubically (float32, ``align_corners=False``)
        to the grid, as transformers' ``Dinov2Embeddings.interpolate_pos_encoding`` does."""
        key = (grid_h, grid_w)
        if key not in self._positions:
            table = self.tensors["embeddings.position_embeddings"]
            count = table.shape[1] - 1
            if grid_h * grid_w == count and grid_h == grid_w:
                self._positions[key] = table
            else:
                side, dim = int(count ** 0.5), table.shape[-1]
                grid = table[:, 1:].reshape(1, side, side, dim).permute(0, 3, 1, 2)
                grid = F.interpolate(grid.to(torch.float32), size=(grid_h, grid_w), mode="bicubic",
                                     align_corners=False)
                self._positions[key] = torch.cat((table[:, :1], grid.permute(0, 2, 3, 1).view(1, -1, dim)), dim=1)
        return self._positions[key]


def read_dinov2_weights(folder: str | Path, config: Mapping[str, Any], weights_file: str = "model.safetensors"
                        ) -> Dinov2Weights:
    """The tensors of ``folder``'s safetensors file (read with ``safetensors``; no pickle), checked
    (:meth:`Dinov2Weights.from_tensors`). A file that cannot be read is a
    :class:`~devil_dataset.core.errors.WeightsCorruptError` naming it."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(folder) / weights_file
    try:
        tensors = load_file(str(path))
    except (OSError, ValueError, RuntimeError, SafetensorError) as exc:  # a damaged file
        raise WeightsCorruptError(f"{path}: cannot be read as a DINOv2 ({exc})") from None
    return Dinov2Weights.from_tensors(config, tensors, str(path))


def _attention(w: Mapping[str, torch.Tensor], prefix: str, x: torch.Tensor, heads: int) -> torch.Tensor:
    batch, length, dim = x.shape
    head_dim = dim // heads

    def project(name: str) -> torch.Tensor:
        at = f"{prefix}attention.attention.{name}"
        y = F.linear(x, w[f"{at}.weight"], w.get(f"{at}.bias"))
        return y.view(batch, length, -1, head_dim).transpose(1, 2)

    query, key, value = project("query"), project("key"), project("value")
    scores = torch.matmul(query, key.transpose(2, 3)) * head_dim ** -0.5
    out = torch.matmul(F.softmax(scores, dim=-1), value).transpose(1, 2).contiguous()
    out = out.reshape(batch, length, -1).contiguous()
    return F.linear(out, w[f"{prefix}attention.output.dense.weight"], w[f"{prefix}attention.output.dense.bias"])


def _feed_forward(weights: Dinov2Weights, prefix: str, x: torch.Tensor) -> torch.Tensor:
    w = weights.tensors
    if weights.config["use_swiglu_ffn"]:
        gate_w, up_w = w[f"{prefix}mlp.weights_in.weight"].chunk(2, dim=0)
        gate_b, up_b = w[f"{prefix}mlp.weights_in.bias"].chunk(2, dim=0)
        hidden = F.silu(F.linear(x, gate_w, gate_b)) * F.linear(x, up_w, up_b)
        return F.linear(hidden, w[f"{prefix}mlp.weights_out.weight"], w[f"{prefix}mlp.weights_out.bias"])
    hidden = ACTIVATIONS[weights.config["hidden_act"]](F.linear(x, w[f"{prefix}mlp.fc1.weight"],
                                                                 w[f"{prefix}mlp.fc1.bias"]))
    return F.linear(hidden, w[f"{prefix}mlp.fc2.weight"], w[f"{prefix}mlp.fc2.bias"])


def dinov2_forward(weights: Dinov2Weights, pixel_values: torch.Tensor) -> torch.Tensor:
    """The last hidden state (CLS token first, then the patch tokens row-major) of normalised pixels float32
    [N, C, H, W] (H and W multiples of the patch size): float32 [N, 1 + (H / p) * (W / p), hidden_size]."""
    w, config = weights.tensors, weights.config
    patch = int(config["patch_size"])
    batch, _, height, width = pixel_values.shape
    x = F.conv2d(pixel_values, w["embeddings.patch_embeddings.projection.weight"],
                 w["embeddings.patch_embeddings.projection.bias"], (patch, patch))
    x = x.flatten(2).transpose(1, 2)
    x = torch.cat((w["embeddings.cls_token"].expand(batch, -1, -1), x), dim=1)
    x = x + weights.positions(height // patch, width // patch)
    dim, eps, heads = x.shape[-1], float(config["layer_norm_eps"]), int(config["num_attention_heads"])
    for n in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{n}."
        h = F.layer_norm(x, (dim,), w[p + "norm1.weight"], w[p + "norm1.bias"], eps)
        x = _attention(w, p, h, heads) * w[p + "layer_scale1.lambda1"] + x
        h = F.layer_norm(x, (dim,), w[p + "norm2.weight"], w[p + "norm2.bias"], eps)
        x = _feed_forward(weights, p, h) * w[p + "layer_scale2.lambda1"] + x
    return F.layer_norm(x, (dim,), w["layernorm.weight"], w["layernorm.bias"], eps)


def patch_grid_of(hidden: torch.Tensor, height: int, width: int, patch: int) -> torch.Tensor:
    """The patch tokens of a last hidden state as a grid: float32 [N, H / p, W / p, C] (CLS dropped).

    >>> patch_grid_of(torch.zeros(2, 7, 5), 28, 42, 14).shape
    torch.Size([2, 2, 3, 5])
    """
    return hidden[:, 1:, :].reshape(hidden.shape[0], height // patch, width // patch, -1)


__all__ = ["ACTIVATIONS", "CONFIG_DEFAULTS", "NAME_PREFIXES", "Dinov2Weights", "dinov2_forward", "expected_shapes",
           "patch_grid_of", "read_dinov2_weights", "swiglu_width"]
