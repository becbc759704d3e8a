"""The dataset card (``README.md``): validated Hub metadata from ``huggingface_hub.DatasetCardData`` plus the body.

The metadata block is built as a :class:`huggingface_hub.DatasetCardData` (not string templating), so the YAML is
what the Hub's own card tooling writes and reads back; the body is the template ``templates/dataset_card.md`` (package
data next to this module, read through :mod:`importlib.resources`, so an installed wheel finds it; the repository's
``loading_script/README.md`` is a link to it) with the build's tables filled in. :func:`card_problems` checks a card
offline the way ``devil publish --dry-run`` needs it (licence id, task ids, configs pointing at files that exist,
citation, paper link); the Hub's own validator (``DatasetCard.validate``, online) runs before every real upload.

    >>> card = render_card(configs={"all": {"rows": 3, "bytes": 10, "description": "all x all"}},
    ...                    license="other", pretty_name="DEVIL", build_notes="", attributions=[])
    >>> card.data.license_name, card.data.task_ids
    ('per-clip-licences', ['image-inpainting'])
"""
from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.dataset_schema import COLUMN_DOCS, FEATURES
from ..core.errors import DevilError

CARD_NAME = "README.md"
LICENSE_NAME = "LICENSE.md"  # per-source licences, linked from the card when the licence field is `other`
SPLIT = "test"
DATA_DIR = "data"
PREVIEW_CONFIG = "preview"
# The card body's template: package data of this package (setup.cfg package_data), never a path next to the source.
TEMPLATE_FOLDER = "templates"
TEMPLATE_NAME = "dataset_card.md"

# The DEVIL paper: Szeto & Corso, CVPR 2022, https://arxiv.org/abs/2105.05332 (the Hub links the paper page from
# an arxiv.org link in the card). One citation key everywhere (card, README, CITATION).
ARXIV_ID = "2105.05332"
CITATION_KEY = "szeto2022devil"
CITATION = f"""@inproceedings{{{CITATION_KEY},
  title     = {{The DEVIL is in the Details: A Diagnostic Evaluation Benchmark for Video Inpainting}},
  author    = {{Szeto, Ryan and Corso, Jason J.}},
  booktitle = {{Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)}},
  year      = {{2022}}
}}"""

# Licence identifiers the Hub recognises (https://huggingface.co/docs/hub/repositories-licenses); the DEVIL videos
# came from Flickr under the CC 2.0 family. `other` needs `license_name` (lowercase, dashes) and `license_link`.
HUB_LICENSE_IDS = frozenset({
    "apache-2.0", "mit", "bsd", "bsd-2-clause", "bsd-3-clause", "cc", "cc0-1.0", "cc-by-2.0", "cc-by-2.5",
    "cc-by-3.0", "cc-by-4.0", "cc-by-sa-3.0", "cc-by-sa-4.0", "cc-by-nc-2.0", "cc-by-nc-3.0", "cc-by-nc-4.0",
    "cc-by-nd-4.0", "cc-by-nc-nd-3.0", "cc-by-nc-nd-4.0", "cc-by-nc-sa-2.0", "cc-by-nc-sa-3.0", "cc-by-nc-sa-4.0",
    "odc-by", "odbl", "pddl", "c-uda", "cdla-permissive-2.0", "cdla-sharing-1.0", "openrail", "unknown", "other",
})
OTHER_LICENSE_NAME = "per-clip-licences"
_LICENSE_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
# The Hub's task taxonomy: video inpainting is filed under image-to-image / image-inpainting (no video-inpainting
# task id exists); the tags carry the rest.
TASK_CATEGORIES = ("image-to-image",)
TASK_IDS = ("image-inpainting",)
KNOWN_TASK_IDS = {"image-to-image": {"image-inpainting", "image-colorization", "super-resolution"}}
TAGS = ("video-inpainting", "video", "benchmark", "devil")


def size_category(num_rows: int) -> str:
    """The Hub's ``size_categories`` bucket.

    >>> size_category(12), size_category(1500)
    ('n<1K', '1K<n<10K')
    """
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if num_rows < limit:
            return name
    return "n>1M"


def config_entries(configs: Sequence[str], default: str = "all", *, preview: bool = False,
                   files: Mapping[str, Sequence[str]] | None = None) -> list[dict]:
    """The card's ``configs:`` list: one entry per config with its parquet files (``default`` marked), then the
    ``preview`` config (mp4 clips read by the ``videofolder`` builder) when the build wrote one.

    ``files`` maps a config (``preview`` included) to its exact shard paths (relative, POSIX): the card then lists
    them instead of a glob, so that a plain ``datasets.load_dataset`` of a copy missing a shard fails (a glob
    would load the remaining shards without a word).

    >>> config_entries(["all"], files={"all": ["data/all/test-00000-of-00001.parquet"]})[0]["data_files"]
    [{'split': 'test', 'path': ['data/all/test-00000-of-00001.parquet']}]
    """
    files = files or {}

    def data_files(name: str, folder: str) -> list[dict]:
        exact = files.get(name)
        return [{"split": SPLIT, "path": list(exact) if exact else f"{folder}/{SPLIT}-*.parquet"}]

    entries = []
    for name in configs:
        entry: dict = {"config_name": name}
        if name == default:
            entry["default"] = True
        entry["data_files"] = data_files(name, f"{DATA_DIR}/{name}")
        entries.append(entry)
    if preview:
        entries.append({"config_name": PREVIEW_CONFIG, "data_files": data_files(PREVIEW_CONFIG, PREVIEW_CONFIG)})
    return entries


