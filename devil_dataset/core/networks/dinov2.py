"""DINOv2 patch features (the ``removal`` extra): the network of PROVE's RC-S and RC-T (``docs/removal.md``).

A model is a folder written by ``save_pretrained`` or a Hub id read from the Hugging Face cache (never downloaded
here: an id not in the cache is a :class:`~devil_dataset.core.errors.WeightsMissingError` naming it and the command
that fetches it). The folder is checked when it is loaded, before any video is read: ``config.json`` must describe
a DINOv2 (``model_type`` ``dinov2``), the weights must be a ``model.safetensors`` whose header and size agree
(:func:`~devil_dataset.core.weights.check_safetensors`); a pickle (``pytorch_model.bin``) is refused, since reading
one can run code. Each is a :class:`~devil_dataset.core.errors.WeightsCorruptError` naming the file (exit 2).

The forward pass is :func:`~devil_dataset.core.networks.dinov2_forward.dinov2_forward`: transformers'
``Dinov2Model`` (``modeling_dinov2.py``, eager attention) restated as torch functions over the folder's tensors, the
same functions in the same order, so the same bits (``tests/core/test_networks_dinov2_forward.py``), without the 4 to
6 s that importing transformers' model module costs a process (transformers stays the reference of the tests, of
:func:`save_random_dinov2` and of :attr:`Dinov2Features.processor`). A tensor the model needs and the file lacks is a
:class:`~devil_dataset.core.errors.WeightsCorruptError`. On the CPU every pass runs one image at a time inside
:func:`~devil_dataset.core.networks.precision.network_threads`, so in
:func:`~devil_dataset.core.networks.portable.portable_arithmetic` where it is in force: the mode intercepts the
torch functions the pass calls (the convolution and the products on OpenBLAS ``sgemm``, layer norm,
softmax and GELU at the pinned level). The features are then the same bits on every x86-64 CPU with AVX2, Intel or
AMD, and do not depend on how crops are batched (``tests/core/test_networks_dinov2.py``).

Images go through the model's image processor (``preprocessor_config.json``: rescale by ``rescale_factor`` in
float64 then float32, normalise by ``image_mean`` / ``image_std`` in float32, as ``BitImageProcessor`` does), with
its resize and centre crop off, as PROVE's ``utils/predictors.py`` calls it. A folder without
``preprocessor_config.json`` (which PROVE's ``AutoImageProcessor`` refuses) runs on DINOv2's settings, with a note
on stderr and in the identity. The CLS token is dropped and the patch tokens form the grid.

    >>> import tempfile, numpy as np
    >>> folder = save_random_dinov2(tempfile.mkdtemp(), hidden_size=8, layers=1, heads=1)
    >>> net = load_dinov2(folder)
    >>> net.patch_features([np.zeros((28, 42, 3), np.uint8)]).shape  # a 2x3 patch grid of 8 channels
    (1, 2, 3, 8)
    >>> sorted(net.identity())
    ['architecture', 'name', 'path', 'processor', 'revision', 'sha256', 'weights_file']
"""
from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch  # noqa: TID253

from ..atomic import file_sha256
from ..blas_threads import one_blas_thread
from ..errors import WeightsCorruptError, WeightsMissingError
from ..thread_map import default_threads, thread_map
from ..weights import check_safetensors
from . import DEFAULT_DINO_MODEL
from .dinov2_forward import Dinov2Weights, dinov2_forward, patch_grid_of, read_dinov2_weights  # noqa: TID253
from .precision import network_precision, network_threads  # noqa: TID253

#: The weights file a model folder must hold (safetensors: tensors only, no code).
WEIGHTS_FILE = "model.safetensors"
#: Weights files in the pickle format, refused (reading a pickle can run code).
PICKLE_FILES: tuple[str, ...] = ("pytorch_model.bin",)
#: DINOv2's image processor settings (``facebook/dinov2-*`` ``preprocessor_config.json``): ImageNet mean and std.
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
#: What a folder without ``preprocessor_config.json`` runs on (DINOv2's ``BitImageProcessor`` settings).
PROCESSOR_DEFAULTS: dict[str, Any] = {"do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                                      "image_mean": list(IMAGENET_MEAN), "image_std": list(IMAGENET_STD)}
#: The giant model's shape (``facebook/dinov2-giant`` ``config.json``), for a random model of its cost.
GIANT_SHAPE: dict[str, Any] = {"hidden_size": 1536, "num_hidden_layers": 40, "num_attention_heads": 24,
                               "mlp_ratio": 4, "use_swiglu_ffn": True}
#: The ``config.json`` fields recorded as the model's architecture.
ARCHITECTURE_FIELDS: tuple[str, ...] = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "patch_size", "image_size", "mlp_ratio", "use_swiglu_ffn", "hidden_act",
                                        "layer_norm_eps", "qkv_bias")

