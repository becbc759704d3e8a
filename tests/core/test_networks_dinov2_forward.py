"""DINOv2's forward pass restated over the checkpoint's tensors: transformers' ``Dinov2Model`` bits (eager attention),
plainly and in the portable arithmetic, on random models of several shapes; the tensor checks; and a run that never
imports transformers."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import WeightsCorruptError
from devil_dataset.core.networks.dinov2 import PROCESSOR_DEFAULTS, preprocess, save_random_dinov2, transformers_quiet
from devil_dataset.core.networks.dinov2_forward import (
    Dinov2Weights,
    dinov2_forward,
    expected_shapes,
    read_dinov2_weights,
    swiglu_width,
)
from devil_dataset.core.networks.portable import portable_arithmetic

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("shape,size", [
    ({"hidden_size": 16, "layers": 2, "heads": 2}, (42, 56)),  # another grid than the checkpoint's: interpolated
    ({"hidden_size": 24, "layers": 1, "heads": 3, "image_size": 28}, (28, 28)),  # the checkpoint's own grid
    ({"hidden_size": 24, "layers": 2, "heads": 2, "use_swiglu_ffn": True}, (28, 42)),  # SwiGLU (the giant's FFN)
    ({"hidden_size": 16, "layers": 1, "heads": 2, "qkv_bias": False, "layerscale_value": 0.1}, (56, 28)),
])
@pytest.mark.parametrize("arithmetic", ["torch", "portable"])
def test_the_pass_gives_transformers_bits(tmp_path, shape, size, arithmetic):
    from transformers import Dinov2Model

    folder = save_random_dinov2(tmp_path / "m", **shape)
    config = json.loads((folder / "config.json").read_text())
    with transformers_quiet():
        reference = Dinov2Model.from_pretrained(str(folder), attn_implementation="eager").eval()
    weights = read_dinov2_weights(folder, config)
    rng = np.random.default_rng(3)
    pixels = preprocess([rng.integers(0, 256, (*size, 3), dtype=np.uint8)], PROCESSOR_DEFAULTS)
    mode = portable_arithmetic() if arithmetic == "portable" else contextlib.nullcontext()
    with torch.inference_mode(), mode:
        want = reference(pixel_values=pixels).last_hidden_state
        got = dinov2_forward(weights, pixels)
    assert got.shape == want.shape and torch.equal(got, want)
    assert float(got.abs().max()) > 0


def _tensors(config: dict) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {name: torch.randn(*shape, generator=g) for name, shape in expected_shapes(config).items()}


def test_a_missing_or_misshapen_tensor_is_named():
    config = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2}
    tensors = _tensors(config)
    del tensors["encoder.layer.1.norm2.weight"]
    tensors["layernorm.bias"] = torch.zeros(9)
    with pytest.raises(WeightsCorruptError, match=r"w\.safetensors: lacks 2 tensor\(s\) of a 2-layer DINOv2, or "
                                                  r"holds them in another shape \(layernorm\.bias, "
                                                  r"encoder\.layer\.1\.norm2\.weight\)"):
        Dinov2Weights.from_tensors(config, tensors, "w.safetensors")


def test_a_backbone_prefix_and_half_precision_are_read():
    """A task model's ``dinov2.`` prefix is dropped and float16 tensors become float32 (as ``from_pretrained`` with
    ``dtype=float32`` reads them)."""
    config = {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2}
    tensors = _tensors(config)
    prefixed = {f"dinov2.{k}": v.half() for k, v in tensors.items()}
    weights = Dinov2Weights.from_tensors(config, prefixed)
    assert all(t.dtype == torch.float32 for t in weights.tensors.values())
    assert torch.equal(weights.tensors["layernorm.weight"], tensors["layernorm.weight"].half().float())


def test_another_activation_is_refused():
    config = {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "hidden_act": "relu"}
    with pytest.raises(WeightsCorruptError, match="hidden_act 'relu' is not a DINOv2 activation"):
        Dinov2Weights.from_tensors(config, _tensors(config))


def test_swiglu_width_is_dinov2s():
    assert swiglu_width({"hidden_size": 24, "mlp_ratio": 4}) == 64  # int(96 * 2 / 3) = 64, a multiple of 8
    assert swiglu_width({"hidden_size": 10, "mlp_ratio": 4}) == 32  # int(40 * 2 / 3) = 26 -> 32


def test_a_damaged_file_is_named(tmp_path):
    folder = save_random_dinov2(tmp_path / "m", hidden_size=8, layers=1, heads=2)
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:len(data) // 2])
    config = json.loads((folder / "config.json").read_text())
    with pytest.raises(WeightsCorruptError, match=r"m/model\.safetensors: cannot be read as a DINOv2"):
        read_dinov2_weights(folder, config)


def test_loading_and_running_never_imports_transformers(tmp_path):
    """The features of a model folder come without importing transformers (its import is seconds of a run)."""
    folder = save_random_dinov2(tmp_path / "m", hidden_size=8, layers=1, heads=2)
    code = ("import sys, numpy as np\n"
            "from devil_dataset.core.networks.dinov2 import load_dinov2\n"
            f"net = load_dinov2({str(folder)!r})\n"
            "f = net.patch_features([np.zeros((28, 28, 3), np.uint8)])\n"
            "net.identity()\n"
            "print(f.shape, sorted(m for m in sys.modules if m.split('.')[0] == 'transformers'))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(1, 2, 2, 8) []"
