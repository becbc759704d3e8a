"""The ground-truth cache: the same documents cold, warm and without it; corrupt entries recomputed; deterministic
entries; the size cap; workers of an engine sharing the folder; the CLI flags."""
from __future__ import annotations

import json
import os
import pickle

import numpy as np
import pytest

from devil_dataset.cli import main
from devil_dataset.core.engines import get_engine
from devil_dataset.core.errors import DevilError
from devil_dataset.core.release_format import write_frame_pngs
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.metrics.registry import build_metrics
from devil_dataset.eval.scoring import gt_cache as gc
from devil_dataset.eval.scoring.clip_scoring import ClipScorer
from devil_dataset.eval.scoring.evaluate import evaluate_dataset, evaluate_slice
from devil_dataset.eval.scoring.gt_cache import GroundTruthCache, cached_prepare_clip, decode_entry, encode_entry

from ..conftest import slice_rows

METRICS = ["psnr", "ssim", "pcons", "warp_error"]
OPTS = EvalOptions(flow="dis")


@pytest.fixture
def two_methods(eval_samples, tmp_path):
    dirs = {}
    for name, make in (("noisy", lambda s: s.pred), ("negative", lambda s: 255 - s.pred)):
        for s in eval_samples:
            write_frame_pngs(make(s), tmp_path / name / s.clip_id, "pred")
        dirs[name] = tmp_path / name
    return dirs


def _same(*docs) -> bool:
    """Documents equal value for value (JSON text: NaN equals NaN)."""
    return len({json.dumps(d, sort_keys=True) for d in docs}) == 1


def _entries(cache: GroundTruthCache):
    return [p for p, _, _ in cache.entries()]


def test_cold_warm_and_no_cache_give_the_same_documents(eval_samples, two_methods, tmp_path):
    rows = slice_rows(eval_samples)
    plain = evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows)
    cache = GroundTruthCache(tmp_path / "gt")
    cold = evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows,
                            gt_cache=cache)
    assert (cache.stats.hits, cache.stats.misses) == (0, 3)  # one warp error entry per clip
    assert len(_entries(cache)) == 3 and cache.stats.written_bytes == cache.size_bytes() > 0
    warm_cache = GroundTruthCache(tmp_path / "gt")
    warm = evaluate_dataset("tiny", "all", two_methods["negative"], METRICS, OPTS, progress=False, rows=rows,
                            gt_cache=warm_cache)
    assert (warm_cache.stats.hits, warm_cache.stats.misses, warm_cache.stats.written_bytes) == (3, 0, 0)
    assert _same(cold, plain)
    assert _same(warm, evaluate_dataset("tiny", "all", two_methods["negative"], METRICS, OPTS, progress=False,
                                        rows=rows))
    # several methods in one pass (prepared work shared) through a warm cache, given as a folder
    both = evaluate_slice("tiny", "all", two_methods, METRICS, OPTS, progress=False, rows=rows,
                          gt_cache=tmp_path / "gt")
    assert list(both) == ["noisy", "negative"] and _same(both["noisy"], plain) and _same(both["negative"], warm)


def test_corrupt_entry_is_reported_and_recomputed(eval_samples, two_methods, tmp_path, capsys):
    rows = slice_rows(eval_samples)
    cache = GroundTruthCache(tmp_path / "gt")
    ref = evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows,
                           gt_cache=cache)
    entries = _entries(cache)
    damaged = bytearray(entries[0].read_bytes())
    damaged[-100] ^= 0xFF  # one flipped bit pattern inside the last array's data
    entries[0].write_bytes(bytes(damaged))
    entries[1].write_bytes(entries[1].read_bytes()[:-10])  # truncated
    capsys.readouterr()
    again = GroundTruthCache(tmp_path / "gt")
    doc = evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows,
                           gt_cache=again)
    assert _same(doc, ref)
    assert (again.stats.corrupt, again.stats.hits, again.stats.misses) == (2, 1, 2)
    err = capsys.readouterr().err
    assert err.count("corrupt gt cache entry") == 2 and "payload sha256 does not match" in err
    third = GroundTruthCache(tmp_path / "gt")  # rewritten entries verify again
    evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows, gt_cache=third)
    assert (third.stats.corrupt, third.stats.hits) == (0, 3)


