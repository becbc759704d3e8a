"""What ``--dataset DIR_OR_REPO`` names: a local dataset folder or a Hub repo id, told apart without numpy or the
network, so that the ``devil`` commands refuse a mistyped path while they read their arguments.

    >>> is_repo_id("your-org/devil"), is_repo_id("./devil-build"), is_repo_id("a/b/c")
    (True, False, False)
"""
from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import DevilError

HUB_NAMING = ("a Hub dataset is named by its repo id ORG/NAME (e.g. --dataset your-org/devil), fetched when no "
              "local folder ORG/ exists here and the Hub is reachable (HF_HUB_OFFLINE unset) or the config is cached")


def is_repo_id(dir_or_repo: str | os.PathLike) -> bool:
    """Whether ``dir_or_repo`` names a Hub dataset repo (``ORG/NAME``) rather than a local path."""
    text = str(dir_or_repo)
    path = Path(text)
    return not (isinstance(dir_or_repo, Path) or path.exists() or text.startswith(("/", ".", "~"))
                or text.count("/") != 1)


def hub_offline() -> bool:
    """Whether the Hub is switched off for this process (``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` truthy)."""
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def check_dataset_name(dir_or_repo: str | os.PathLike) -> None:
    """Refuse, before any network call, a ``--dataset`` that is neither an existing folder nor a usable Hub repo id:
    a path that does not exist, including an ``ORG/NAME``-shaped one whose first folder exists here (a mistyped
    local path such as ``demo-out/datset``) or any ``ORG/NAME`` while the Hub is offline (unless that config is in
    the Hugging Face cache, which :func:`devil_dataset.data.load.fetch_slice` reads offline). The error says "no such
    folder", names what does exist and how to name a Hub dataset.

    >>> import tempfile, pathlib, os
    >>> os.chdir(tempfile.mkdtemp()); pathlib.Path("demo-out").mkdir()
    >>> check_dataset_name("demo-out/datset")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: demo-out/datset: no such folder (demo-out/ exists, ...
    """
    path = Path(dir_or_repo)
    if path.is_dir():
        return
    if path.exists():
        raise DevilError(f"{dir_or_repo}: is a file, not a dataset folder (a folder made by `devil build`); "
                         f"{HUB_NAMING}")
    if not is_repo_id(dir_or_repo):
        raise DevilError(f"{dir_or_repo}: no such folder; {HUB_NAMING}")
    parent = path.parent
    if parent.is_dir():
        inside = sorted(p.name for p in parent.iterdir() if p.is_dir())[:8]
        raise DevilError(f"{dir_or_repo}: no such folder ({parent}/ exists, holding "
                         f"{', '.join(inside) or 'no folders'}; a typo?); {HUB_NAMING}")


__all__ = ["HUB_NAMING", "check_dataset_name", "hub_offline", "is_repo_id"]
