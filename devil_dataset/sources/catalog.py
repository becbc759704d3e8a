"""The DEVIL release's source list (234 Flickr videos of 4 users), shipped as package data with its provenance.

The facts come from the original release (MichiganCOG/devil, commit 95a7a1e, file ``flickr-config.yml``): the
whitelisted video ids, the four whitelisted Flickr users, the 95 excluded ids and the query filters. The release's
Flickr API credentials are deliberately not copied. The list does not say which user uploaded which video: the
owner is resolved at download time (Flickr API ``flickr.photos.getInfo`` or yt-dlp's ``uploader_id``) and kept in
the local sources manifest.

    >>> cat = load_catalog()
    >>> len(cat.video_ids), len(cat.users), len(cat.excluded_ids), cat.release_commit
    (234, 4, 95, '95a7a1e')
    >>> cat.clip_name("122995322@N02", "23467104578", 3)
    '122995322@N02-23467104578-00003'
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

from ..core.errors import DevilError

CATALOG_RESOURCE = "devil-sources.json"  # a verbatim copy of /work/shared/release-sources/devil-sources.json
# Provenance of the list (the JSON's `about`): where the release published it.
RELEASE_REPOSITORY = "MichiganCOG/devil"
RELEASE_FILE = "flickr-config.yml"
# The release's download filter: sources must be 1920x1080.
RELEASE_RESOLUTION: tuple[int, int] = (1920, 1080)


@dataclass(frozen=True)
class SourceCatalog:
    """The release's source list: ids in the release's order, users, excluded ids, filters and provenance."""

    video_ids: tuple[str, ...]
    users: tuple[str, ...]
    excluded_ids: tuple[str, ...]
    filters: dict
    query: str
    release_commit: str
    about: str
    clip_name_format: str
    paper_clip_count: int

    @property
    def provenance(self) -> str:
        """One line naming the release repository, commit and file the list comes from."""
        return f"{RELEASE_REPOSITORY}@{self.release_commit}:{RELEASE_FILE}"

    def clip_name(self, user: str, video_id: str, index: int) -> str:
        """A clip's name the release's way: ``<flickr user id>-<flickr video id>-<5-digit clip index>``."""
        return self.clip_name_format.format(flickr_user_id=user, flickr_video_id=video_id, clip_index=index)


def load_catalog() -> SourceCatalog:
    """The shipped source list (package data ``devil_dataset/sources/devil-sources.json``)."""
    try:
        raw = json.loads(resources.files(__package__).joinpath(CATALOG_RESOURCE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # pragma: no cover - a broken install
        raise DevilError(f"package data {CATALOG_RESOURCE}: cannot read ({exc})") from None
    ids = tuple(str(v) for v in raw["whitelisted_videos"])
    if len(set(ids)) != len(ids):  # pragma: no cover - guards a bad edit of the data file
        raise DevilError(f"package data {CATALOG_RESOURCE}: duplicate video ids")
    return SourceCatalog(
        video_ids=ids,
        users=tuple(raw["whitelisted_users"]),
        excluded_ids=tuple(str(v) for v in raw["excluded_videos"]),
        filters=dict(raw["filters"]),
        query=str(raw["query"]),
        release_commit=str(raw["release_commit"]),
        about=str(raw["about"]),
        clip_name_format=str(raw["clip_name_format"]),
        paper_clip_count=int(raw["paper_clip_count"]),
    )
