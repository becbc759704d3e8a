"""DINOv2 (RC-S / RC-T's network): the package's features against transformers' ``Dinov2Model`` run plainly, the
image processor's arithmetic, the portable arithmetic, the model folder's checks and the recorded identity."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import DevilError, WeightsCorruptError
from devil_dataset.core.networks import dinov2, portable
from devil_dataset.core.networks.dinov2 import (
    PROCESSOR_DEFAULTS,
    check_model_folder,
    load_dinov2,
    preprocess,
    save_random_dinov2,
)
from devil_dataset.core.networks.portable import portable_in_force

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return save_random_dinov2(tmp_path_factory.mktemp("dino") / "tiny", hidden_size=16, layers=2, heads=2)


def _images(n: int, h: int, w: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


@pytest.mark.parametrize("shape,size", [
    ({"hidden_size": 16, "layers": 2, "heads": 2}, (42, 56)),  # a grid other than the checkpoint's: interpolated
    ({"hidden_size": 24, "layers": 1, "heads": 3, "image_size": 28}, (28, 28)),  # the checkpoint's own grid
    ({"hidden_size": 24, "layers": 2, "heads": 2, "use_swiglu_ffn": True}, (28, 42)),  # SwiGLU (the giant's MLP)
])
def test_features_match_transformers_run_plainly(tmp_path, shape, size):
    """The features are transformers' Dinov2Model's last hidden state, loaded as PROVE's ``utils/predictors.py``
    loads it (``AutoModel``) and run outside the portable arithmetic (native kernels, all images in one pass) on
    the same normalised pixels, to float32 rounding: only the products' summation order differs (OpenBLAS vs
    MKL / oneDNN)."""
    from transformers import AutoModel

    folder = save_random_dinov2(tmp_path / "m", **shape)
    net = load_dinov2(str(folder))
    images = _images(2, *size)
    with dinov2.transformers_quiet():
        plain = AutoModel.from_pretrained(str(folder), local_files_only=True, use_safetensors=True).eval()
    with torch.no_grad():
        ref = plain(pixel_values=preprocess(images, net.settings)).last_hidden_state[:, 1:].numpy()
    got = net.patch_features(images).reshape(ref.shape)
    assert np.abs(got - ref).max() <= 2e-6 * np.abs(ref).max()
    assert not np.array_equal(got, np.zeros_like(got))


def test_a_tensor_missing_from_the_file_is_named(tiny, tmp_path):
    """A model.safetensors lacking a tensor the model needs is refused naming the file and the tensor
    (``from_pretrained`` alone would fill it at random)."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "short"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny / "config.json").read_bytes())
    tensors = load_file(str(tiny / "model.safetensors"))
    del tensors["encoder.layer.1.norm2.weight"]
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(WeightsCorruptError, match=r"short/model\.safetensors: lacks 1 tensor.*layer\.1\.norm2"):
        load_dinov2(str(folder))


def test_loading_prints_nothing(tiny, capfd):
    """No "Loading weights" bar nor transformers log line: the load is quiet (stdout and stderr)."""
    load_dinov2(str(tiny))
    out, err = capfd.readouterr()
    assert out == "" and err == ""


def test_preprocess_is_transformers_numpy_rescale_and_normalize():
    """Bit for bit transformers' numpy ``rescale`` (float64, then float32) and ``normalize`` (float32), what its
    ``BitImageProcessor`` ran in the transformers 4 releases PROVE's code was written against."""
    from transformers.image_transforms import normalize, rescale
    from transformers.image_utils import ChannelDimension

    images = _images(3, 14, 28, seed=4)
    want = np.stack([normalize(rescale(i, 1 / 255, dtype=np.float32), list(dinov2.IMAGENET_MEAN),
                               list(dinov2.IMAGENET_STD), input_data_format=ChannelDimension.LAST)
                     for i in images]).transpose(0, 3, 1, 2)
    assert np.array_equal(preprocess(images, PROCESSOR_DEFAULTS).numpy(), want)


def test_features_do_not_depend_on_the_batch_or_the_threads(tiny):
    """On the CPU each image goes through alone, single-threaded: the same bits whatever crops share its call and
    however many threads run the passes."""
    net = load_dinov2(str(tiny))
    images = _images(3, 28, 28, seed=1)
    net.threads = 3
    together = net.patch_features(images)
    net.threads = 1
    assert np.array_equal(net.patch_features(images), together)
    for i, image in enumerate(images):
        assert np.array_equal(net.patch_features([image])[0], together[i])
    assert torch.get_num_threads() >= 1 and not torch.is_inference_mode_enabled()


def test_pixel_table_gives_the_arithmetic_bits():
    """The lookup equals the arithmetic itself on every uint8 value, for the defaults and another processor."""
    values = [np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, 2)]
    for settings in (PROCESSOR_DEFAULTS, {"do_rescale": True, "rescale_factor": 0.0039, "do_normalize": True,
                                          "image_mean": [0.5, 0.4, 0.3], "image_std": [0.3, 0.2, 0.1]}):
        x = (values[0].astype(np.float64) * settings["rescale_factor"]).astype(np.float32)
        want = (x - np.asarray(settings["image_mean"], np.float32)) / np.asarray(settings["image_std"], np.float32)
        assert np.array_equal(preprocess(values, settings)[0].numpy(), want.transpose(2, 0, 1))


