"""The metric table of the metrics floor names no protocol: a metric class that belongs to one protocol (PROVE's RC-S /
RC-T) is declared by that protocol's definition and added to the table by the protocol registry, in the place the
report's column order keeps; no module of ``eval/`` outside ``protocols/`` names a protocol."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.eval.metrics import registry as metric_registry
from devil_dataset.eval.metrics.metric import EvalOptions
from devil_dataset.eval.protocols import registry as protocol_registry
from devil_dataset.eval.protocols.prove import definition as prove

EVAL = Path(metric_registry.__file__).resolve().parents[1]
PROTOCOL_WORDS = ("propainter", "prove")


def test_the_floor_table_holds_no_protocol_class():
    assert "rc_s" not in metric_registry.FLOOR_METRICS and "rc_t" not in metric_registry.FLOOR_METRICS
    assert all(".protocols." not in metric_registry.METRICS[n].target for n in metric_registry.FLOOR_METRICS)


def test_prove_declares_its_metric_classes_and_the_registry_adds_them_in_report_order():
    assert prove.PROTOCOL.metric_classes == prove.METRIC_CLASSES
    assert [e.name for e in prove.METRIC_CLASSES] == ["rc_s", "rc_t"]
    table = protocol_registry.METRICS
    assert table is metric_registry.METRICS
    assert table["rc_s"] is prove.METRIC_CLASSES[0] and table["rc_t"] is prove.METRIC_CLASSES[1]
    names = list(table)
    assert names[names.index("unchanged_region") + 1:names.index("bg_psnr")] == ["rc_s", "rc_t"]
    assert table["rc_s"].load().__name__ == "RCSMetric" and table["rc_t"].load().__name__ == "RCTMetric"
    assert metric_registry.higher_is_better("rc_s") and not metric_registry.higher_is_better("rc_t")
    keys = protocol_registry.known_result_keys()
    assert keys[keys.index("unchanged_region") + 1:keys.index("bg_psnr")] == ("rc_s", "rc_t")


def test_metric_lookups_above_the_protocols_floor_see_the_protocol_classes():
    pixel, others, skipped = protocol_registry.resolve_metrics(["psnr", "ff_alpha"], EvalOptions())
    assert (pixel, others, skipped) == (["psnr"], ["ff_alpha"], {})
    assert protocol_registry.scoring_identity(["psnr"], EvalOptions()) == \
        metric_registry.scoring_identity(["psnr"], EvalOptions())


def test_registering_a_metric_keeps_one_entry_per_name():
    entry = prove.METRIC_CLASSES[0]
    assert metric_registry.register_metric(entry) is entry  # the same entry again: nothing changes
    other = metric_registry.MetricEntry("rc_s", "elsewhere:Other", ("rc_s",), (True,), (".4f",), True)
    with pytest.raises(DevilError, match="another metric class has this name"):
        metric_registry.register_metric(other)
    metric_registry.unregister_metric("psnr")  # the floor's own classes stay
    assert "psnr" in metric_registry.METRICS


def _code_strings(path: Path) -> list[str]:
    """The string constants of ``path`` that are not docstrings, and the modules it imports."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found = [n.value for n in ast.walk(tree)
             if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]
    found += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    return found


def test_no_module_of_eval_outside_protocols_names_a_protocol():
    offending = []
    for path in sorted(EVAL.rglob("*.py")):
        rel = path.relative_to(EVAL)
        if rel.parts[0] == "protocols" or rel == Path("__init__.py"):  # __init__: the public evaluate_propainter
            continue
        for text in _code_strings(path):
            if text in PROTOCOL_WORDS or any(f"protocols.{w}" in text for w in PROTOCOL_WORDS):
                offending.append(f"{rel}: {text!r}")
    assert offending == []


def test_a_fresh_process_finds_the_protocol_classes_without_importing_the_protocols():
    """A library user's first lookup (``evaluate_directory(..., ["rc_s"])``, ``higher_is_better("rc_t")``) in a process
    that never imported the protocols finds the protocols' classes: the table reads its plug-ins before it calls a
    name unknown, so no lookup depends on import order; an unknown name is still refused."""
    import json
    import subprocess
    import sys

    code = """if True:
        import json, sys
        from devil_dataset.eval.metrics.registry import higher_is_better, metric_entry, resolve_metrics
        from devil_dataset.eval.metrics.metric import EvalOptions
        before = "devil_dataset.eval.protocols.registry" in sys.modules
        try:
            metric_entry("no_such_metric")
        except Exception as error:
            refused = type(error).__name__
        print(json.dumps({"before": before, "rc_t": higher_is_better("rc_t"), "entry": metric_entry("rc_s").name,
                          "resolved": resolve_metrics(["bg_psnr", "psnr"], EvalOptions())[:2],
                          "refused": refused}))
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(EVAL.parents[1]))
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"before": False, "rc_t": False, "entry": "rc_s", "resolved": [["psnr"], ["bg_psnr"]],
                    "refused": "UnknownNameError"}