def _missing(model: str, why: str) -> WeightsMissingError:
    return WeightsMissingError(
        f"DINOv2 model {model!r}: {why}. Fetch it once with network access (pip install 'devil-dataset[removal]'; "
        f"python -c \"from transformers import AutoModel, AutoImageProcessor as P; "
        f"AutoModel.from_pretrained('{model}'); P.from_pretrained('{model}')\"), or pass --dino-model a folder "
        "written by save_pretrained")


def _refused_pickle(path: Path) -> WeightsCorruptError:
    return WeightsCorruptError(
        f"{path}: a pickle weights file (torch.save format), refused: reading a pickle can run code. Convert it "
        "once where you trust it (model = AutoModel.from_pretrained(folder); model.save_pretrained(folder, "
        f"safe_serialization=True)) so that {path.parent} holds {WEIGHTS_FILE}")


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise WeightsCorruptError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise WeightsCorruptError(f"{path}: not a JSON object")
    return data


def check_model_folder(folder: str | Path) -> tuple[dict[str, Any], dict[str, dict]]:
    """(config, tensor table) of a DINOv2 folder, checked without reading a tensor: ``config.json`` of
    ``model_type`` ``dinov2``, a ``model.safetensors`` whose header and size agree; a folder holding only a pickle
    (``pytorch_model.bin``) is refused. Each problem is a :class:`WeightsCorruptError` naming the file.

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp()); _ = (folder / "config.json").write_text('{"model_type": "dinov2"}')
    >>> _ = (folder / "pytorch_model.bin").write_bytes(b"PK")
    >>> check_model_folder(folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.WeightsCorruptError: .../pytorch_model.bin: a pickle weights file ...
    """
    folder = Path(folder)
    config = _json(folder / "config.json")
    if config.get("model_type") != "dinov2":
        raise WeightsCorruptError(f"{folder / 'config.json'}: model_type {config.get('model_type')!r}, not a DINOv2 "
                                  "('dinov2'); PROVE's RC-S / RC-T use DINOv2")
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        pickles = [folder / n for n in PICKLE_FILES if (folder / n).is_file()]
        if pickles:
            raise _refused_pickle(pickles[0])
        raise WeightsCorruptError(f"{folder}: no {WEIGHTS_FILE}")
    return config, check_safetensors(weights)


def processor_settings(folder: Path | None) -> tuple[dict[str, Any], str]:
    """(rescale / normalise settings, where they come from) of a model folder's ``preprocessor_config.json``, or
    :data:`PROCESSOR_DEFAULTS` with ``"defaults, no preprocessor_config.json"``."""
    path = folder / "preprocessor_config.json" if folder is not None else None
    if path is None or not path.is_file():
        return dict(PROCESSOR_DEFAULTS), "defaults, no preprocessor_config.json"
    config = _json(path)
    settings = {k: config.get(k, v) for k, v in PROCESSOR_DEFAULTS.items()}
    return settings, str(path.resolve())


def pixel_table(settings: dict[str, Any]) -> np.ndarray:
    """float32 [256, 3]: what :func:`preprocess` makes of each uint8 value in each channel, computed with its
    arithmetic (a uint8 image has 256 values per channel, so a table lookup gives the same bits, faster)."""
    values = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, axis=1)
    x: np.ndarray = values
    if settings["do_rescale"]:
        x = (x.astype(np.float64) * float(settings["rescale_factor"])).astype(np.float32)
    x = x.astype(np.float32, copy=False)
    if settings["do_normalize"]:
        x = (x - np.asarray(settings["image_mean"], np.float32)) / np.asarray(settings["image_std"], np.float32)
    return np.ascontiguousarray(x, dtype=np.float32)


def preprocess(images: Sequence[np.ndarray], settings: dict[str, Any], table: np.ndarray | None = None) -> torch.Tensor:
    """uint8 RGB images [H, W, 3] (one size) -> float32 [N, 3, H, W] as ``BitImageProcessor`` with resize and crop
    off computes them: ``(x as float64 * rescale_factor)`` to float32, then ``(x - mean) / std`` in float32, by
    lookup in :func:`pixel_table` (``table``: one made before).

    >>> preprocess([np.full((1, 1, 3), 255, np.uint8)], PROCESSOR_DEFAULTS)[0, :, 0, 0]
    tensor([2.2489, 2.4286, 2.6400])
    """
    table = pixel_table(settings) if table is None else table
    x = np.stack([np.asarray(i, dtype=np.uint8) for i in images])  # [N, H, W, 3]
    out = np.empty((x.shape[0], 3, *x.shape[1:3]), np.float32)
    for c in range(3):
        np.take(table[:, c], x[..., c], out=out[:, c])
    return torch.from_numpy(out)