def shard_files(dataset_dir: str | os.PathLike, configs: Sequence[str], *,
                preview: bool = False) -> dict[str, list[str]]:
    """Each config's parquet shards in ``dataset_dir`` as sorted relative POSIX paths (for :func:`config_entries`)."""
    root = Path(dataset_dir)
    folders = {name: f"{DATA_DIR}/{name}" for name in configs}
    if preview:
        folders[PREVIEW_CONFIG] = PREVIEW_CONFIG
    return {name: sorted(p.relative_to(root).as_posix() for p in (root / folder).glob(f"{SPLIT}-*.parquet"))
            for name, folder in folders.items()}


def card_data(
    *,
    configs: Sequence[str],
    max_rows: int,
    license: str,
    pretty_name: str,
    preview: bool = False,
    files: Mapping[str, Sequence[str]] | None = None,
):
    """The card's metadata as a :class:`huggingface_hub.DatasetCardData` (``files``: see :func:`config_entries`).

    >>> card_data(configs=["all"], max_rows=3, license="cc-by-4.0", pretty_name="x").license
    'cc-by-4.0'
    """
    from huggingface_hub import DatasetCardData

    if license not in HUB_LICENSE_IDS:
        raise DevilError(f"licence {license!r} is not a Hub licence id; use one of "
                         f"{', '.join(sorted(HUB_LICENSE_IDS))} (`other` for per-clip licences)")
    default = "all" if "all" in configs or not configs else configs[0]
    extra: dict[str, Any] = {}  # DatasetCardData's extra keyword arguments
    if license == "other":
        extra = {"license_name": OTHER_LICENSE_NAME, "license_link": LICENSE_NAME}
    return DatasetCardData(
        license=license,
        pretty_name=pretty_name,
        task_categories=list(TASK_CATEGORIES),
        task_ids=list(TASK_IDS),
        size_categories=[size_category(max_rows)],
        tags=list(TAGS),
        configs=config_entries(configs, default, preview=preview, files=files),
        **extra,
    )


def card_template() -> str:
    """The text of the card body's template (``{{name}}`` placeholders), read from the installed package.

    >>> card_template().splitlines()[0]
    '# {{title}}'
    """
    # joinpath one name at a time: several names in one call need Python 3.11 (python_requires is 3.10).
    resource = resources.files(__package__).joinpath(TEMPLATE_FOLDER).joinpath(TEMPLATE_NAME)
    return resource.read_text(encoding="utf-8")


def render_card(
    *,
    configs: Mapping[str, Mapping],
    license: str,
    pretty_name: str,
    build_notes: str,
    attributions: Sequence[str],
    template: str | os.PathLike | None = None,
    preview: Mapping | None = None,
    dataset_dir: str | os.PathLike | None = None,
):
    """The card (a :class:`huggingface_hub.DatasetCard`) for the written configs; ``str(card)`` is ``README.md``.

    ``configs`` maps config name -> {"rows": int, "bytes": int, "description": str}; ``preview`` (optional)
    {"rows": int, "bytes": int} of the ``preview`` config. With ``dataset_dir`` (the build's folder, shards in
    place) each config lists its exact shard files (:func:`config_entries`); without it, a glob per config.
    """
    from huggingface_hub import DatasetCard

    body = Path(template).read_text(encoding="utf-8") if template else card_template()
    names = list(configs)
    default = "all" if "all" in configs or not names else names[0]
    max_rows = max((int(c["rows"]) for c in configs.values()), default=0)
    files = shard_files(dataset_dir, names, preview=preview is not None) if dataset_dir is not None else None
    data = card_data(configs=names, max_rows=max_rows, license=license, pretty_name=pretty_name,
                     preview=preview is not None, files=files)
    table = ["| config | videos x masks | rows | bytes |", "|---|---|---:|---:|"]
    for name, c in configs.items():
        table.append(f"| `{name}` | {c['description']} | {c['rows']} | {c['bytes']:,} |")
    if preview is not None:
        table.append(f"| `{PREVIEW_CONFIG}` | first rows of `{default}` as H.264 mp4 (hole tinted) for the Hub's "
                     f"viewer | {preview['rows']} | {preview['bytes']:,} |")
    columns = ["| column | type | meaning |", "|---|---|---|"]
    feats = FEATURES.get()
    for col in feats:
        kind = repr(feats[col]).replace("|", "/")
        columns.append(f"| `{col}` | `{kind}` | {COLUMN_DOCS.get(col, '')} |")
    credits = "\n".join(f"- {a}" for a in attributions) or "- (none recorded)"
    licence_line = f"`{license}`"
    if license == "other":
        licence_line += f" (`{OTHER_LICENSE_NAME}`: see [{LICENSE_NAME}]({LICENSE_NAME}))"
    values = {
        "license": licence_line,
        "title": pretty_name,
        "default_config": default,
        "config_table": "\n".join(table),
        "column_table": "\n".join(columns),
        "build_notes": build_notes.strip(),
        "attributions": credits,
        "citation": CITATION,
        "arxiv_id": ARXIV_ID,
    }
    for key, value in values.items():
        body = body.replace("{{" + key + "}}", str(value))
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body.lstrip()}")


