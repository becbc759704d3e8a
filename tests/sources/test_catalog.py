"""The shipped source list: the release's 234 ids of 4 users, its provenance and clip naming."""
import json
from pathlib import Path

from devil_dataset.cli import main
from devil_dataset.sources.catalog import load_catalog

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "release-sources" / "devil-sources.json"


def test_catalog_holds_the_release_list():
    cat = load_catalog()
    assert len(cat.video_ids) == 234 and len(set(cat.video_ids)) == 234
    assert cat.users == ("122995322@N02", "50169152@N06", "135886671@N08", "143856759@N06")
    assert len(cat.excluded_ids) == 95 and not set(cat.excluded_ids) & set(cat.video_ids)
    assert cat.provenance == "MichiganCOG/devil@95a7a1e:flickr-config.yml"
    assert cat.filters["resolution"] == "1920x1080" and cat.paper_clip_count == 1250
    assert cat.clip_name("50169152@N06", "33243431710", 12) == "50169152@N06-33243431710-00012"


def test_catalog_is_a_verbatim_copy_of_the_shared_facts():
    if SHARED.is_file():
        shipped = Path(__file__).resolve().parents[2] / "devil_dataset" / "sources" / "devil-sources.json"
        assert json.loads(shipped.read_text()) == json.loads(SHARED.read_text())


def test_sources_list_json(capsys):
    assert main(["sources", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [v["video_id"] for v in doc["videos"]] == list(load_catalog().video_ids)
    assert doc["users"][0] == "122995322@N02" and doc["videos"][0]["status"] == "unknown"


def test_sources_list_table(capsys):
    assert main(["sources", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 235 and lines[1].startswith("23467104578")
