"""The dataset card: DatasetCardData metadata the Hub recognises, and the offline checks `publish` runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from huggingface_hub import DatasetCard

from devil_dataset.builder import dataset_card as dc
from devil_dataset.core.errors import DevilError
from devil_dataset.core.slices import SLICES

CONFIGS = {name: {"rows": 5, "bytes": 1000, "description": f"{s.videos} x {s.masks}"} for name, s in SLICES.items()}


def _card(**kwargs) -> str:
    args = dict(configs=CONFIGS, license="other", pretty_name="DEVIL test", build_notes="notes", attributions=["a: b"])
    args.update(kwargs)
    return str(dc.render_card(**args))


def test_metadata_round_trips_through_huggingface_hub():
    card = DatasetCard(_card(preview={"rows": 2, "bytes": 10}))
    meta = card.data.to_dict()
    assert meta["license"] == "other" and meta["license_name"] == "per-clip-licences"
    assert meta["license_link"] == "LICENSE.md"
    assert meta["task_categories"] == ["image-to-image"] and meta["task_ids"] == ["image-inpainting"]
    names = [c["config_name"] for c in meta["configs"]]
    assert names == [*SLICES, "preview"] and meta["configs"][0]["default"] is True
    assert meta["configs"][-1]["data_files"] == [{"split": "test", "path": "preview/test-*.parquet"}]
    assert "https://arxiv.org/abs/2105.05332" in card.text and "{{" not in card.text
    assert set(re.findall(r"@\w+\{([^,\s]+),", card.text)) == {dc.CITATION_KEY}


def test_a_known_licence_has_no_license_name_and_an_unknown_one_is_refused():
    meta = DatasetCard(_card(license="cc-by-4.0")).data.to_dict()
    assert meta["license"] == "cc-by-4.0" and "license_name" not in meta and "license_link" not in meta
    with pytest.raises(DevilError, match="not a Hub licence id"):
        _card(license="flickr")


def test_card_problems_finds_each_defect(tmp_path):
    for name in CONFIGS:
        d = tmp_path / "data" / name
        d.mkdir(parents=True)
        (d / "test-00000-of-00002.parquet").write_bytes(b"x")
    (tmp_path / "LICENSE.md").write_text("licences")
    good = _card()
    assert dc.card_problems(good, tmp_path) == []
    cases = {
        "license 'flickr' is not a Hub licence id": ("license: other", "license: flickr"),
        "license_name": ("license_name: per-clip-licences", "license_name: Per Clip"),
        "task_id 'video-inpainting'": ("- image-inpainting", "- video-inpainting"),
        "no link to the paper": ("https://arxiv.org/abs/2105.05332", "https://example.org"),
        "citation keys": ("@inproceedings{szeto2022devil,", "@inproceedings{szeto2021devil,"),
        "no file matches 'data/fg_size_low": ("data/fg_size_low/test-*.parquet", "data/fg_size_low/x-*.parquet"),
    }
    for expected, (old, new) in cases.items():
        assert old in good, old
        problems = dc.card_problems(good.replace(old, new), tmp_path)
        assert any(expected in p for p in problems), (expected, problems)
    (tmp_path / "LICENSE.md").unlink()
    assert dc.card_problems(good, tmp_path) == [f"license_link 'LICENSE.md' does not exist in {tmp_path}"]
    assert dc.card_problems("---\nlicense: [unclosed\n---\n", None)[0].startswith("metadata does not parse")


def test_the_readme_and_the_card_cite_the_same_key():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"@\w+\{([^,\s]+),", readme)) == {dc.CITATION_KEY}
