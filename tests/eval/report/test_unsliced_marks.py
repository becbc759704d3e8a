"""Results without a slice (``--protocol prove`` / ``propainter``, directory mode): Table 1's dagger and the
comparisons find their rows (one label, ``-``, for "no slice" in tables, intervals and comparisons)."""
from __future__ import annotations

from devil_dataset.eval.report.tables import score_table, table1_markdown
from devil_dataset.eval.stats.significance import compare_methods


def removal_doc(method: str, rc_s: list[float], rc_t: list[float]) -> dict:
    videos = {f"v{i}": {"rc_s": s, "rc_t": t} for i, (s, t) in enumerate(zip(rc_s, rc_t))}
    return {"protocol": "prove", "method": method, "slice": None, "num_videos": len(videos),
            "summary": {"rc_s": sum(rc_s) / len(rc_s), "rc_t": sum(rc_t) / len(rc_t)}, "videos": videos}


def test_two_removal_results_carry_the_dagger_where_compare_finds_no_difference():
    docs = [removal_doc("a", [0.80, 0.70, 0.75], [0.20, 0.30, 0.25]),
            removal_doc("b", [0.78, 0.71, 0.70], [0.22, 0.28, 0.27]),
            removal_doc("c", [0.60, 0.72, 0.50], [0.40, 0.26, 0.35])]
    comparisons = compare_methods(docs)
    assert {r["slice"] for r in comparisons} == {"-"}  # not "None": the table's label
    assert all(r["p_holm"] >= 0.05 for r in comparisons)  # three videos: nothing can be significant
    text = table1_markdown(score_table(docs), comparisons=comparisons)
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| - |")}
    assert "**0.7500**" in rows["a"] and "**0.2500**" in rows["a"]  # a: best on both
    for method in ("b", "c"):  # every other method: not significantly different from the best
        assert rows[method].count("\u2020") == 2, rows[method]
