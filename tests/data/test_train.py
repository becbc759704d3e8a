"""The training dataset: reproducible windows and masks per seed, independent of workers; crop/resize options."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from devil_dataset.core.errors import DevilError
from devil_dataset.data import InpaintingTrainDataset, worker_init_fn


def _renderer(calls=None):
    def render(preset, seed, num_frames):
        if calls is not None:
            calls.append((preset, seed, num_frames))
        m = np.zeros((num_frames, 1080, 1920), bool)
        for t in range(num_frames):
            x = 200 + (seed % 997) + 10 * t
            m[t, 300:800, x : x + 300] = True
        return m
    return render


def _items(ds):
    return [ds[i] for i in range(len(ds))]


def _same(a, b):
    return (a["clip_id"], a["start"], a["preset"], a["mask_index"], a["reversed"]) == \
        (b["clip_id"], b["start"], b["preset"], b["mask_index"], b["reversed"]) and \
        torch.equal(a["frames"], b["frames"]) and torch.equal(a["hole"], b["hole"])


def test_reproducible_per_seed_and_epoch(data_tiny_dataset):
    kw = dict(num_frames=8, samples_per_epoch=6, mask_renderer=_renderer(),
              presets=["fgs-h_fgm-h_fgd-h", "fgs-l_fgm-l_fgd-l"])
    a, b = InpaintingTrainDataset(data_tiny_dataset, **kw), InpaintingTrainDataset(data_tiny_dataset, **kw)
    ia, ib = _items(a), _items(b)
    assert all(_same(x, y) for x, y in zip(ia, ib))
    assert {x["preset"] for x in ia} <= {"fgs-h_fgm-h_fgd-h", "fgs-l_fgm-l_fgd-l"}
    b.set_epoch(1)
    assert not all(_same(x, y) for x, y in zip(ia, _items(b)))
    c = InpaintingTrainDataset(data_tiny_dataset, seed=1, **kw)
    assert not all(_same(x, y) for x, y in zip(ia, _items(c)))
    item = ia[0]
    assert item["frames"].shape == (8, 3, 48, 64) and item["frames"].dtype == torch.uint8
    assert item["hole"].shape == (8, 1, 48, 64) and item["hole"].dtype == torch.bool and item["hole"].any()


def test_same_items_with_and_without_workers(data_tiny_dataset):
    ds = InpaintingTrainDataset(data_tiny_dataset, num_frames=5, samples_per_epoch=4, mask_renderer=_renderer(),
                                crop=(32, 32), reverse_prob=0.5)
    single = list(torch.utils.data.DataLoader(ds, batch_size=2, num_workers=0))
    multi = list(torch.utils.data.DataLoader(ds, batch_size=2, num_workers=2, worker_init_fn=worker_init_fn))
    for s, m in zip(single, multi):
        assert torch.equal(s["frames"], m["frames"]) and torch.equal(s["hole"], m["hole"])
        assert s["clip_id"] == m["clip_id"]
    assert single[0]["frames"].shape == (2, 5, 3, 32, 32)


def test_masks_rendered_on_the_fly_and_reversed(data_tiny_dataset):
    calls = []
    ds = InpaintingTrainDataset(data_tiny_dataset, num_frames=6, samples_per_epoch=8, mask_renderer=_renderer(calls),
                                reverse_prob=1.0)
    item = ds[0]
    assert item["reversed"] and calls[-1][2] == 90  # a reversed mask needs all 90 frames
    full = _renderer()(item["preset"], calls[-1][1], 90)[::-1][:6]
    from devil_dataset.core.cover_crop import cover_crop_mask

    assert np.array_equal(item["hole"][:, 0].numpy(), cover_crop_mask(full, (64, 48)))


def test_resize_and_errors(data_tiny_dataset):
    ds = InpaintingTrainDataset(data_tiny_dataset, num_frames=4, resize=(32, 24), mask_renderer=_renderer())
    item = ds[1]
    assert item["frames"].shape == (4, 3, 24, 32) and item["hole"].shape == (4, 1, 24, 32)
    with pytest.raises(DevilError, match="no clip"):
        InpaintingTrainDataset(data_tiny_dataset, num_frames=500)
    with pytest.raises(DevilError, match="unknown preset"):
        InpaintingTrainDataset(data_tiny_dataset, presets=["fgs-x"])
    with pytest.raises(IndexError):
        ds[len(ds)]


def _keys(batches):
    return [(b["clip_id"], b["start"].tolist(), b["mask_index"].tolist()) for b in batches]


def test_set_epoch_reaches_persistent_workers(data_tiny_dataset):
    """Two epochs with persistent workers give the items fresh workers give, and the epochs differ."""
    kw = dict(num_frames=5, samples_per_epoch=6, mask_renderer=_renderer(), crop=(32, 32))
    fresh, kept = InpaintingTrainDataset(data_tiny_dataset, **kw), InpaintingTrainDataset(data_tiny_dataset, **kw)
    lf = torch.utils.data.DataLoader(fresh, batch_size=2, num_workers=2)
    lk = torch.utils.data.DataLoader(kept, batch_size=2, num_workers=2, persistent_workers=True)
    seen_fresh, seen_kept = [], []
    for epoch in range(2):
        fresh.set_epoch(epoch)
        kept.set_epoch(epoch)
        seen_fresh.append(list(lf))
        seen_kept.append(list(lk))
    assert _keys(seen_kept[0]) == _keys(seen_fresh[0]) and _keys(seen_kept[1]) == _keys(seen_fresh[1])
    assert _keys(seen_kept[0]) != _keys(seen_kept[1])
    assert all(torch.equal(a["hole"], b["hole"]) for a, b in zip(seen_kept[1], seen_fresh[1]))


def test_channels_last_transform_and_pickle(data_tiny_dataset):
    import pickle

    kw = dict(num_frames=4, samples_per_epoch=2, mask_renderer=_renderer())
    first = InpaintingTrainDataset(data_tiny_dataset, **kw)[0]
    last = InpaintingTrainDataset(data_tiny_dataset, channels_first=False, **kw)[0]
    assert last["frames"].shape == (4, 48, 64, 3) and last["hole"].shape == (4, 48, 64, 1)
    assert torch.equal(last["frames"].permute(0, 3, 1, 2), first["frames"])
    scaled = InpaintingTrainDataset(data_tiny_dataset, transform=_to_float, **kw)
    item = scaled[0]
    assert item["frames"].dtype == torch.float32 and float(item["frames"].max()) <= 1.0 and item["scaled"]
    ds = InpaintingTrainDataset(data_tiny_dataset, **{**kw, "mask_renderer": _plain_renderer})
    ds.set_epoch(3)
    again = pickle.loads(pickle.dumps(ds))
    assert again.epoch == 3 and _same(again[1], ds[1])


def _to_float(item: dict) -> dict:
    return {**item, "frames": item["frames"].float() / 255, "scaled": True}


def _plain_renderer(preset, seed, num_frames):  # picklable (module level)
    return _renderer()(preset, seed, num_frames)


def test_default_masks_are_drawn_at_the_clip_size_and_release_mode_is_the_benchmark_path(data_tiny_dataset):
    """The default (scaled) masks, and masks="release" (1080p render + cover crop), give the same windows."""
    from devil_dataset.core.cover_crop import cover_crop_mask
    from devil_dataset.core.masks import mask_seed, render_mask, render_mask_scaled

    kw = dict(num_frames=4, samples_per_epoch=6, reverse_prob=0.5, seed=3)
    fast = InpaintingTrainDataset(data_tiny_dataset, **kw)
    release = InpaintingTrainDataset(data_tiny_dataset, masks="release", **kw)
    seen_reversed = set()
    for i in range(len(fast)):
        a, b = fast[i], release[i]
        meta = ("clip_id", "start", "preset", "mask_index", "reversed")
        assert [a[k] for k in meta] == [b[k] for k in meta] and torch.equal(a["frames"], b["frames"])
        total = 90 if a["reversed"] else 4
        seen_reversed.add(a["reversed"])
        seed = mask_seed(a["mask_index"])
        expected = render_mask_scaled(a["preset"], seed, (64, 48), frames=range(4), num_frames=total,
                                      reverse=a["reversed"])
        assert torch.equal(a["hole"][:, 0], torch.from_numpy(expected))
        full = render_mask(a["preset"], seed, num_frames=total)
        full = full[::-1] if a["reversed"] else full
        assert torch.equal(b["hole"][:, 0], torch.from_numpy(cover_crop_mask(np.ascontiguousarray(full[:4]), (64, 48))))
    assert seen_reversed == {False, True}
    cropped = InpaintingTrainDataset(data_tiny_dataset, crop=(32, 24), **kw)[1]
    assert cropped["hole"].shape == (4, 1, 24, 32) and cropped["frames"].shape == (4, 3, 24, 32)
    with pytest.raises(DevilError, match="masks must be one of scaled, release"):
        InpaintingTrainDataset(data_tiny_dataset, masks="fast")
