"""Adding a protocol is one folder (or one module): a toy protocol registered from a temporary module, touching no
file outside it, runs through ``devil evaluate``, ``devil report`` and ``devil report --paper-table``."""
from __future__ import annotations

import json
import sys

import pytest

from devil_dataset.cli import main
from devil_dataset.eval.protocols.registry import get_protocol, higher_is_better, protocol_names, unregister_protocol

TOY = '''
"""A toy protocol: per video, the mean absolute difference between the numbers of GT/<video>.txt and
PRED/<video>.txt (lower is better)."""
from functools import partial
from pathlib import Path

from devil_dataset.eval.protocols.declaration import EvaluationProtocol, InputLayout, PaperTable, ResultKey
from devil_dataset.eval.protocols.registry import register_protocol
from devil_dataset.eval.protocols.runner import folder_document, mean_over_videos, prepare_run, score_videos


def score_pair(gt_file, pred_dir):
    """One video's values (module level: engine workers run it)."""
    a = [float(x) for x in gt_file.read_text().split()]
    b = [float(x) for x in (pred_dir / gt_file.name).read_text().split()]
    return {"toy_err": sum(abs(x - y) for x, y in zip(a, b)) / len(a)}


def evaluate(request):
    setup = prepare_run(PROTOCOL, request.metric_names, request.options)
    gt, pred = Path(request.folders["gt_dir"]), Path(request.folders["pred_dir"])
    files = sorted(gt.glob("*.txt"))  # the layout listing
    values = score_videos(files, partial(score_pair, pred_dir=pred), engine=request.engine, progress=False,
                          name_of=lambda f: f.stem)
    summary, uncertainty, _ = mean_over_videos(values, setup.metrics, request.options.seed)
    return folder_document(PROTOCOL, request.options, setup, method=request.method, predictions=pred,
                           inputs={"gt_dir": str(gt), "predictions": str(pred)}, record={"protocol": "toy"},
                           fields={"num_videos": len(files), "summary": summary,
                                   "videos": {f.stem: v for f, v in zip(files, values)}, "uncertainty": uncertainty},
                           order=("num_videos", "metrics", "summary", "videos", "uncertainty", "skipped",
                                  "provenance"))


PROTOCOL = register_protocol(EvaluationProtocol(
    name="toy", description="a toy protocol",
    keys=(ResultKey("toy_err", False, ".3f", "Toy error", "mean absolute difference"),),
    layouts=(InputLayout("pairs", ("gt_dir", "pred_dir")),),
    metrics=("toy_err",), default_metrics=("toy_err",),
    paper_table=PaperTable(("Toyset",), ("toy_err",), {"toy_err": ("Toy error", 1.0, 3)},
                           key_notes={"toy_err": "Toy error: mean absolute difference"}),
    evaluate=f"{__name__}:evaluate"))
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "toy_protocol_plugin.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(folder))
    __import__("toy_protocol_plugin")
    yield get_protocol("toy")
    unregister_protocol("toy")
    sys.modules.pop("toy_protocol_plugin", None)


def _write(folder, values):
    folder.mkdir(parents=True)
    for i, vs in enumerate(values):
        (folder / f"v{i}.txt").write_text(" ".join(map(str, vs)))


def test_a_toy_protocol_runs_through_evaluate_report_and_the_paper_table(toy, tmp_path, capsys):
    assert "toy" in protocol_names() and higher_is_better("toy_err") is False
    gt = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    _write(tmp_path / "GT", gt)
    _write(tmp_path / "good", [[v + 0.5 for v in vs] for vs in gt])
    _write(tmp_path / "bad", [[v + 2 for v in vs] for vs in gt])
    for method in ("good", "bad"):
        assert main(["evaluate", "--protocol", "toy", "--gt-dir", str(tmp_path / "GT"), "--pred-dir",
                     str(tmp_path / method), "--out", str(tmp_path / f"{method}.json")]) == 0
    doc = json.loads((tmp_path / "good.json").read_text())
    assert doc["protocol"] == "toy" and doc["summary"] == {"toy_err": 0.5} and doc["method"] == "good"
    assert list(doc) == ["format", "format_version", "protocol", "parity", "method", "slice", "num_videos", "metrics",
                         "summary", "videos", "uncertainty", "skipped", "provenance"]  # the runner's document
    capsys.readouterr()
    assert main(["report", str(tmp_path / "good.json"), str(tmp_path / "bad.json")]) == 0
    out = capsys.readouterr().out
    assert "| slice | method | Toy error \u25bc |" in out
    assert "| - | good | **0.500** |" in out and "| - | bad | 2.000\u2020 |" in out  # 3 videos: not significant
    assert main(["report", "--paper-table", f"Toyset={tmp_path / 'good.json'}",
                 f"Toyset={tmp_path / 'bad.json'}"]) == 0
    table = capsys.readouterr().out
    assert table.splitlines()[0] == "| Method | Toyset Toy error \u2193 |"
    assert "| good | 0.500 [0.500, 0.500] |" in table or "| good | 0.500 |" in table
    assert "Toy error: mean absolute difference" in table


def test_an_option_of_another_protocol_is_refused_naming_it(toy, tmp_path, capsys):
    assert main(["evaluate", "--protocol", "toy", "--gt-dir", str(tmp_path), "--pred-dir", str(tmp_path),
                 "--mask-dir", str(tmp_path)]) == 2
    assert "--mask-dir: only with --protocol propainter or --protocol prove" in capsys.readouterr().err
