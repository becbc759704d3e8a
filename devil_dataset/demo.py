"""The end-to-end demo (``devil demo``): build the sample, run the baselines, evaluate, report, check the findings.

Stages (each resumes from what an earlier run left in ``OUT``):

1. **build** the built-in sample dataset into ``OUT/dataset`` (:func:`devil_dataset.builder.build.build`, skipped
   when a complete dataset is there);
2. **plan**: resolve the metrics (:func:`devil_dataset.eval.registry.resolve_metrics`) and read every slice's
   clip ids and hole masks (:func:`devil_dataset.eval.inpaint_and_score.plan_units`);
3. **inpaint+evaluate** (:func:`devil_dataset.eval.inpaint_and_score.inpaint_and_score`), one clip at a time in
   ``jobs`` worker processes, largest clips first: every method inpaints every (clip, hole) unit once into
   ``OUT/predictions/<method>/<slice>/<clip id>/frame_%04d_pred.png`` (the release layout with the manifest of
   :mod:`devil_dataset.inpaint.run`; a unit shared by several slices is hard-linked), scored from memory with the
   pixel metrics (PSNR, SSIM, PCons, warp error with OpenCV DIS flow). Per-video values are cached in
   ``OUT/.devil-demo/values`` (:class:`devil_dataset.eval.results.ValuesCache`), so a resumed run only inpaints
   and scores what is missing;
4. **results**: one results JSON per (method, slice), ``OUT/results/<method>/<slice>.json``
   (:func:`devil_dataset.eval.inpaint_and_score.slice_results`: the pixel metrics from the per-video values, any
   network metric whose weights are present through :func:`devil_dataset.eval.evaluate.evaluate_slice`);
5. **report**: ``OUT/table1.md``/``.tsv``, relative improvements and the PNG figures
   (:func:`devil_dataset.eval.report.write_report`), the findings (:mod:`devil_dataset.eval.findings`:
   ``OUT/findings.md``/``.json``) and the HTML report.

    >>> from devil_dataset.demo import run_demo
    >>> result = run_demo("demo-out")  # doctest: +SKIP
    >>> print(result.table_markdown)  # doctest: +SKIP
"""
from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

from .core.atomic import atomic_write_text
from .core.errors import DevilError
from .core.progress import StageTimer, StageTiming, timings_text
from .core.slices import SLICES
from .eval.findings import Finding

# Issue 6: the three baselines of the demo: per-frame spatial, aligned-neighbour copy, flow propagation.
DEFAULT_METHODS: tuple[str, ...] = ("telea", "aligned-copy", "flow-propagation")
# The paper's ten slices (SPEC section 6); `all` is not part of Table 1.
DEMO_SLICES: tuple[str, ...] = tuple(name for name in SLICES if name != "all")
# --quick: the slices of finding (1) only, and the two cheapest metrics.
QUICK_SLICES: tuple[str, ...] = ("fg_size_low", "fg_size_high")
QUICK_METRICS: tuple[str, ...] = ("psnr", "ssim")
# The demo always uses OpenCV DIS for the warp error's flow (no weights; the same flow on every machine).
DEMO_FLOW = "dis"

DATASET_DIR = "dataset"
PREDICTIONS_DIR = "predictions"
RESULTS_DIR = "results"
CACHE_DIR = ".devil-demo"  # per-video metric values (resume); not part of the outputs


@dataclass
class DemoResult:
    """What :func:`run_demo` produced (paths are inside ``out_dir``)."""

    out_dir: Path
    dataset_dir: Path
    methods: tuple[str, ...]
    slices: tuple[str, ...]
    metrics: list[str]
    skipped_metrics: dict[str, str]
    table: dict[tuple[str, str], dict[str, float]]
    table_markdown: str
    results_files: dict[tuple[str, str], Path]
    report_files: list[Path]
    findings: list[Finding]
    slice_counts: dict[str, int]
    timings: list[StageTiming]

    def timings_text(self) -> str:
        return timings_text(self.timings)


