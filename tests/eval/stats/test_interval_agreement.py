"""A comparison's interval, test and verdict agree; a finding's parts do not depend on the other methods."""
from __future__ import annotations

import numpy as np
import pytest

from devil_dataset.eval.stats.significance import SignFlipTest, compare_methods, holm, holm_levels


def _doc(method, values, slice_name="fg_size_high", key="psnr"):
    videos = {f"c{i:02d}": {key: float(v)} for i, v in enumerate(values)}
    return {"slice": slice_name, "method": method, "videos": videos}


@pytest.mark.parametrize("seed", range(6))
def test_interval_excludes_zero_exactly_when_holm_says_significant(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 13))
    base = rng.normal(30, 3, n)
    docs = [_doc(f"m{j}", base + rng.normal(shift, 1.0, n)) for j, shift in enumerate((0.0, 0.4, 1.2, 2.5))]
    rows = compare_methods(docs)
    assert len(rows) == 6
    for r in rows:
        lo, hi = r["ci"]
        assert lo <= r["mean_diff"] <= hi
        assert (not lo <= 0 <= hi) == (r["p_holm"] < 0.05), r
        assert 1 - r["ci_level"] <= 0.05 + 1e-12


def test_holm_levels_agree_with_holm():
    rng = np.random.default_rng(3)
    for _ in range(200):
        p = rng.uniform(0, 0.08, int(rng.integers(1, 7)))
        for pv, adj, level in zip(p, holm(p), holm_levels(p)):
            assert (pv < level) == (adj < 0.05)


def test_sign_flip_interval_is_the_tests_acceptance_region():
    d = np.array([0.5, 1.2, -0.3, 2.0, 1.1, 0.9, 1.5, 0.2])
    t = SignFlipTest(d)
    lo, hi = t.interval(0.95)
    assert t.p(lo) >= 0.05 and t.p(hi) >= 0.05
    assert t.p(lo - 1e-6 * (hi - lo)) < 0.05 and t.p(hi + 1e-6 * (hi - lo)) < 0.05
    assert SignFlipTest(d[:4]).interval(0.95) == [-np.inf, np.inf]  # 2/16 >= 0.05: no shift can be rejected


def test_finding_parts_do_not_depend_on_the_other_methods():
    """The reported finding: HELD, SIGNIFICANT with 2 methods and not with 5, though telea's numbers were the same."""
    from devil_dataset.eval.report import score_table
    from devil_dataset.eval.report.findings import check_findings

    rng = np.random.default_rng(0)

    def docs_for(methods):
        out = []
        for m, gap in methods:
            for s, shift in (("fg_size_low", gap), ("fg_size_high", 0.0)):
                vals = 30 + shift + rng.normal(0, 0.2, 5) if m != "telea" else (
                    np.array([40.0, 41, 42, 43, 44]) if s == "fg_size_low" else np.array([30.0, 31, 32, 33, 34]))
                d = _doc(m, vals, s)
                d["summary"] = {"psnr": float(np.mean(vals))}
                d["num_videos"] = 5
                out.append(d)
        return out

    two = docs_for([("telea", 0), ("aligned-copy", 5.0)])
    five = two + docs_for([("flow-propagation", 0.3), ("navier-stokes", 0.1), ("mine", 0.2)])
    f2 = check_findings(score_table(two), docs=two)[0]
    f5 = check_findings(score_table(five), docs=five)[0]
    assert f2.pvalues["telea psnr"] == f5.pvalues["telea psnr"] < 0.05
    assert f2.significant_methods["telea"] is True and f5.significant_methods["telea"] is True
    assert f2.significant is True
    assert "intersection-union" in f2.test