def test_entry_checks_magic_digest_and_key():
    arrays = {"fw": np.arange(12, dtype=np.float32).reshape(1, 2, 3, 2), "bw": np.zeros((1, 2, 3, 2), np.float32)}
    data = encode_entry("a" * 64, "GroundTruthFlow", arrays, {"metric": "warp_error"})
    assert data == encode_entry("a" * 64, "GroundTruthFlow", arrays, {"metric": "warp_error"})  # deterministic
    kind, back = decode_entry(data, "a" * 64)
    assert kind == "GroundTruthFlow" and all(np.array_equal(back[k], arrays[k]) for k in arrays)
    with pytest.raises(DevilError, match="bad magic"):
        decode_entry(b"PK" + data, "a" * 64)
    with pytest.raises(DevilError, match="sha256 does not match"):
        decode_entry(data[:-1] + bytes([data[-1] ^ 1]), "a" * 64)
    with pytest.raises(DevilError, match="does not match the entry's key"):
        decode_entry(data, "b" * 64)  # an entry renamed onto another key


def test_prepared_states_round_trip_and_unknown_types_are_refused():
    """The cache stores what the metric takes apart (``prepared_to_arrays``) and the metric puts it back: the warp
    error's flow and hole states, and any metric's arrays or lists of arrays; the cache itself knows no state type."""
    from devil_dataset.eval.kernels.warp import GroundTruthFlow
    from devil_dataset.eval.metrics.metric import Metric
    from devil_dataset.eval.metrics.warp import WarpErrorMetric

    warp = WarpErrorMetric(OPTS)
    rng = np.random.default_rng(0)
    flow = GroundTruthFlow([rng.random((4, 5, 2), np.float32) for _ in range(2)],
                           [rng.random((4, 5, 2), np.float32) for _ in range(2)])
    kind, arrays = warp.prepared_to_arrays(flow)
    back = warp.prepared_from_arrays(kind, decode_entry(encode_entry("c" * 64, kind, arrays, {}), "c" * 64)[1])
    assert isinstance(back, GroundTruthFlow) and back.device is None
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(back.fw + back.bw, flow.fw + flow.bw))
    hole = np.zeros((3, 4, 5), bool)
    hole[0, 1:3, 1:3] = hole[2, 0, 0] = True
    state = flow.for_hole(hole)  # what the warp error needs under one hole: the points and the flow there
    kind, arrays = warp.prepared_to_arrays(state)
    back_state = warp.prepared_from_arrays(kind, decode_entry(encode_entry("d" * 64, kind, arrays, {}), "d" * 64)[1])
    assert kind == "HoleFlow" and back_state.hole is None and back_state.fits(hole) and not back_state.fits(~hole)
    assert len(back_state.points) == len(state.points) == 2
    for p, q in zip(state.points, back_state.points):
        assert (p is None) == (q is None)
        if p is not None:
            assert all(np.array_equal(a, b) for a, b in zip(p, q)) and q[2].dtype == np.float32
    plain = Metric()
    feats = [rng.random((3, 8)), rng.random((1, 8))]
    assert all(np.array_equal(a, b) for a, b in zip(plain.prepared_from_arrays(*plain.prepared_to_arrays(feats)),
                                                    feats))
    with pytest.raises(TypeError, match="cannot be stored"):
        plain.prepared_to_arrays({"a": 1})
    with pytest.raises(ValueError, match="unknown prepared state kind"):
        plain.prepared_from_arrays("os.system", {})  # an entry names a kind; nothing is imported by that name


def test_two_writers_write_identical_bytes(eval_samples, tmp_path):
    metrics, _ = build_metrics(["warp_error"], OPTS)
    a, b = GroundTruthCache(tmp_path / "a"), GroundTruthCache(tmp_path / "b")
    cached_prepare_clip(metrics, eval_samples[0].gt, a)
    cached_prepare_clip(metrics, eval_samples[0].gt, b)
    (pa,), (pb,) = _entries(a), _entries(b)
    assert pa.name == pb.name and pa.read_bytes() == pb.read_bytes()


def test_key_follows_content_options_backend_and_weights(eval_samples, monkeypatch):
    gt = eval_samples[0].gt
    h = gc.clip_content_hash(gt)
    changed = gt.copy()
    changed[0, 0, 0, 0] ^= 1
    assert gc.clip_content_hash(changed) != h
    warp = build_metrics(["warp_error"], OPTS)[0]["warp_error"]
    ident = gc.prepare_identity(warp)
    assert ident is not None and ident["flow_backend"] == "dis"
    corrected = gc.prepare_identity(build_metrics(["warp_error"], EvalOptions(flow="dis",
                                                                              parity="corrected"))[0]["warp_error"])
    assert corrected is not None and gc.prepare_key(h, corrected) != gc.prepare_key(h, ident)
    injected = build_metrics(["psnr"], OPTS)[0]  # no prepare, never cached
    assert gc.prepare_identity(injected["psnr"]) is None
    from devil_dataset.eval.metrics.warp import WarpErrorMetric

    assert gc.prepare_identity(WarpErrorMetric(OPTS, flow_fn=lambda a, b: np.zeros(a.shape[:2] + (2,),
                                                                                  np.float32))) is None
    from devil_dataset.eval.metrics import perceptual

    fid = perceptual.FIDMetric.__new__(perceptual.FIDMetric)  # a network metric without its network
    fid.options, fid._injected = OPTS, False
    monkeypatch.setattr(perceptual, "weights_info", lambda name: {"sha256": "1" * 64})
    one = gc.prepare_identity(fid)
    monkeypatch.setattr(perceptual, "weights_info", lambda name: {"sha256": "2" * 64})
    two = gc.prepare_identity(fid)
    assert one is not None and two is not None and one["weights"] == {"inception": "1" * 64}
    assert one["batch_size"] == 8 and one["device"] == "cpu" and gc.prepare_key(h, one) != gc.prepare_key(h, two)


