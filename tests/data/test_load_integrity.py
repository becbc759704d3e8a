"""Which loading paths verify a built dataset (the table in docs/dataset.md "Load"): a shard with
64 flipped bytes inside its data is refused by the package's checked loaders and loaded silently by plain
``datasets.load_dataset`` (the shards carry no page checksums, and ``datasets`` verifies none by default). If this
test fails because ``datasets`` started verifying, update that table."""
from __future__ import annotations

import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import pytest

from devil_dataset.core.errors import DevilError

FLIPPED_BYTES = 64  # as a black-box harness flips them


@pytest.fixture
def damaged(bench_tiny_dataset, tmp_path):
    copy = tmp_path / "ds"
    shutil.copytree(bench_tiny_dataset, copy)
    shard = sorted((copy / "data" / "fg_size_low").glob("test-*.parquet"))[0]
    data = bytearray(shard.read_bytes())
    middle = len(data) // 2
    for i in range(FLIPPED_BYTES):
        data[middle + i] ^= 0xFF
    shard.write_bytes(bytes(data))
    return copy


def test_checked_loaders_refuse_and_plain_datasets_cannot_tell(damaged, tmp_path):
    import datasets
    import pyarrow.parquet as pq

    from devil_dataset.data import iter_slice, load_slice

    with pytest.raises(DevilError, match="checksum mismatch"):
        next(iter_slice(damaged, "fg_size_low"))
    with pytest.raises(DevilError, match="checksum mismatch"):
        load_slice(damaged, "fg_size_low", cache_dir=str(tmp_path / "cache1"))
    plain = datasets.load_dataset(str(damaged), "fg_size_low", split="test", cache_dir=str(tmp_path / "cache2"))
    assert len(plain) == 2  # loaded without a word: the documented limit
    shard = sorted((damaged / "data" / "fg_size_low").glob("test-*.parquet"))[0]
    assert pq.read_table(shard, page_checksum_verification=True).num_rows >= 1  # no page checksums to verify