def test_passes_run_in_the_portable_arithmetic(tiny, monkeypatch):
    """Every convolution, product and square root of the pass is routed to OpenBLAS / IEEE (the mode sees them) and
    the values are those of transformers' own Dinov2Model (eager attention) run inside ``portable_arithmetic``."""
    from transformers import Dinov2Model

    if not portable_in_force("cpu")[0]:
        pytest.skip(f"the portable kernels are not in force here: {portable_in_force('cpu')[1]}")
    seen: set[str] = set()
    routed = portable._PortableMode.__torch_function__

    def logged(self, func, types, args=(), kwargs=None):
        seen.add(getattr(func, "__name__", str(func)))
        return routed(self, func, types, args, kwargs)

    net = load_dinov2(str(tiny))
    images = _images(1, 42, 28, seed=2)
    monkeypatch.setattr(portable._PortableMode, "__torch_function__", logged)
    got = net.patch_features(images)
    assert {"conv2d", "linear", "matmul", "layer_norm", "softmax", "gelu"} <= seen
    monkeypatch.undo()
    with dinov2.transformers_quiet():
        reference = Dinov2Model.from_pretrained(str(tiny), attn_implementation="eager").eval()
    with torch.inference_mode(), portable.portable_arithmetic():
        explicit = reference(pixel_values=preprocess(images, net.settings)).last_hidden_state[:, 1:].numpy()
    assert np.array_equal(got.reshape(explicit.shape), explicit)


def test_truncated_safetensors_is_named_before_anything_runs(tiny, tmp_path):
    folder = tmp_path / "cut"
    folder.mkdir()
    for name in ("config.json", "preprocessor_config.json"):
        (folder / name).write_bytes((tiny / name).read_bytes())
    data = (tiny / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:len(data) * 3 // 5])
    with pytest.raises(WeightsCorruptError, match=r"cut/model\.safetensors: truncated or damaged safetensors"):
        load_dinov2(str(folder))
    (folder / "model.safetensors").write_bytes(b"\xff" * 4)
    with pytest.raises(WeightsCorruptError, match="no 8-byte header length"):
        check_model_folder(folder)


class _Payload:
    def __reduce__(self):
        return (Path.touch, (Path(os.environ["DEVIL_TEST_PICKLE_RAN"]),))


def test_pickle_weights_are_refused_and_never_unpickled(tiny, tmp_path, monkeypatch):
    folder = tmp_path / "pickled"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny / "config.json").read_bytes())
    marker = tmp_path / "ran"
    monkeypatch.setenv("DEVIL_TEST_PICKLE_RAN", str(marker))
    with open(folder / "pytorch_model.bin", "wb") as f:
        pickle.dump(_Payload(), f)
    with pytest.raises(WeightsCorruptError, match=r"pickled/pytorch_model\.bin: a pickle weights file .* refused"):
        load_dinov2(str(folder))
    assert not marker.exists()


def test_a_config_of_another_model_is_refused(tiny, tmp_path):
    folder = tmp_path / "vit"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "vit"}')
    with pytest.raises(WeightsCorruptError, match=r"vit/config\.json: model_type 'vit', not a DINOv2"):
        load_dinov2(str(folder))


def test_identity_records_path_architecture_and_processor(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tiny.parent)
    identity = load_dinov2(tiny.name).identity()  # a relative path: recorded resolved
    assert identity["path"] == str(tiny.resolve())
    assert identity["architecture"] == {"model_type": "dinov2", "hidden_size": 16, "num_hidden_layers": 2,
                                        "num_attention_heads": 2, "patch_size": 14, "image_size": 224,
                                        "mlp_ratio": 4, "use_swiglu_ffn": False, "hidden_act": "gelu",
                                        "layer_norm_eps": 1e-6, "qkv_bias": True}
    assert identity["processor"]["source"] == str((tiny / "preprocessor_config.json").resolve())
    assert capsys.readouterr().err == ""
    bare = save_random_dinov2(tmp_path / "bare", hidden_size=16, layers=1, heads=2, processor=False)
    net = load_dinov2(str(bare))
    assert net.identity()["processor"]["source"] == "defaults, no preprocessor_config.json"
    assert "has no preprocessor_config.json" in capsys.readouterr().err
    assert net.settings == PROCESSOR_DEFAULTS  # DINOv2's processor settings
    assert net.patch_features(_images(1, 14, 14)).shape == (1, 1, 1, 16)


def test_load_errors_are_devil_errors():
    """The CLI turns the package's error family into exit 2 (core/errors.py)."""
    assert issubclass(WeightsCorruptError, DevilError)


@pytest.mark.slow  # reason: two whole `devil evaluate` processes (start-up of torch and the CLI, ~10 s each)
def test_cli_exits_2_naming_the_model_file(tiny, tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "eval"))
    try:
        from prove_data import write_prove_layout
    finally:
        sys.path.pop(0)
    dirs = write_prove_layout(tmp_path / "set", cases=("moving",))
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / "config.json").write_bytes((tiny / "config.json").read_bytes())
    (cut / "model.safetensors").write_bytes((tiny / "model.safetensors").read_bytes()[:5000])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-c", "import sys; from devil_dataset.cli import main; sys.exit(main())", "evaluate",
           "--protocol", "prove", "--input-dir", str(dirs[0]), "--pred-dir", str(dirs[1]), "--mask-dir",
           str(dirs[2]), "--dino-model", str(cut), "--json"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "cut/model.safetensors: truncated or damaged" in done.stderr
    assert "Traceback" not in done.stderr and "prove:" not in done.stderr  # before any video