def license_file(attributions: Sequence[str], license: str) -> str:
    """``LICENSE.md``: the licence of every source video (the card's ``license_link`` when the field is ``other``)."""
    lines = ["# Licences of the source videos", "",
             f"This dataset's card licence field is `{license}`: every row keeps the licence of its source video",
             "(`license` and `attribution` columns). Redistribute it only where every source licence allows it.", "",
             "Sources:", ""]
    lines += [f"- {a}" for a in attributions] or ["- (none recorded)"]
    return "\n".join(lines) + "\n"


def card_problems(card_text: str, dataset_dir: str | os.PathLike | None = None) -> list[str]:
    """What is wrong with a card, checked offline (an empty list: nothing found).

    Checks the metadata parses, the licence is a Hub id (``other`` with ``license_name``/``license_link``), task
    ids exist under their category, every config's data files exist in ``dataset_dir``, the paper's arXiv link and
    the one citation key are present.
    """
    from huggingface_hub import DatasetCard

    try:
        card = DatasetCard(card_text, ignore_metadata_errors=False)
    except Exception as exc:  # huggingface_hub raises ValueError for malformed YAML
        return [f"metadata does not parse: {exc}"]
    meta = card.data.to_dict()
    return (_license_problems(meta, dataset_dir) + _task_id_problems(meta) + _config_problems(meta, dataset_dir)
            + _paper_problems(card.text))


def _license_problems(meta: Mapping[str, Any], dataset_dir: str | os.PathLike | None) -> list[str]:
    """The licence is a Hub id; ``other`` also needs a valid ``license_name`` and an existing ``license_link``."""
    problems = []
    lic = meta.get("license")
    if lic not in HUB_LICENSE_IDS:
        problems.append(f"license {lic!r} is not a Hub licence id")
    if lic == "other":
        name = meta.get("license_name")
        if not name or not _LICENSE_NAME_RE.match(str(name)):
            problems.append(f"license: other needs license_name in lowercase-with-dashes, got {name!r}")
        link = meta.get("license_link")
        if not link:
            problems.append("license: other needs license_link")
        elif dataset_dir is not None and "://" not in str(link) and not (Path(dataset_dir) / str(link)).is_file():
            problems.append(f"license_link {link!r} does not exist in {dataset_dir}")
    return problems


def _task_id_problems(meta: Mapping[str, Any]) -> list[str]:
    """Every task id exists under one of the card's task categories."""
    categories = meta.get("task_categories") or []
    allowed = set().union(*(KNOWN_TASK_IDS.get(c, set()) for c in categories)) if categories else set()
    return [f"task_id {task_id!r} does not exist under task_categories {categories}"
            for task_id in meta.get("task_ids") or [] if task_id not in allowed]


def _config_problems(meta: Mapping[str, Any], dataset_dir: str | os.PathLike | None) -> list[str]:
    """The ``configs:`` block exists, has at most one default, and (with ``dataset_dir``) its data files exist."""
    problems = []
    configs = meta.get("configs") or []
    if not configs:
        problems.append("no configs: block")
    if sum(1 for c in configs if c.get("default")) > 1:
        problems.append("more than one default config")
    if dataset_dir is not None:
        root = Path(dataset_dir)
        for c in configs:
            for files in c.get("data_files") or []:
                paths = files["path"] if isinstance(files["path"], list) else [files["path"]]
                problems += [f"config {c.get('config_name')!r}: no file matches {path!r}"
                             for path in paths if not list(root.glob(path))]
    return problems


def _paper_problems(text: str) -> list[str]:
    """The card body links the paper on arXiv and cites it under the one citation key."""
    problems = []
    if f"arxiv.org/abs/{ARXIV_ID}" not in text:
        problems.append(f"no link to the paper (https://arxiv.org/abs/{ARXIV_ID})")
    keys = set(re.findall(r"@\w+\{([^,\s]+),", text))
    if keys != {CITATION_KEY}:
        problems.append(f"citation keys {sorted(keys)}; expected only {CITATION_KEY!r}")
    return problems