def dataset_complete(directory: str | os.PathLike, slices: Sequence[str]) -> bool:
    """True when ``directory`` holds a finished ``devil build`` output (card, manifest, shards of ``slices``)."""
    from .builder import dataset_writer as writer

    d = Path(directory)
    if not (d / writer.CARD_NAME).is_file() or not (d / writer.MANIFEST_NAME).is_file():
        return False
    return all(any((d / writer.DATA_DIR / s).glob("test-*.parquet")) for s in slices)


def run_demo(
    out_dir: str | os.PathLike,
    *,
    methods: Sequence[str] = DEFAULT_METHODS,
    slices: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    dataset: str | os.PathLike | None = None,
    jobs: int | None = None,
    quick: bool = False,
    progress: bool = True,
    echo: Callable[[str], None] | None = print,
) -> DemoResult:
    """Run the whole benchmark on the built-in sample: build, inpaint, evaluate, report, findings.

    Args:
        out_dir: everything goes here (``dataset/``, ``predictions/``, ``results/``, ``table1.md``, figures).
        methods: baselines of :data:`devil_dataset.inpaint.INPAINTERS`.
        slices: slices to run (default: the ten; ``quick``: the two ``fg_size`` slices).
        metrics: metric names (default: every DEVIL metric that can run here; ``quick``: PSNR and SSIM).
        dataset: use this built dataset instead of building the sample into ``out_dir/dataset``.
        jobs: worker processes (default: ``min(2, cpu count)``).
        echo: where the table, skipped metrics and findings are printed (None: silent).

    A prediction folder of ``out_dir`` made by another run (another method, slice or dataset) is refused with a
    :class:`DevilError`, as ``devil inpaint`` refuses it.

    Example:
        >>> r = run_demo("demo-out", methods=["telea", "aligned-copy"], quick=True)  # doctest: +SKIP
        >>> [f.held for f in r.findings]  # doctest: +SKIP
    """
    from .core.engines import get_engine
    from .eval.findings import check_findings, write_findings
    from .eval.html_report import write_html_report
    from .eval.inpaint_and_score import inpaint_and_score, plan_units, slice_results
    from .eval.protocol import EvalOptions
    from .eval.registry import resolve_metrics, skipped_lines
    from .eval.report import KEY_ORDER, score_table, table1_markdown, write_report
    from .eval.results import ValuesCache, dataset_digest, read_results, write_results
    from .inpaint import INPAINTERS, get_inpainter
    from .inpaint.run import PredictionFolder, dataset_run_info

    def say(text: str) -> None:
        if echo is not None:
            echo(text)
            sys.stdout.flush()  # a log (stdout not a terminal) shows each line as it happens

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    methods = tuple(dict.fromkeys(methods))
    bad = [m for m in methods if m not in INPAINTERS]
    if bad or not methods:
        raise DevilError(f"--methods: unknown {', '.join(bad) or '(none given)'}; valid: {', '.join(INPAINTERS)}")
    slices = tuple(dict.fromkeys(slices or (QUICK_SLICES if quick else DEMO_SLICES)))
    bad = [s for s in slices if s not in SLICES]
    if bad:
        raise DevilError(f"--slices: unknown {', '.join(bad)}; valid: {', '.join(SLICES)}")
    if metrics is None and quick:
        metrics = QUICK_METRICS
    jobs = max(1, int(jobs if jobs is not None else min(2, os.cpu_count() or 1)))
    engine = get_engine("local", jobs=jobs)
    options = EvalOptions(device="cpu", flow=DEMO_FLOW)
    out.mkdir(parents=True, exist_ok=True)
    timings: list[StageTiming] = []

    # 1. dataset
    ds = Path(dataset) if dataset is not None else out / DATASET_DIR
    stage_say = say if echo is not None else None
    with StageTimer("build", timings, say=stage_say, number="1/5") as st:
        if dataset is not None:
            if not ds.is_dir():
                raise DevilError(f"{ds}: no such dataset directory")
            st.note = "given dataset"
        elif dataset_complete(ds, slices):
            st.note = "reused"
        else:
            from .builder.build import build
            from .builder.build_options import BuildOptions

            say(f"building the sample dataset into {ds} ...")
            build([], ds, BuildOptions(sample=True, progress=progress, engine=engine))

    # 2. plan + metrics
    with StageTimer("plan", timings, say=stage_say, number="2/5"):
        pixel, others, skipped = resolve_metrics(metrics, options)
        for line in skipped_lines(skipped):
            say(line)
        units, order = plan_units(ds, slices)
    counts = {s: len(order[s]) for s in slices}

    # 3. inpaint + pixel metrics, one clip at a time (predictions scored from memory)
    with StageTimer("inpaint+evaluate", timings, say=stage_say, number="3/5") as st:
        label = DATASET_DIR if ds == out / DATASET_DIR else str(ds.resolve())  # the demo's sample moves with OUT
        folders = {(m, s): PredictionFolder(out / PREDICTIONS_DIR / m / s, dataset_run_info(m, label, s))
                   for m in methods for s in slices}
        cache = ValuesCache(out / CACHE_DIR / "values", dataset_digest(ds), pixel)
        run = inpaint_and_score(ds, units, order, {m: get_inpainter(m) for m in methods}, folders, pixel, options,
                                cache=cache, engine=engine, progress=progress, say=stage_say)
        st.note = ("worker CPU inpaint " + ", ".join(f"{m} {c:.0f}s" for m, c in run.inpaint_cpu.items())
                   + "; scoring " + ", ".join(f"{m} {c:.0f}s" for m, c in run.score_cpu.items()))

    # 4. results (network metrics through the evaluation engine when their weights are present)
    with StageTimer("results", timings, say=stage_say, number="4/5"):
        docs = slice_results(ds, units, order, run.values, folders, methods, pixel, others, skipped, options,
                             progress=progress)
        results: dict[tuple[str, str], Path] = {}
        for (m, s), doc in docs.items():
            results[(m, s)] = write_results(out / RESULTS_DIR / m / f"{s}.json", doc)
            read_results(results[(m, s)])  # check it reads back

    # 5. report + findings
    with StageTimer("report", timings, say=stage_say, number="5/5"):
        written = [read_results(results[(m, s)]) for s in slices for m in methods]
        table = score_table(written)
        keys = sorted({k for row in table.values() for k, v in row.items() if not math.isnan(v)},
                      key=lambda k: (KEY_ORDER.index(k) if k in KEY_ORDER else len(KEY_ORDER), k))
        report_files = write_report(table, out, keys)
        table_md = table1_markdown(table, keys)
        findings = check_findings(table, counts)
        report_files += write_findings(findings, out)
        html_index = write_html_report(written, out / "report-html", keys, engine=engine,  # issue 15: HTML report
                                       plots_from=[p for p in report_files if p.suffix == ".png"])
        report_files.append(html_index)
    result = DemoResult(out, ds, methods, slices, pixel + others, dict(skipped), table, table_md, results,
                        report_files, findings, counts, timings)
    atomic_write_text(out / "timings.json", json.dumps([asdict(t) for t in timings], indent=1) + "\n")
    say("")
    say(table_md.rstrip())
    say("")
    say("videos per slice: " + ", ".join(f"{s} {c}" for s, c in counts.items()))
    say("findings (paper section 6):")
    for f in findings:
        say("  " + f.summary().replace("\n", "\n  "))
    say("")
    say("timings:\n" + result.timings_text())
    say(f"HTML report: {html_index}")
    say(f"wrote {len(report_files)} report files, {len(results)} results files and the predictions under {out}")
    return result


__all__ = ["DEFAULT_METHODS", "DEMO_SLICES", "DemoResult", "dataset_complete", "run_demo"]
