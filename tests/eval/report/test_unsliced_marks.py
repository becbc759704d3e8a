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


def test_a_capped_background_psnr_is_marked_and_never_best():
    """A removal that leaves the background untouched has an infinite background PSNR, capped at the one-grey-level
    PSNR (102.74 dB for a 432x240 frame): the cell carries the capped mark and no cell of the column is bold."""
    from devil_dataset.eval.report.caveats import caveats_of

    untouched = removal_doc("a", [0.8, 0.7], [0.2, 0.3])
    untouched["summary"]["bg_psnr"] = 102.74
    untouched["input_notes"] = {"v0": {"capped_frames": {"bg_psnr": 5}}}
    other = removal_doc("b", [0.6, 0.5], [0.4, 0.3])
    other["summary"]["bg_psnr"] = 35.2
    docs = [untouched, other]
    text = table1_markdown(score_table(docs), caveats=caveats_of(docs))
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| - |")}
    assert "102.74 \u221e1" in rows["a"] and "**102.74" not in rows["a"]
    assert "**35.20**" not in rows["b"]  # the order rests on a capped value: no best
    assert "**0.7500**" in rows["a"]  # RC-S still has its best
    assert "\u221en on bg_psnr" in text and "one-grey-level PSNR" in text
