"""The end-to-end demo (``devil demo``): build the sample, run the baselines, evaluate, report, check the findings.

The demo is :func:`devil_dataset.pipeline.benchmark.benchmark` called with the built-in sample and the baselines (stages
2-5 below are the benchmark's); it only builds the sample first. Stages (each resumes from what an earlier run
left in ``OUT``):

1. **build** the built-in sample dataset into ``OUT/dataset`` (:func:`devil_dataset.builder.build.build`, skipped
   when a complete dataset is there);
2. **plan**: resolve the metrics (:func:`devil_dataset.eval.metrics.registry.resolve_metrics`) and read every slice's
   clip ids and hole masks (:func:`devil_dataset.pipeline.plan.plan_units`);
3. **inpaint+evaluate** (:func:`devil_dataset.pipeline.inpaint_and_score.inpaint_and_score`), one clip at a time in
   ``jobs`` worker processes, largest clips first: every method inpaints every (clip, hole) unit once into
   ``OUT/predictions/<method>/<slice>/<clip id>/frame_%04d_pred.png`` (the release layout with the manifest of
   :mod:`devil_dataset.inpaint.run`; a unit shared by several slices is hard-linked), scored from memory with the
   pixel metrics (PSNR, SSIM, PCons, warp error with OpenCV DIS flow). Per-video values are cached in
   ``OUT/.devil-demo/values`` (:class:`devil_dataset.eval.scoring.results.ValuesCache`), so a resumed run only inpaints
   and scores what is missing;
4. **results**: one results JSON per (method, slice), ``OUT/results/<method>/<slice>.json``
   (:func:`devil_dataset.pipeline.inpaint_and_score.slice_results`: the pixel metrics from the per-video values, any
   network metric whose weights are present through :func:`devil_dataset.eval.scoring.evaluate.evaluate_slice`);
5. **report**: ``OUT/table1.md``/``.tsv``, relative improvements and the PNG figures
   (:func:`devil_dataset.eval.report.write_report`), the findings (:mod:`devil_dataset.eval.report.findings`:
   ``OUT/findings.md``/``.json``) and the HTML report.

    >>> from devil_dataset.demo import run_demo
    >>> result = run_demo("demo-out")  # doctest: +SKIP
    >>> print(result.table_markdown)  # doctest: +SKIP
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable, Sequence

from .builder import dataset_writer as writer
from .builder.build import build
from .builder.build_options import BuildOptions
from .core.engines import get_engine
from .core.errors import DevilError, unknown_name
from .core.progress import StageTimer, StageTiming
from .core.slices import SLICES
from .inpaint import INPAINTERS
from .pipeline.benchmark import BENCHMARK_FLOW, PREDICTIONS_DIR, RESULTS_DIR, TABLE1_SLICES, BenchmarkResult, benchmark

# The three baselines of the demo: per-frame spatial, aligned-neighbour copy, flow propagation.
DEFAULT_METHODS: tuple[str, ...] = ("telea", "aligned-copy", "flow-propagation")
# The paper's ten slices; `all` is not part of Table 1.
DEMO_SLICES: tuple[str, ...] = TABLE1_SLICES
# --quick: the slices of finding (1) only, and the two cheapest metrics.
QUICK_SLICES: tuple[str, ...] = ("fg_size_low", "fg_size_high")
QUICK_METRICS: tuple[str, ...] = ("psnr", "ssim")
# The demo uses OpenCV DIS for the warp error's flow (no weights; CPU-pinned: the same flow on every machine).
DEMO_FLOW = BENCHMARK_FLOW

DATASET_DIR = "dataset"
CACHE_DIR = ".devil-demo"  # per-video metric values (resume); not part of the outputs


# What :func:`run_demo` produced: the benchmark's result (paths are inside ``out_dir``).
DemoResult = BenchmarkResult


def dataset_complete(directory: str | os.PathLike, slices: Sequence[str]) -> bool:
    """True when ``directory`` holds a finished ``devil build`` output (card, manifest, shards of ``slices``)."""

    d = Path(directory)
    if not (d / writer.CARD_NAME).is_file() or not (d / writer.MANIFEST_NAME).is_file():
        return False
    return all(any((d / writer.DATA_DIR / s).glob("test-*.parquet")) for s in slices)


def run_demo(  # noqa: PLR0913  (public API: keyword-only options)
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
    ci: str | None = None,
    set_level_ci: bool = False,
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
        ci: Table 1 cells with their uncertainty over videos: ``"interval"`` (95% BCa bootstrap) or ``"se"``.
        set_level_ci: also give FID and VFID a jackknife interval (:func:`~devil_dataset.pipeline.benchmark.benchmark`).

    A prediction folder of ``out_dir`` made by another run (another method, slice or dataset) is refused with a
    :class:`DevilError`, as ``devil inpaint`` refuses it.

    Example:
        >>> r = run_demo("demo-out", methods=["telea", "aligned-copy"], quick=True)  # doctest: +SKIP
        >>> [f.held for f in r.findings]  # doctest: +SKIP
    """

    def say(text: str) -> None:
        if echo is not None:
            echo(text)
            sys.stdout.flush()  # a log (stdout not a terminal) shows each line as it happens

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    methods = tuple(dict.fromkeys(methods))
    bad = [m for m in methods if m not in INPAINTERS]
    if bad:
        raise unknown_name("method", bad[0], INPAINTERS, prefix="--methods: ")
    if not methods:
        raise DevilError(f"--methods: none given; valid: {', '.join(INPAINTERS)}")
    slices = tuple(dict.fromkeys(slices or (QUICK_SLICES if quick else DEMO_SLICES)))
    bad = [s for s in slices if s not in SLICES]
    if bad:
        raise unknown_name("slice", bad[0], SLICES, prefix="--slices: ")
    if metrics is None and quick:
        metrics = QUICK_METRICS
    jobs = max(1, int(jobs if jobs is not None else min(2, os.cpu_count() or 1)))
    engine = get_engine("local", jobs=jobs)
    out.mkdir(parents=True, exist_ok=True)
    timings: list[StageTiming] = []

    # 1. dataset; then the benchmark pipeline (plan, inpaint+evaluate, results, report) on it
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

            say(f"building the sample dataset into {ds} ...")
            build([], ds, BuildOptions(sample=True, progress=progress, engine=engine))
    return benchmark(ds, {m: m for m in methods}, out, slices=slices, metrics=metrics, engine=engine,
                     device="cpu", progress=progress, echo=echo, timings=timings, cache_dir=CACHE_DIR, ci=ci,
                     set_level_ci=set_level_ci)


__all__ = ["DEFAULT_METHODS", "DEMO_SLICES", "DemoResult", "PREDICTIONS_DIR", "RESULTS_DIR", "dataset_complete",
           "run_demo"]
