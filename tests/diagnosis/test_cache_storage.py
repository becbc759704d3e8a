"""The attribute cache stores with the package's one NaN / infinity JSON codec and finds its folder with the one
cache-folder rule (:mod:`devil_dataset.eval.scoring.storage`): same folders, same env variables, same file bytes."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from devil_dataset.diagnosis import attribute_table, cache
from devil_dataset.eval.scoring import storage


def test_the_codec_is_the_one_of_eval_storage():
    assert cache.encode_value is storage.encode_value
    assert cache.decode_value is storage.decode_value
    assert attribute_table.encode_value is storage.encode_value


@pytest.mark.parametrize("value, stored", [(math.inf, '"inf"'), (-math.inf, '"-inf"'), (math.nan, "null"),
                                           (0.25, "0.25")])
def test_entry_bytes_are_unchanged(tmp_path, value, stored):
    store = cache.AttributeCache(tmp_path)
    key = store.key("fg_size", "abc", "")
    store.save(key, value)
    content = json.loads(f'{{"value": {stored}}}')
    expected = f'{{"checksum": "{cache.entry_checksum(key, content)}", "content": {{"value": {stored}}}}}\n'
    assert store.entry_path(key).read_bytes() == expected.encode()
    back = store.load(key)
    assert back is not None and (math.isnan(back) if math.isnan(value) else back == value)


def test_folder_defaults_and_env_variables(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.ATTRIBUTE_CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache.default_attribute_cache_dir() == Path("~/.cache/devil-dataset/attributes").expanduser()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.default_attribute_cache_dir() == tmp_path / "xdg" / "devil-dataset" / "attributes"
    monkeypatch.setenv(cache.ATTRIBUTE_CACHE_ENV, str(tmp_path / "attrs"))
    assert cache.default_attribute_cache_dir() == tmp_path / "attrs"
    assert cache.ATTRIBUTE_CACHE_ENV == "DEVIL_ATTRIBUTE_CACHE"


def test_an_empty_table_cell_is_a_missing_score():
    assert math.isnan(attribute_table._cell_score("")) and math.isnan(attribute_table._cell_score(None))
    assert attribute_table._cell_score("inf") == math.inf
    with pytest.raises(ValueError):
        attribute_table._cell_score("abc")