def test_size_cap_removes_least_recently_used(tmp_path):
    cache = GroundTruthCache(tmp_path / "gt", max_bytes=10_000)
    for i in range(3):
        assert cache.put(f"{i:064x}", [np.full(500, i, np.float64)], {"i": i})  # ~4.6 kB each
        os.utime(cache.path_of(f"{i:064x}"), ns=(i * 10**9, i * 10**9))
    assert [p.name[:64] for p in _entries(cache)] == [f"{i:064x}" for i in (1, 2)]  # the first went
    assert cache.stats.evicted == 1 and cache.size_bytes() <= 10_000
    assert cache.get(f"{1:064x}") is not None  # a hit makes entry 1 the most recent
    cache.put(f"{3:064x}", [np.zeros(500)], {})
    assert [p.name[:64] for p in _entries(cache)] == [f"{i:064x}" for i in (1, 3)]
    assert not cache.put("f" * 64, [np.zeros(5000)], {})  # larger than the cap: not stored
    assert "f" * 64 not in {p.name[:64] for p in _entries(cache)}
    stale, fresh = cache.directory / "ab" / ".tmp-old.gt.1", cache.directory / "ab" / ".tmp-new.gt.2"
    for p in (stale, fresh):
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"half")
    os.utime(stale, (1, 1))  # an interrupted write long ago; the fresh one may be a concurrent run's
    cache.trim(10_000)
    assert not stale.exists() and fresh.exists()
    with pytest.raises(DevilError, match="max_bytes"):
        GroundTruthCache(tmp_path / "x", max_bytes=-1)
    (tmp_path / "file").write_text("x")
    with pytest.raises(DevilError, match="not a directory"):
        GroundTruthCache(tmp_path / "file")


def test_concurrent_writers_readers_and_trims_never_see_a_partial_entry(tmp_path):
    """Four writers and readers of one folder at once, with a cap that forces trimming all the time: every read is
    a whole entry or a miss, never an error or a corrupt entry, and the cap holds at the end."""
    import threading

    cap = 6 * 9_000  # room for about six of the 40 entries
    values = {f"{i:064x}": np.full(1_000, i, np.float64) for i in range(40)}
    errors: list[BaseException] = []
    wrong: list[str] = []

    def work(seed: int) -> None:
        cache = GroundTruthCache(tmp_path / "gt", max_bytes=cap)  # each thread its own handle, as each process has
        order = np.random.default_rng(seed).permutation(len(values))
        try:
            for k in order:
                key = f"{k:064x}"
                got = cache.get(key)
                if got is None:
                    cache.put(key, [values[key]], {"k": int(k)})
                elif not np.array_equal(got[0], values[key]):
                    wrong.append(key)
                if cache.stats.corrupt:
                    wrong.append(f"corrupt: {cache.stats.problems}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert errors == [] and wrong == []
    final = GroundTruthCache(tmp_path / "gt", max_bytes=cap)
    final.trim(cap)
    assert final.size_bytes() <= cap
    assert not list((tmp_path / "gt").glob("*/.tmp*"))  # no temporary left behind


def test_cache_pickles_as_its_folder_and_cap(tmp_path):
    cache = GroundTruthCache(tmp_path, max_bytes=123)
    cache.stats.hits = 5
    back = pickle.loads(pickle.dumps(cache))
    assert (back.directory, back.max_bytes, back.stats.hits) == (tmp_path, 123, 0)


def test_local_workers_share_the_cache(eval_samples, two_methods, tmp_path):
    rows = slice_rows(eval_samples)
    ref = evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows)
    engine = get_engine("local", jobs=2)
    cold = GroundTruthCache(tmp_path / "gt")
    assert _same(evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows,
                                  engine=engine, gt_cache=cold), ref)
    assert (cold.stats.misses, len(_entries(cold))) == (3, 3)  # the workers' counts come back
    warm = GroundTruthCache(tmp_path / "gt")
    assert _same(evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows,
                                  engine=engine, gt_cache=warm), ref)
    assert (warm.stats.hits, warm.stats.misses) == (3, 0)


