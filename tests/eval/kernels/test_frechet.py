"""Frechet distance: analytic cases, the eps retry, and agreement with pytorch-fid; streaming statistics."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.kernels import frechet as M
from devil_dataset.eval.metrics import GaussianStats, frechet_distance


def test_identical_gaussians_give_zero():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 6))
    sigma = a @ a.T + np.eye(6)
    mu = rng.normal(size=6)
    assert frechet_distance(mu, sigma, mu, sigma) == pytest.approx(0.0, abs=1e-9)


def test_mean_shift_with_identity_covariances_is_squared_norm():
    d = np.array([1.0, -2.0, 0.5, 3.0])
    assert frechet_distance(np.zeros(4), np.eye(4), d, np.eye(4)) == pytest.approx(float(d @ d))


def test_diagonal_covariances_closed_form():
    s1 = np.array([1.0, 4.0, 9.0, 0.25])
    s2 = np.array([2.0, 1.0, 16.0, 1.0])
    mu1, mu2 = np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 1.0, 0.0, 3.0])
    expected = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(s1) - np.sqrt(s2)) ** 2)
    assert frechet_distance(mu1, np.diag(s1), mu2, np.diag(s2)) == pytest.approx(expected, rel=1e-10)


def test_agrees_with_pytorch_fid_on_random_statistics():
    from pytorch_fid.fid_score import calculate_frechet_distance

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(40, 8)), rng.normal(loc=0.3, size=(50, 8)) * 1.5
    args = (x.mean(0), np.cov(x, rowvar=False), y.mean(0), np.cov(y, rowvar=False))
    assert frechet_distance(*args) == pytest.approx(float(calculate_frechet_distance(*args)), rel=1e-9)


def test_eps_retry_when_sqrtm_not_finite(monkeypatch):
    from scipy import linalg  # frechet_distance imports it when it runs

    calls = []
    real = linalg.sqrtm

    def flaky(mat):
        calls.append(mat.copy())
        return np.full_like(mat, np.nan) if len(calls) == 1 else real(mat)

    monkeypatch.setattr(linalg, "sqrtm", flaky)
    value = frechet_distance(np.zeros(2), np.eye(2), np.zeros(2), np.eye(2))
    assert len(calls) == 2
    np.testing.assert_allclose(calls[1], (np.eye(2) + 1e-6 * np.eye(2)) @ (np.eye(2) + 1e-6 * np.eye(2)))
    # sigma traces are not offset, the square root is: 2 + 2 - 2 * 2 (1 + 1e-6)
    assert value == pytest.approx(-4e-6, rel=1e-6)


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError):
        frechet_distance(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))


def test_streaming_statistics_equal_numpy():
    rng = np.random.default_rng(2)
    x = rng.normal(loc=100.0, scale=0.01, size=(300, 5)).astype(np.float32)  # large offset: cancellation check
    g = GaussianStats()
    for chunk in np.array_split(x, 7):
        g.add(chunk)
    assert g.n == 300
    np.testing.assert_allclose(g.mean(), x.astype(np.float64).mean(0), rtol=1e-12)
    np.testing.assert_allclose(g.cov(), np.cov(x.astype(np.float64), rowvar=False), rtol=1e-8, atol=1e-14)


def test_frechet_of_fewer_than_two_samples_is_nan():
    a, b = GaussianStats(), GaussianStats()
    a.add(np.ones((1, 3)))
    b.add(np.ones((1, 3)))
    assert np.isnan(M.frechet_of(a, b))
