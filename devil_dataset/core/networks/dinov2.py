"""DINOv2 patch features through Hugging Face ``transformers`` (the ``removal`` extra; issue 45): the network of
PROVE's RC-S and RC-T (``docs/removal.md``).

A model is a folder written by ``save_pretrained`` or a Hub id read from the Hugging Face cache (never downloaded
here: an id not in the cache is a :class:`~devil_dataset.core.errors.WeightsMissingError` naming it and the command
that fetches it). Images go through the model's own image processor with its resize and centre crop off, as PROVE's
``utils/predictors.py`` calls it, several of one size per forward pass; the CLS token is dropped and the patch
tokens form the grid.

    >>> import tempfile, numpy as np
    >>> folder = save_random_dinov2(tempfile.mkdtemp(), hidden_size=8, layers=1, heads=1)
    >>> net = load_dinov2(folder)
    >>> net.patch_features([np.zeros((28, 42, 3), np.uint8)]).shape  # a 2x3 patch grid of 8 channels
    (1, 2, 3, 8)
    >>> sorted(net.identity())
    ['name', 'revision', 'sha256', 'weights_file']
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch  # noqa: TID253

from ..atomic import file_sha256
from ..errors import WeightsMissingError
from . import DEFAULT_DINO_MODEL

#: The weights files a ``save_pretrained`` folder may hold, in the order looked for.
WEIGHTS_FILES: tuple[str, ...] = ("model.safetensors", "pytorch_model.bin")
#: DINOv2's image processor settings (``facebook/dinov2-*`` ``preprocessor_config.json``): ImageNet mean and std.
IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)
#: The giant model's shape (``facebook/dinov2-giant`` ``config.json``), for a random model of its cost.
GIANT_SHAPE: dict[str, Any] = {"hidden_size": 1536, "num_hidden_layers": 40, "num_attention_heads": 24,
                               "mlp_ratio": 4, "use_swiglu_ffn": True}


def _missing(model: str, why: str) -> WeightsMissingError:
    return WeightsMissingError(
        f"DINOv2 model {model!r}: {why}. Fetch it once with network access (pip install 'devil-dataset[removal]'; "
        f"python -c \"from transformers import AutoModel, AutoImageProcessor as P; "
        f"AutoModel.from_pretrained('{model}'); P.from_pretrained('{model}')\"), or pass --dino-model a folder "
        "written by save_pretrained")


def _weights_file(folder: Path) -> Path | None:
    return next((folder / n for n in WEIGHTS_FILES if (folder / n).is_file()), None)


@dataclass
class Dinov2Features:
    """A loaded DINOv2 (``model``, ``processor``) on ``device``; :meth:`patch_features` runs it."""

    name: str
    model: Any
    processor: Any
    device: str = "cpu"
    folder: Path | None = None
    revision: str | None = None
    _identity: dict[str, Any] | None = field(default=None, repr=False)

    @torch.no_grad()
    def patch_features(self, images: Sequence[np.ndarray]) -> np.ndarray:
        """Patch tokens of equal-size uint8 RGB images (sides multiples of 14) in one forward pass: float32
        [N, H / 14, W / 14, C] (CLS token dropped)."""
        inputs = self.processor(images=list(images), return_tensors="pt", do_resize=False, do_center_crop=False)
        pixels = inputs["pixel_values"].to(self.device)
        tokens = self.model(pixel_values=pixels).last_hidden_state[:, 1:, :]
        n, (h, w) = len(images), images[0].shape[:2]
        return tokens.float().cpu().numpy().reshape(n, h // 14, w // 14, -1)

    def identity(self) -> dict[str, Any]:
        """The model's provenance: name, revision (the Hub commit when read from the cache), weights file and its
        sha256 (:func:`~devil_dataset.core.atomic.file_sha256`, computed once)."""
        if self._identity is None:
            weights = _weights_file(self.folder) if self.folder is not None else None
            self._identity = {"name": self.name, "revision": self.revision,
                              "weights_file": weights.name if weights else None,
                              "sha256": file_sha256(weights) if weights else None}
        return self._identity


def _resolve(model: str) -> tuple[Path, str | None]:
    """(folder, revision) of a ``save_pretrained`` folder or of a Hub id's cached snapshot."""
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file() or _weights_file(path) is None:
            raise _missing(model, f"{path} lacks config.json or a weights file ({', '.join(WEIGHTS_FILES)})")
        return path, None
    if path.exists() or model.count("/") > 1:
        raise _missing(model, "not a folder written by save_pretrained")
    from huggingface_hub import try_to_load_from_cache

    config = try_to_load_from_cache(model, "config.json")
    if not isinstance(config, str):
        raise _missing(model, "not in the Hugging Face cache (config.json), and models are never downloaded here")
    folder = Path(config).parent
    if _weights_file(folder) is None:
        raise _missing(model, f"the cached snapshot {folder} holds no weights file ({', '.join(WEIGHTS_FILES)})")
    return folder, folder.name


def load_dinov2(model: str = DEFAULT_DINO_MODEL, device: str = "cpu") -> Dinov2Features:
    """Load DINOv2 ``model`` (a ``save_pretrained`` folder or a cached Hub id) for inference on ``device``."""
    try:
        from transformers import AutoImageProcessor, AutoModel
    except ImportError:
        raise _missing(model, "transformers is not installed") from None
    folder, revision = _resolve(str(model))
    try:
        net = AutoModel.from_pretrained(str(folder), local_files_only=True).to(device).eval()
        processor = AutoImageProcessor.from_pretrained(str(folder), local_files_only=True) \
            if (folder / "preprocessor_config.json").is_file() else default_processor()
    except OSError as exc:
        raise _missing(model, f"cannot be read ({exc})") from None
    return Dinov2Features(str(model), net, processor, device, folder, revision)


def default_processor() -> Any:
    """DINOv2's image processor (``facebook/dinov2-*``: ``BitImageProcessor``, ImageNet mean/std, rescale 1/255)."""
    from transformers import BitImageProcessor

    return BitImageProcessor(do_resize=True, size={"shortest_edge": 256}, do_center_crop=True,
                             crop_size={"height": 224, "width": 224}, do_normalize=True,
                             image_mean=list(IMAGENET_MEAN), image_std=list(IMAGENET_STD))


def save_random_dinov2(folder: str | Path, *, hidden_size: int = 32, layers: int = 2, heads: int = 2,
                       seed: int = 0, **config: Any) -> Path:
    """Write a seeded random DINOv2 (``Dinov2Config`` of the given shape; :data:`GIANT_SHAPE` for the giant's cost)
    and DINOv2's image processor to ``folder`` with ``save_pretrained``: tests and benchmarks score with it, nothing
    is downloaded. Returns the folder."""
    from transformers import Dinov2Config, Dinov2Model

    config.setdefault("intermediate_size", hidden_size * 2)
    cfg = Dinov2Config(hidden_size=hidden_size, num_hidden_layers=layers, num_attention_heads=heads, **config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = Dinov2Model(cfg).eval()
    folder = Path(folder)
    net.save_pretrained(str(folder))
    default_processor().save_pretrained(str(folder))
    return folder


__all__ = ["DEFAULT_DINO_MODEL", "GIANT_SHAPE", "Dinov2Features", "default_processor", "load_dinov2",
           "save_random_dinov2"]