def test_clip_scorer_with_cache_equals_without(eval_samples, tmp_path):
    s = eval_samples[1]
    cache = GroundTruthCache(tmp_path / "gt")
    plain = ClipScorer(s.clip_id, s.gt, METRICS, OPTS).score(s.pred, s.hole, "h")
    cold = ClipScorer(s.clip_id, s.gt, METRICS, OPTS, gt_cache=cache).score(s.pred, s.hole, "h")
    warm_scorer = ClipScorer(s.clip_id, s.gt, METRICS, OPTS, gt_cache=cache)
    warm = warm_scorer.score(s.pred, s.hole, "h")
    assert plain == cold == warm and (cache.stats.misses, cache.stats.hits) == (1, 1)
    assert warm_scorer._clip_states == {}  # the hole's entry was there: no flow computed at all


def test_clip_scorer_writes_per_hole_entries_that_evaluate_reads(eval_samples, two_methods, tmp_path):
    """The scorer stores the warp error per (clip, hole), computing the clip's flows once for all its holes; the
    entries are the ones ``devil evaluate`` reads (one key for both)."""
    cache = GroundTruthCache(tmp_path / "gt")
    flipped = {}
    for s in eval_samples:
        scorer = ClipScorer(s.clip_id, s.gt, METRICS, OPTS, gt_cache=cache)
        other = s.hole[:, ::-1].copy()  # a second hole of the same clip
        flipped[s.clip_id] = (scorer.score(s.pred, other, "other"), scorer.score(s.pred, s.hole, "hole"))
        assert list(scorer._clip_states) == ["warp_error"]  # computed once, for both holes
    assert (cache.stats.misses, cache.stats.hits) == (2 * len(eval_samples), 0)
    for s in eval_samples:  # the same values as scoring each hole without a cache
        plain = ClipScorer(s.clip_id, s.gt, METRICS, OPTS)
        assert flipped[s.clip_id] == (plain.score(s.pred, s.hole[:, ::-1].copy(), "other"),
                                      plain.score(s.pred, s.hole, "hole"))
    reader = GroundTruthCache(tmp_path / "gt")
    evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False,
                     rows=slice_rows(eval_samples), gt_cache=reader)
    assert (reader.stats.hits, reader.stats.misses) == (len(eval_samples), 0)


def test_cli_flags(eval_samples, two_methods, tmp_path, monkeypatch, capsys):
    import devil_dataset.eval.scoring.evaluate as ev_mod

    rows = slice_rows(eval_samples)
    monkeypatch.setattr(ev_mod, "_slice_rows", lambda dataset, config, columns=None: iter(rows))
    ds = tmp_path / "ds"
    ds.mkdir()
    base = ["evaluate", "--dataset", str(ds), "--config", "all", "--predictions", str(two_methods["noisy"]),
            "--metrics", *METRICS, "--flow", "dis", "--json", "--no-progress"]
    assert main(base + ["--no-gt-cache"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main(base + ["--gt-cache", str(tmp_path / "gt"), "--gt-cache-max-gib", "1"]) == 0
    out = capsys.readouterr()
    assert _same(json.loads(out.out), plain) and "0 hits, 3 misses" in out.err
    assert len(_entries(GroundTruthCache(tmp_path / "gt"))) == 3
    assert main(base) == 0  # default folder: $DEVIL_GT_CACHE (a temporary folder in the tests)
    assert "3 misses" in capsys.readouterr().err and len(_entries(GroundTruthCache(os.environ["DEVIL_GT_CACHE"]))) == 3
    assert main(base + ["--no-gt-cache", "--gt-cache", str(tmp_path / "gt")]) != 0
    assert "cannot be combined" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(base + ["--gt-cache-max-gib", "0"])


@pytest.mark.slow
def test_ray_workers_share_the_cache(eval_samples, two_methods, tmp_path, monkeypatch):
    """The cache travels with the Ray tasks: workers write the entries of a cold run and read them in a warm one."""
    import tempfile

    monkeypatch.setenv("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # a private local Ray
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    ray = pytest.importorskip("ray")
    rows = slice_rows(eval_samples)
    ref = evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows)
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        engine = get_engine("ray", jobs=2)
        cold, warm = GroundTruthCache(tmp_path / "gt"), GroundTruthCache(tmp_path / "gt")
        docs = [evaluate_dataset("tiny", "all", two_methods["noisy"], METRICS, OPTS, progress=False, rows=rows,
                                 engine=engine, gt_cache=c) for c in (cold, warm)]
    finally:
        ray.shutdown()
    assert _same(ref, *docs)
    assert (cold.stats.misses, warm.stats.hits, warm.stats.misses, len(_entries(warm))) == (3, 3, 0, 3)