@dataclass
class Dinov2Features:
    """A loaded DINOv2 (``weights``: its tensors, :class:`~devil_dataset.core.networks.dinov2_forward.Dinov2Weights`;
    the folder's ``config``; the processor ``settings``) on ``device``; :meth:`patch_features` runs it."""

    name: str
    weights: Dinov2Weights
    config: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=lambda: dict(PROCESSOR_DEFAULTS))
    device: str = "cpu"
    folder: Path | None = None
    revision: str | None = None
    processor_source: str = "defaults, no preprocessor_config.json"
    _identity: dict[str, Any] | None = field(default=None, repr=False)
    _reference: dict[str, Any] = field(default_factory=dict, repr=False)
    _table: np.ndarray | None = field(default=None, repr=False)
    #: CPU passes run at once (threads of this process; default: the CPUs it may use).
    threads: int = field(default_factory=default_threads)

    @torch.inference_mode()
    def patch_features(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Patch tokens of equal-size uint8 RGB images (sides multiples of 14): float32 [N, H / 14, W / 14, C] (CLS
        token dropped). On the CPU one image per pass, the passes spread over :attr:`threads` threads (each pass
        single-threaded in the portable arithmetic: the values depend on neither the batch nor the thread count);
        on a GPU all in one pass."""
        n, (h, w) = len(images), images[0].shape[:2]
        if self._table is None:
            self._table = pixel_table(self.settings)
        pixels = preprocess(images, self.settings, self._table).to(self.device)
        if torch.device(self.device).type != "cpu":
            with network_precision("float32", self.device):
                hidden = dinov2_forward(self.weights, pixels)
        else:  # the float32 flags are process-wide: set once here; each worker thread pins its own pass
            # one BLAS thread for the whole call: each pass's own block then finds it set (threadpoolctl's scan of
            # the loaded libraries, ~2 ms, runs once per call instead of once per pass)
            with network_precision("float32", "cpu"), one_blas_thread():
                hidden = torch.cat(thread_map(self._one_pass, list(pixels.split(1)), threads=min(n, self.threads)))
        return patch_grid_of(hidden, h, w, int(self.weights.config["patch_size"])).float().cpu().numpy()

    def _one_pass(self, pixels: torch.Tensor) -> torch.Tensor:
        """One image's CPU pass (in the calling thread: inference mode and the portable mode are per thread)."""
        with torch.inference_mode(), network_threads("cpu"), torch.autocast("cpu", enabled=False):
            return dinov2_forward(self.weights, pixels)

    @property
    def processor(self) -> Any:
        """transformers' image processor of the folder (``AutoImageProcessor``, or :func:`default_processor` without
        ``preprocessor_config.json``), loaded on first use: the reference of :func:`preprocess`."""
        if "processor" not in self._reference:
            from transformers import AutoImageProcessor

            has_config = self.folder is not None and (self.folder / "preprocessor_config.json").is_file()
            self._reference["processor"] = AutoImageProcessor.from_pretrained(
                str(self.folder), local_files_only=True) if has_config else default_processor()
        return self._reference["processor"]

    def identity(self) -> dict[str, Any]:
        """The model's provenance: name, revision (the Hub commit when read from the cache), the folder's absolute
        resolved path, weights file and its sha256 (:func:`~devil_dataset.core.atomic.file_sha256`, computed
        once), the architecture (``config.json``: :data:`ARCHITECTURE_FIELDS`) and the image processor used (its
        settings and the file they come from, or the defaults)."""
        if self._identity is None:
            weights = self.folder / WEIGHTS_FILE if self.folder is not None else None
            self._identity = {
                "name": self.name, "revision": self.revision,
                "path": str(self.folder.resolve()) if self.folder is not None else None,
                "weights_file": weights.name if weights else None,
                "sha256": file_sha256(weights) if weights else None,
                "architecture": {k: self.config[k] for k in ARCHITECTURE_FIELDS if k in self.config},
                "processor": {"source": self.processor_source, **self.settings}}
        return self._identity


def _resolve(model: str) -> tuple[Path, str | None]:
    """(folder, revision) of a ``save_pretrained`` folder or of a Hub id's cached snapshot."""
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise _missing(model, f"{path} lacks config.json (not a folder written by save_pretrained)")
        return path, None
    if path.exists() or model.count("/") > 1:
        raise _missing(model, "not a folder written by save_pretrained")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        raise _missing(model, "huggingface_hub is not installed") from None

    config = try_to_load_from_cache(model, "config.json")
    if not isinstance(config, str):
        raise _missing(model, "not in the Hugging Face cache (config.json), and models are never downloaded here")
    folder = Path(config).parent
    if not (folder / WEIGHTS_FILE).is_file() and not any((folder / n).is_file() for n in PICKLE_FILES):
        raise _missing(model, f"the cached snapshot {folder} holds no {WEIGHTS_FILE}")
    return folder, folder.name


def read_model(folder: Path, config: dict[str, Any], device: str = "cpu") -> Dinov2Weights:
    """The tensors of a checked folder (:func:`check_model_folder`) on ``device``, float32, read from its
    ``model.safetensors`` only (no pickle) by
    :func:`~devil_dataset.core.networks.dinov2_forward.read_dinov2_weights`: a tensor the model needs and the file
    lacks, or of another shape, is a :class:`WeightsCorruptError` naming the file."""
    return read_dinov2_weights(folder, config, WEIGHTS_FILE).to(device)


def load_dinov2(model: str = DEFAULT_DINO_MODEL, device: str = "cpu") -> Dinov2Features:
    """Load DINOv2 ``model`` (a ``save_pretrained`` folder or a cached Hub id) for inference on ``device``; the
    folder is checked first (:func:`check_model_folder`)."""
    folder, revision = _resolve(str(model))
    config, _ = check_model_folder(folder)
    network = read_model(folder, config, device)
    settings, source = processor_settings(folder)
    if source.startswith("defaults"):
        print(f"note: DINOv2 {model}: {folder} has no preprocessor_config.json; images are normalised with "
              f"DINOv2's settings (ImageNet mean {list(IMAGENET_MEAN)}, std {list(IMAGENET_STD)}, rescale 1/255)",
              file=sys.stderr)
    return Dinov2Features(str(model), network, config, settings, device, folder, revision, source)


@contextlib.contextmanager
def transformers_quiet() -> Iterator[None]:
    """transformers' progress bars ("Loading weights") and its logging below errors off for the block, restored
    after: loading prints nothing of its own (no "Loading weights" bar)."""
    from transformers.utils import logging as hf_logging

    bars, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()


def default_processor() -> Any:
    """DINOv2's image processor as transformers builds it (``facebook/dinov2-*``: ``BitImageProcessor``, ImageNet
    mean/std, rescale 1/255): what :func:`save_random_dinov2` writes and the reference code runs."""
    from transformers import BitImageProcessor

    return BitImageProcessor(do_resize=True, size={"shortest_edge": 256}, do_center_crop=True,
                             crop_size={"height": 224, "width": 224}, do_normalize=True,
                             image_mean=list(IMAGENET_MEAN), image_std=list(IMAGENET_STD))


def save_random_dinov2(folder: str | Path, *, hidden_size: int = 32, layers: int = 2, heads: int = 2,
                       seed: int = 0, processor: bool = True, **config: Any) -> Path:
    """Write a seeded random DINOv2 (transformers' ``Dinov2Config`` of the given shape; :data:`GIANT_SHAPE` for the
    giant's cost) and, with ``processor``, DINOv2's image processor to ``folder`` with ``save_pretrained``: tests
    and benchmarks score with it, nothing is downloaded. Returns the folder."""
    from transformers import Dinov2Config, Dinov2Model

    config.setdefault("intermediate_size", hidden_size * 2)
    cfg = Dinov2Config(hidden_size=hidden_size, num_hidden_layers=layers, num_attention_heads=heads, **config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = Dinov2Model(cfg).eval()
    folder = Path(folder)
    with transformers_quiet():
        net.save_pretrained(str(folder))
    if processor:
        default_processor().save_pretrained(str(folder))
    return folder


__all__ = ["ARCHITECTURE_FIELDS", "DEFAULT_DINO_MODEL", "GIANT_SHAPE", "PROCESSOR_DEFAULTS", "Dinov2Features",
           "check_model_folder", "default_processor", "load_dinov2", "pixel_table", "preprocess", "processor_settings",
           "read_model", "save_random_dinov2", "transformers_quiet"]
