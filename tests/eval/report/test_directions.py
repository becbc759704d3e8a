"""Every result key any protocol writes has one better direction, in the registry, and every writer reads
it there (``devil report`` of ``--protocol propainter`` results headed E_warp "▲" and bolded the worse value)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devil_dataset.cli import main
from devil_dataset.core.errors import UnknownNameError
from devil_dataset.eval.metrics.registry import FLOOR_METRICS, METRICS
from devil_dataset.eval.protocols.propainter.run import PROPAINTER_METRICS
from devil_dataset.eval.protocols.prove.run import PROVE_METRICS
from devil_dataset.eval.protocols.registry import (
    higher_is_better,
    key_format,
    known_result_keys,
    protocol_keys,
    protocol_names,
)
from devil_dataset.eval.report import relative_improvement, score_table, table1_markdown, table1_tsv
from devil_dataset.eval.report.comparisons import compare_text, significance
from devil_dataset.eval.report.findings import _better
from devil_dataset.eval.report.html import pick_clips
from devil_dataset.eval.report.paper_table import paper_table_markdown
from devil_dataset.eval.report.plots import plot_figures
from devil_dataset.eval.scoring.results import write_results

PACKAGE = Path(__file__).resolve().parents[3] / "devil_dataset"
ARROWS = {"\u25b2", "\u25bc", "↑", "↓"}


def test_every_key_of_every_protocol_has_a_direction_and_a_format():
    PROTOCOL_KEYS = protocol_keys()
    assert set(PROTOCOL_KEYS) == set(protocol_names()), "a protocol without its result keys in the registry"
    for protocol, keys in PROTOCOL_KEYS.items():
        for key in keys:
            assert isinstance(higher_is_better(key), bool), (protocol, key)
            assert key_format(key, "") and key in known_result_keys(), (protocol, key)
    assert set(PROPAINTER_METRICS) == set(PROTOCOL_KEYS["propainter"])  # what evaluate_propainter can write
    assert set(PROVE_METRICS) == set(PROTOCOL_KEYS["prove"])  # what evaluate_prove can write
    # DEVIL's keys: the metric floor's classes; the table also holds the classes a protocol declares (PROVE's RC-S/T)
    assert set(PROTOCOL_KEYS["devil"]) == {k for n in FLOOR_METRICS for k in METRICS[n].keys}
    assert set(PROTOCOL_KEYS["devil"]) | {"rc_s", "rc_t"} == {k for e in METRICS.values() for k in e.keys}
    assert higher_is_better("ewarp") is False and higher_is_better("hole_lpips") is False
    assert higher_is_better("hole_psnr") and higher_is_better("hole_ssim")


def test_a_key_without_a_direction_is_an_error_not_a_guess():
    with pytest.raises(UnknownNameError, match="unknown result key 'ewrap'; did you mean 'ewarp'"):
        higher_is_better("ewrap")


def _key_literals(node: ast.AST) -> set[str]:
    return {k.value for k in getattr(node, "keys", []) if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _is_direction(value: ast.AST) -> bool:
    """A bool or an arrow, or a tuple holding one: what a second direction table would hold."""
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    return any(isinstance(v, ast.Constant) and (isinstance(v.value, bool) or v.value in ARROWS) for v in items)


def test_no_module_keeps_a_direction_table_of_its_own():
    """The registry is the one table of directions: no other module maps a result key to a bool or an arrow."""
    keys = set(known_result_keys())
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "registry.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict) and _key_literals(node) & keys:
                for k, v in zip(node.keys, node.values):
                    if isinstance(k, ast.Constant) and k.value in keys and _is_direction(v):
                        found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {k.value}")
    assert not found, "directions outside the registry:\n" + "\n".join(found)


def _docs() -> list[dict]:
    lo = {"A": [0.0010, 0.0011, 0.0009, 0.0010, 0.0012, 0.0010], "B": [0.0020, 0.0021, 0.0019, 0.0022, 0.0020, 0.0021]}
    docs = []
    for method, values in lo.items():
        for slice_name, factor in (("fg_size_low", 1.0), ("fg_size_high", 2.0)):
            videos = {f"c{i}": {"ewarp": v * factor} for i, v in enumerate(values)}
            docs.append({"method": method, "slice": slice_name, "num_videos": len(values), "videos": videos,
                         "summary": {"ewarp": sum(values) * factor / len(values)}})
    return docs


def test_every_writer_ranks_ewarp_lower_is_better():
    docs = _docs()
    table = score_table(docs)
    md = table1_markdown(table)
    assert "| E_warp \u25bc |" in md and "| fg_size_low | A | **0.001033** |" in md
    assert "| fg_size_low | B | 0.002050 |" in md  # four significant digits, never 0.0021 or 0.0020
    assert table1_tsv(table).splitlines()[0].endswith("E_warp \u25bc")
    assert relative_improvement(table)[("fg_size", "A")]["ewarp"] < 0  # doubled on the high slice: worse
    figures = dict(plot_figures(table))
    assert "lower is better" in figures["method_performance_ewarp"].axes[0].get_title()
    assert "\u25bc" in figures["sensitivity_fg_size"].axes[0].get_title()
    assert _better("ewarp", 0.001, 0.002)
    assert pick_clips(docs[0]["videos"], "ewarp", 1) == (["c4"], ["c2"])  # worst: the largest error
    rows, _ = significance(docs)
    assert "A better on ewarp" in compare_text(rows, "A", "B")
    pp = {m: {"DAVIS": {"protocol": "propainter", "summary": {"ewarp": v}}} for m, v in (("A", 0.001), ("B", 0.002))}
    assert "DAVIS E_warp (×10⁻³) ↓" in paper_table_markdown(pp, datasets=("DAVIS",), keys=("ewarp",))


def test_devil_report_of_propainter_results_bolds_the_lower_ewarp(tmp_path, capsys):
    """The case: `devil report` of two --protocol propainter results."""
    paths = []
    for method, ewarp, psnr in (("a", 0.0005, 30.0), ("b", 0.0009, 31.0)):
        doc = {"format": "devil-results", "format_version": 1, "protocol": "propainter", "method": method,
               "slice": None, "num_videos": 2, "summary": {"psnr": psnr, "ewarp": ewarp}, "videos": {}}
        paths.append(write_results(tmp_path / f"{method}.json", doc))
    assert main(["report", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert "| slice | method | PSNR \u25b2 | E_warp \u25bc |" in out
    assert "| - | a | 30.00 | **0.0005000** |" in out and "| - | b | **31.00** | 0.0009000 |" in out
