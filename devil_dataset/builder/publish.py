"""Upload a built dataset folder to the HuggingFace Hub (``devil publish``).

Only redistribute data whose licence allows it: the DEVIL release's videos came from Flickr under their authors'
licences; check every source's ``license``/``attribution`` column before publishing. The upload sends the
published files only (``README.md``, ``manifest.json``, ``data/**``), never the build's work folder, and checks
every file against ``manifest.json`` first.

    >>> files = publish("devil-sample", "my-org/devil-sample", dry_run=True)  # doctest: +SKIP
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import DevilError
from . import dataset_writer as writer

# Never uploaded: the builder's work folder and interrupted writes' temporaries.
IGNORE_PATTERNS: tuple[str, ...] = (f"{writer.BUILD_DIR}/**", "**/.tmp-*", ".tmp-*", ".*")


def publish_plan(dataset_dir: str | os.PathLike) -> list[tuple[str, int]]:
    """The files that would be uploaded, ``(relative path, bytes)``, after verifying the manifest checksums."""
    root = Path(dataset_dir)
    if not root.is_dir():
        raise DevilError(f"{root}: not a directory")
    if not (root / writer.CARD_NAME).is_file():
        raise DevilError(f"{root}: no README.md dataset card; build it with `devil build` first")
    writer.verify_manifest(root)
    return [(rel.as_posix(), (root / rel).stat().st_size) for rel in writer.published_files(root)]


def _validate_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/")
    if len(parts) != 2 or not all(parts) or any(c.isspace() for c in repo_id):
        raise DevilError(f"malformed repo id {repo_id!r}: expected ORG/NAME")


def publish(
    dataset_dir: str | os.PathLike,
    repo_id: str,
    *,
    dry_run: bool = False,
    private: bool = False,
    token: str | None = None,
    revision: str | None = None,
    commit_message: str | None = None,
) -> list[tuple[str, int]]:
    """Upload ``dataset_dir`` to the dataset repo ``repo_id`` (created if needed); return the files sent.

    With ``dry_run`` nothing is contacted: the files and sizes are returned. Network or authentication failures
    raise :class:`DevilError` with the reason.
    """
    _validate_repo_id(repo_id)
    files = publish_plan(dataset_dir)
    if dry_run:
        return files
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(dataset_dir),
            repo_id=repo_id,
            repo_type="dataset",
            revision=revision,
            commit_message=commit_message or "Upload DEVIL dataset built with devil-dataset",
            ignore_patterns=list(IGNORE_PATTERNS),
        )
    except Exception as exc:  # huggingface_hub raises many types (HTTP, connection, offline mode, auth)
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        raise DevilError(f"upload of {dataset_dir} to https://huggingface.co/datasets/{repo_id} failed ({reason}); "
                         "check the network connection and `huggingface-cli login` (or HF_TOKEN)") from None
    return files
