"""The matcher's int8 products (core/int8_products.py): exact distances where taken, found out where not exact."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.core import int8_products as i8

torch = pytest.importorskip("torch")
_real_has_vnni = i8._has_vnni


def _saturating_int_mm(a, b, out=None):
    """oneDNN's s8 x s8 product as a CPU without VNNI computes it: ``a`` made unsigned (+128), pairs of products
    summed into 16 bits with saturation (``vpmaddubsw``), then exact, and the +128 taken back from ``b``'s sums."""
    au = a.numpy().astype(np.int64) + 128
    bs = b.numpy().astype(np.int64)
    if au.shape[1] % 2:
        au, bs = np.pad(au, ((0, 0), (0, 1))), np.pad(bs, ((0, 1), (0, 0)))
    prod = au[:, :, None] * bs[None, :, :]
    pairs = np.clip(prod[:, 0::2] + prod[:, 1::2], -32768, 32767)
    return torch.from_numpy((pairs.sum(axis=1) - 128 * bs.sum(axis=0)[None, :]).astype(np.int32))


@pytest.fixture
def fresh_status(monkeypatch):
    """A fresh check, on a CPU that says it has VNNI (so that the check itself runs on any machine)."""
    monkeypatch.setattr(i8, "_has_vnni", lambda: True)
    i8.int8_status.cache_clear()
    yield
    i8.int8_status.cache_clear()


def test_a_saturating_product_is_found_out(monkeypatch, fresh_status):
    """The check multiplies the worst case of a 16-bit pair sum: a product that saturates there is not taken, and
    no int8 operands are made (the matcher keeps the float32 product)."""
    monkeypatch.setattr(torch, "_int_mm", _saturating_int_mm)
    ok, why = i8.int8_status()
    assert not ok and "not exact on this CPU" in why
    assert i8.int8_operands(np.array([[0, 255]], np.float32)) is None


def test_the_emulated_saturation_is_exact_on_small_values(monkeypatch):
    """Control for the test above: the emulation is the exact product where no pair sum leaves 16 bits."""
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (9, 130)).astype(np.int8)
    b = rng.integers(-60, 60, (130, 11)).astype(np.int8)
    got = _saturating_int_mm(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


def test_without_torch_the_float_product_is_used(monkeypatch, fresh_status):
    def no_torch():
        raise ImportError("no torch here")
    monkeypatch.setattr(i8, "_torch", no_torch)
    ok, why = i8.int8_status()
    assert not ok and "torch is not installed" in why


def test_without_vnni_or_onednn_the_float_product_is_used(monkeypatch, fresh_status):
    """Without VNNI torch's int8 product is its own plain loops (exact, ~170x slower): not taken. The CPU's answer
    comes from cpuid, /proc/cpuinfo only where glibc cannot say; torch's oneDNN switched off is refused too."""
    monkeypatch.setattr(i8, "_has_vnni", _real_has_vnni)
    monkeypatch.setattr(i8, "cpuid_vnni", lambda: False)
    ok, why = i8.int8_status()
    assert not ok and "no AVX-512 VNNI" in why
    i8.int8_status.cache_clear()
    monkeypatch.setattr(i8, "cpuid_vnni", lambda: None)
    monkeypatch.setattr(i8, "cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    assert not i8.int8_status()[0]
    monkeypatch.setattr(i8, "cpu_flags", lambda: frozenset({"avx2", "avx512_vnni"}))
    assert i8._has_vnni()
    i8.int8_status.cache_clear()
    monkeypatch.setattr(i8, "_has_vnni", lambda: True)
    monkeypatch.setattr(torch.backends.mkldnn, "enabled", False)
    ok, why = i8.int8_status()
    assert not ok and "mkldnn) is off" in why


def test_values_outside_a_byte_get_no_int8_form():
    assert i8.int8_operands(np.array([[0, 256]], np.float32)) is None
    assert i8.int8_operands(np.array([[-1, 3]], np.float32)) is None
    assert i8.int8_operands(np.zeros((0, 4), np.float32)) is None


@pytest.mark.skipif(not i8.int8_status()[0], reason=f"int8 products not taken here: {i8.int8_status()[1]}")
@pytest.mark.parametrize("dim", [3, 128, 256])
def test_block_products_give_the_exact_squared_distances(dim):
    """Random bytes with the extremes (0 and 255 everywhere in some rows), blocks of every size: the products and the
    two integer terms give the int64 squared distances, exactly."""
    rng = np.random.default_rng(dim)
    q = rng.integers(0, 256, (70, dim)).astype(np.float32)
    t = rng.integers(0, 256, (50, dim)).astype(np.float32)
    q[0], q[1], t[0], t[1] = 0, 255, 255, 0
    want = ((q.astype(np.int64)[:, None, :] - t.astype(np.int64)[None, :, :]) ** 2).sum(axis=2)
    qo, to = i8.int8_operands(q), i8.int8_operands(t)
    assert qo is not None and to is not None
    out = np.empty((32, 50), np.int32)
    with i8.one_omp_thread():
        for start in range(0, 70, 32):
            stop = min(start + 32, 70)
            products = i8.block_products(qo, to, start, stop, out)
            got = qo.row_term[start:stop, None].astype(np.int64) + to.column_term - 2 * products.astype(np.int64)
            assert np.array_equal(got, want[start:stop])


def test_one_omp_thread_restores_this_threads_count():
    controllers = i8._openmp_controllers()
    before = [c.get_num_threads() for c in controllers]
    with i8.one_omp_thread():
        assert all(c.get_num_threads() == 1 for c in controllers)
    assert [c.get_num_threads() for c in controllers] == before
