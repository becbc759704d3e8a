"""Upload a built dataset folder to the HuggingFace Hub (``devil publish``).

Only redistribute data whose licence allows it: the DEVIL release's videos came from Flickr under their authors'
licences; check every source's ``license``/``attribution`` column before publishing. The upload sends the
files ``manifest.json`` lists plus the manifest (``README.md``, ``data/**``), nothing else in the folder (never
the build's work folder, notes or credentials), and checks every file against the manifest first.

    >>> files = publish("devil-sample", "my-org/devil-sample", dry_run=True)  # doctest: +SKIP
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from ..core.errors import DevilError
from . import dataset_writer as writer
from .dataset_card import card_problems


def publish_plan(dataset_dir: str | os.PathLike) -> list[tuple[str, int]]:
    """The files that would be uploaded, ``(relative path, bytes)``, after verifying the manifest checksums.

    Exactly the files ``manifest.json`` lists (the card among them) plus the manifest itself: anything else in
    the folder (notes, credentials, a stray shard) is never uploaded (see :func:`stray_files`). The card is checked
    offline (:func:`devil_dataset.builder.dataset_card.card_problems`: licence id, task ids, configs pointing at
    files that exist, paper link, citation key) and refused with the list of problems.
    """
    root = Path(dataset_dir)
    if not root.is_dir():
        raise DevilError(f"{root}: not a directory")
    if not (root / writer.CARD_NAME).is_file():
        raise DevilError(f"{root}: no README.md dataset card; build it with `devil build` first")
    doc = writer.verify_manifest(root)
    names = set(doc.get("files", {})) | {writer.MANIFEST_NAME}
    if writer.CARD_NAME not in names:
        raise DevilError(f"{root / writer.MANIFEST_NAME}: does not list the card {writer.CARD_NAME}; rebuild")
    problems = card_problems((root / writer.CARD_NAME).read_text(encoding="utf-8"), root)
    if problems:
        raise DevilError(f"{root / writer.CARD_NAME}: the dataset card is not valid: " + "; ".join(problems))
    return [(rel, (root / rel).stat().st_size) for rel in sorted(names)]


def stray_files(dataset_dir: str | os.PathLike) -> list[str]:
    """Files of the folder that ``manifest.json`` does not list (never uploaded); the CLI reports them."""
    listed = {rel for rel, _ in publish_plan(dataset_dir)}
    return [rel.as_posix() for rel in writer.published_files(dataset_dir) if rel.as_posix() not in listed]


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

    With ``dry_run`` nothing is contacted: the files and sizes are returned. Otherwise the card goes through the
    Hub's validator (``DatasetCard.validate``) before anything is uploaded. Network, authentication or validation
    failures raise :class:`DevilError` with the reason (never the token).
    """
    _validate_repo_id(repo_id)
    files = publish_plan(dataset_dir)
    if dry_run:
        return files
    import huggingface_hub

    api = huggingface_hub.HfApi(token=token)
    root = Path(dataset_dir)
    try:
        card = huggingface_hub.DatasetCard((root / writer.CARD_NAME).read_text(encoding="utf-8"))
        card.validate(repo_type="dataset")
    except ValueError as exc:  # the Hub answered 400: the card's metadata is invalid
        raise DevilError(f"{root / writer.CARD_NAME}: the Hub rejected the dataset card: {exc}") from None
    except Exception as exc:  # connection errors, offline mode
        raise DevilError(f"upload of {dataset_dir} to https://huggingface.co/datasets/{repo_id} failed "
                         f"({_reason(exc)}); check the network connection") from None
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        operations = [huggingface_hub.CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(root / rel))
                      for rel, _ in files]
        api.create_commit(
            repo_id=repo_id,
            operations=operations,
            repo_type="dataset",
            revision=revision,
            commit_message=commit_message or "Upload DEVIL dataset built with devil-dataset",
        )
    except Exception as exc:  # huggingface_hub raises many types (HTTP, connection, offline mode, auth)
        raise DevilError(f"upload of {dataset_dir} to https://huggingface.co/datasets/{repo_id} failed "
                         f"({_reason(exc)}); check the network connection and `huggingface-cli login` (or HF_TOKEN)"
                         ) from None
    return files


def _reason(exc: BaseException) -> str:
    """First line of an exception, with any Hub token redacted."""

    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: " + re.sub(r"hf_[A-Za-z0-9]{6,}", "hf_***", first)
