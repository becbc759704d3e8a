"""Benchmark inpainting methods on a built DEVIL dataset in one call: inpaint, evaluate, report (``devil benchmark``).

:func:`benchmark` runs any methods (the baselines, a command template run once per clip, a Python callable, or an
inpainter object: :class:`~devil_dataset.inpaint.method_spec.MethodSpec`) over the slices of a built dataset (a
folder or a Hub repo id), in four steps over one :class:`~devil_dataset.pipeline.plan.BenchmarkPlan`:

1. **plan** (:func:`make_plan`): resolve the methods and the metrics (:func:`devil_dataset.eval.metrics.registry.
   resolve_metrics`), read every slice's clip ids and hole masks (:func:`devil_dataset.pipeline.plan.plan_units`;
   a *unit* is one (clip, hole) pair: the sample's ten slices hold 50 rows but 39 distinct units), open the
   prediction folders;
2. **inpaint+evaluate** (:func:`devil_dataset.pipeline.inpaint_and_score.inpaint_and_score`): every method inpaints
   every unit once, one clip at a time in the engine's workers, largest clips first, into
   ``OUT/predictions/<method>/<slice>/<clip id>/frame_%04d_pred.png`` (the release layout with the manifest of
   :mod:`devil_dataset.inpaint.run`; the other slices of a unit get hard links), scored from memory with the pixel
   metrics. Per-video values are cached, so a re-run resumes at the clip level. The HTML report's clip streams
   of each unit are encoded meanwhile from the frames in memory (``OUT/<cache>/clips``,
   :mod:`devil_dataset.eval.report.clip_material`), so that step 4 copies them instead of decoding again;
3. **results** (:func:`write_slice_results`): ``OUT/results/<method>/<slice>.json`` (network metrics through
   :func:`devil_dataset.eval.scoring.evaluate.evaluate_slice` when their weights are present);
4. **report** (:func:`write_benchmark_report`): ``OUT/table1.md``/``.tsv``, relative improvements, the figures, the
   findings (``OUT/findings.md``/``.json``) and the HTML report (``OUT/report-html/index.html``).

Progress lines (one per slice as its videos finish) go to ``echo`` and to ``OUT/benchmark.log``. ``devil demo`` is
this function called with the built-in sample and the baselines (:func:`devil_dataset.demo.run_demo`).

    >>> from devil_dataset.pipeline import MethodSpec, benchmark
    >>> methods = {"mine": MethodSpec(callable="my_pkg.model:inpaint"), "telea": MethodSpec(baseline="telea")}
    >>> result = benchmark("devil-build/", methods, "bench-out")  # doctest: +SKIP
    >>> print(result.table_markdown)  # doctest: +SKIP
"""
from __future__ import annotations

import json
import math
import os
import pickle
import re
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, Sequence, Union

from ..core.atomic import atomic_write_text
from ..core.cpu_pins import cpu_pinned
from ..core.engines import Engine, get_engine
from ..core.errors import DevilError
from ..core.progress import StageTimer, StageTiming, timings_text
from ..core.slices import SLICES
from ..eval.metrics.metric import EvalOptions
from ..eval.metrics.registry import skipped_lines
from ..eval.protocols.registry import resolve_metrics, scoring_identity
from ..eval.report.caveats import caveats_of
from ..eval.report.clip_material import ClipMaterial, ClipSource
from ..eval.report.comparisons import power_note, significance
from ..eval.report.files import write_report
from ..eval.report.findings import Finding, check_findings, write_findings
from ..eval.report.html import ClipEncoding, write_html_report
from ..eval.report.tables import KEY_ORDER, cpu_tolerances, score_table, table1_markdown
from ..eval.scoring.results import ValuesCache, dataset_digest, read_results, results_in, write_results
from ..inpaint.contract import Inpainter
from ..inpaint.external import callable_identity
from ..inpaint.method_spec import MethodSpec
from ..inpaint.run import PredictionFolder, dataset_run_info
from .clip_task import ground_truth_identity
from .inpaint_and_score import InpaintScoreRun, inpaint_and_score, slice_results
from .plan import BenchmarkPlan, plan_units
from .report_stamp import REPORT_STAMP, read_report_stamp, report_key, write_report_stamp

# The paper's ten slices; `all` is not part of Table 1.
TABLE1_SLICES: tuple[str, ...] = tuple(name for name in SLICES if name != "all")
# The warp error's flow: OpenCV DIS (no weights; the same flow on every machine), as the demo always used.
BENCHMARK_FLOW = "dis"
# Where a method's outputs go inside OUT.
PREDICTIONS_DIR = "predictions"
RESULTS_DIR = "results"
CACHE_DIR = ".devil-benchmark"  # per-video metric values (resume); not part of the outputs
CLIP_MATERIAL_DIR = "clips"  # inside the cache folder: the HTML report's streams, made while inpainting
LOG_NAME = "benchmark.log"
# A method name becomes a folder name (predictions/<method>/, results/<method>/) and a Table 1 row label.
METHOD_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
# What :func:`benchmark` accepts per method: a spec, a baseline name, or an inpainter (a callable; with worker
# processes it must be picklable, e.g. a module-level function).
Method = Union[MethodSpec, str, Inpainter]


@dataclass
class BenchmarkResult:
    """What :func:`benchmark` produced (paths are inside ``out_dir``)."""

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
    units: int = 0  # distinct (clip, hole) units: each method inpainted each once
    wall_s: float = 0.0
    log_file: Path | None = field(default=None)
    failures: dict[str, list[str]] = field(default_factory=dict)  # method -> its errors (``clip <id>: ...``)

    def timings_text(self) -> str:
        return timings_text(self.timings)


def check_method_name(name: str) -> str:
    """``name`` if usable as a method name (a folder name and a Table 1 label), else a :class:`DevilError`.

    >>> check_method_name("my-method_v2")
    'my-method_v2'
    >>> check_method_name("a/b")
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: method name 'a/b': use letters, digits and . _ + - (it names a folder)
    """
    if not isinstance(name, str) or not METHOD_NAME_RE.match(name):
        raise DevilError(f"method name {name!r}: use letters, digits and . _ + - (it names a folder)")
    return name


class MethodsFailedError(DevilError):
    """Some methods failed on some clips; the others finished and were reported (``result``: what was written)."""

    def __init__(self, message: str, result: "BenchmarkResult"):
        super().__init__(message)
        self.result = result


def resolve_methods(methods: Mapping[str, Method]) -> dict[str, tuple[Inpainter, dict, dict | None]]:
    """Method name -> (inpainter, the manifest's extra run record, what the method is: its command or callable and
    the hashes of its code, None for a baseline); names and baselines checked.

    >>> sorted(resolve_methods({"telea": "telea"}))
    ['telea']
    """
    if not methods:
        raise DevilError("no method to benchmark")
    out: dict[str, tuple[Inpainter, dict, dict | None]] = {}
    for name, method in methods.items():
        check_method_name(name)
        if isinstance(method, str):
            method = MethodSpec(baseline=method)
        if isinstance(method, MethodSpec):
            try:
                out[name] = (method.inpainter(), method.run_info(), method.provenance())
            except DevilError as exc:
                raise type(exc)(f"method {name}: {exc}") from None
        elif callable(method):
            out[name] = (method, {"size_divisor": None}, callable_identity(method))
        else:
            raise DevilError(f"method {name}: expected a MethodSpec, a baseline name or an inpainter, "
                             f"got {type(method).__name__}")
    return out


def _check_picklable(inpainters: Mapping[str, Inpainter]) -> None:
    for name, inpainter in inpainters.items():
        try:
            pickle.dumps(inpainter)
        except Exception as exc:  # any pickling failure: the workers could not receive it
            raise DevilError(f"method {name}: its inpainter cannot be sent to worker processes ({exc}); use a "
                             "module-level function (or MethodSpec(callable='module:function')), or jobs=1") from None


def check_dataset_source(dataset: str | os.PathLike) -> None:
    """Refuse at once a ``dataset`` that is neither a folder nor a Hub repo id ``ORG/NAME`` (the rule of
    :func:`devil_dataset.data.load.local_dataset_dir`), before anything is written.

    >>> check_dataset_source("/nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    devil_dataset.core.errors.DevilError: /nope: no such dataset folder (a folder made by `devil build`, or a Hub ...
    """
    path, text = Path(dataset), str(dataset)
    if path.is_dir():
        return
    if path.exists():
        raise DevilError(f"{text}: not a dataset directory (a folder made by `devil build`, or a Hub repo id)")
    if isinstance(dataset, Path) or text.startswith(("/", ".", "~")) or text.count("/") != 1:
        raise DevilError(f"{text}: no such dataset folder (a folder made by `devil build`, or a Hub repo id ORG/NAME)")


def dataset_label(dataset: str | os.PathLike, out: Path) -> str:
    """How manifests name the dataset: relative to ``out`` when inside it (it moves with OUT), else its absolute
    path, or the Hub repo id as given.

    >>> dataset_label("out/dataset", Path("out"))
    'dataset'
    """
    ds = Path(dataset)
    try:
        return str(ds.relative_to(out))
    except ValueError:
        return str(ds.resolve()) if ds.exists() else str(dataset)


class RunLog:
    """Where a run's lines go: appended to ``OUT/benchmark.log`` and echoed (each line flushed as it happens)."""

    def __init__(self, path: Path, echo: Callable[[str], None] | None) -> None:
        self.path, self.echo = path, echo

    def __call__(self, text: str) -> None:
        with open(self.path, "a", encoding="utf-8") as log:
            log.write(text + "\n")
        if self.echo is not None:
            self.echo(text)
            sys.stdout.flush()  # a log (stdout not a terminal) shows each line as it happens


def make_plan(dataset: str | os.PathLike, methods: Mapping[str, Method], out: Path, *,  # noqa: PLR0913
              slices: Sequence[str] | None, metrics: Sequence[str] | None, engine: str | Engine, jobs: int | None,
              options: EvalOptions, say: Callable[[str], None], rerun: Sequence[str] = ()) -> BenchmarkPlan:
    """Step 1: the methods resolved (names, baselines, picklable for workers, what each is), the metrics that can
    run, the slices' units read and the prediction folders opened (a folder of another run is refused).
    ``rerun``: methods whose stored work is made again."""
    resolved = resolve_methods(methods)
    unknown = [m for m in rerun if m not in resolved]
    if unknown:
        raise DevilError(f"--rerun {', '.join(unknown)}: not among the methods ({', '.join(resolved)})")
    chosen = tuple(dict.fromkeys(slices or TABLE1_SLICES))
    bad = [s for s in chosen if s not in SLICES]
    if bad:
        raise DevilError(f"--slices: unknown {', '.join(bad)}; valid: {', '.join(SLICES)}")
    run_engine = get_engine(engine, jobs=max(1, int(jobs if jobs is not None else min(2, os.cpu_count() or 1))))
    inpainters = {m: resolved[m][0] for m in resolved}
    if run_engine.parallel:
        _check_picklable(inpainters)
    pixel, others, skipped = resolve_metrics(metrics, options)
    for line in skipped_lines(skipped):
        say(line)
    units, order = plan_units(dataset, chosen)
    label = dataset_label(dataset, out)
    provenance = {m: resolved[m][2] for m in resolved}
    identities = {m: None if record is None else str(record["identity"]) for m, record in provenance.items()}
    folders = {(m, s): PredictionFolder(out / PREDICTIONS_DIR / m / s, {**dataset_run_info(m, label, s),
                                                                         **resolved[m][1]}, identities[m])
               for m in resolved for s in chosen}
    return BenchmarkPlan(str(dataset), out, inpainters, chosen, units, order, pixel, others, dict(skipped), options,
                         run_engine, folders, provenance, frozenset(rerun))


def write_slice_results(plan: BenchmarkPlan, values: dict, *, progress: bool) -> dict[tuple[str, str], Path]:
    """Step 3: one results file per (method, slice), each read back to check it."""
    results: dict[tuple[str, str], Path] = {}
    for (m, s), doc in slice_results(plan, values, progress=progress).items():
        results[(m, s)] = write_results(plan.out / RESULTS_DIR / m / f"{s}.json", doc)
        read_results(results[(m, s)])
    return results


def read_baseline_results(folders: Sequence[str | os.PathLike], methods: Mapping[str, object]
                          ) -> list[tuple[Path, dict]]:
    """The results files under each folder of ``folders`` (:func:`~devil_dataset.eval.scoring.results.results_in`);
    a method of the run among them is an error (it would be given twice).

    >>> read_baseline_results([], {"telea": "telea"})
    []
    """
    found = [x for folder in folders for x in results_in(Path(folder))]
    clash = sorted({str(d.get("method")) for _, d in found} & set(methods))
    if clash:
        raise DevilError(f"--baseline-results: {', '.join(clash)} also run here; drop it from --method or use "
                         "another name")
    return found


@dataclass
class BenchmarkReport:
    """What step 4 wrote and computed (``kept``: the report of an earlier run, its inputs unchanged)."""

    table: dict[tuple[str, str], dict[str, float]]
    table_markdown: str
    findings: list[Finding]
    files: list[Path]
    html_index: Path
    kept: bool = False


HTML_DIR = "report-html"
KEPT_NOTE = "inputs unchanged since the last report: kept"  # the report stage's note when it was kept


def write_benchmark_report(plan: BenchmarkPlan, results: Mapping[tuple[str, str], Path], *,
                           ci: str | None, baselines: Sequence[tuple[Path, dict]] = (),
                           allow_mixed: bool = False, stamp: Path | None = None, dataset_key: str = "",
                           clip_material: Path | None = None,
                           say: Callable[[str], None] | None = None) -> BenchmarkReport:
    """Step 4: Table 1 (with the significance marks and ``ci``), relative improvements, figures, findings and the
    HTML report, from the results files as written and the ``baselines``' results of the same slices
    (``--baseline-results``, not re-run); results scored differently are refused unless ``allow_mixed`` (then
    marked), cells resting on clipped videos are marked (:mod:`devil_dataset.eval.report.caveats`).

    ``stamp``: a report stamp (:mod:`devil_dataset.pipeline.report_stamp`): when it records a report of the same
    inputs (results files' bytes, ``ci``, ``allow_mixed``, the slices and methods, ``dataset_key``, the package
    version) whose files are all still as written, that report is kept, not written again (and ``say`` told so);
    after writing one, the stamp is written. ``clip_material``: the folder where :func:`~devil_dataset.pipeline.
    inpaint_and_score.inpaint_and_score` made the HTML report's streams (``material``, with the same
    ``dataset_key``): the clips found there are copied, the others decoded and encoded (the same files either
    way)."""
    own = [(results[(m, s)], read_results(results[(m, s)])) for s in plan.slices for m in plan.methods]
    named = own + [(p, d) for p, d in baselines if d.get("slice") in plan.slices]
    written = [d for _, d in named]
    key = report_key([p for p, _ in named], {"ci": ci, "allow_mixed": allow_mixed, "slices": list(plan.slices),
                                             "methods": list(plan.methods), "dataset": dataset_key,
                                             "slice_counts": plan.slice_counts()})
    kept = read_report_stamp(stamp, key, plan.out) if stamp is not None else None
    if kept is not None:
        if say is not None:
            say(f"report: kept as written (its inputs, the results files, options and package version, are those of "
                f"the report already in {plan.out})")
        return BenchmarkReport(score_table(written), kept.table_markdown, kept.findings, kept.files,
                               plan.out / HTML_DIR / "index.html", kept=True)
    caveats = caveats_of(written, [str(p) for p, _ in named], allow_mixed=allow_mixed)
    table = score_table(written)
    keys = sorted({k for row in table.values() for k, v in row.items() if not math.isnan(v)},
                  key=lambda k: (KEY_ORDER.index(k) if k in KEY_ORDER else len(KEY_ORDER), k))
    # the HTML report's clips are encoded in the engine's workers while the tables, figures and findings are made
    material = None if clip_material is None else ClipMaterial(clip_material)
    encoding = ClipEncoding(written, plan.out / HTML_DIR, keys, engine=plan.engine, material=material,
                            sources=clip_sources(plan, dataset_key) if material is not None else None)
    try:
        comparisons, intervals = significance(written)  # comparisons.json, Table 1 marks, intervals
        tolerances = cpu_tolerances(written)  # network metrics computed without the CPU pins
        files = write_report(table, plan.out, keys, intervals=intervals, comparisons=comparisons, ci=ci,
                             tolerances=tolerances, caveats=caveats, docs=written)
        table_md = table1_markdown(table, keys, comparisons=comparisons, uncertainty=intervals, ci=ci,
                                   tolerances=tolerances, caveats=caveats)
        findings = check_findings(table, plan.slice_counts(), docs=written)
        files += write_findings(findings, plan.out)
    except BaseException:
        encoding.cancel()
        raise
    html_index = write_html_report(written, plan.out / HTML_DIR, keys, engine=plan.engine,  # the HTML report
                                   plots_from=[p for p in files if p.suffix == ".png"], comparisons=comparisons,
                                   caveats=caveats, encoding=encoding)
    files.append(html_index)
    if stamp is not None:
        write_report_stamp(stamp, key, plan.out, files, table_md, findings)
    return BenchmarkReport(table, table_md, findings, files, html_index)


def clip_sources(plan: BenchmarkPlan, dataset_key: str) -> dict[tuple[str, str], ClipSource]:
    """(slice, clip id) -> where the HTML report finds the streams of that row in the clip material the plan's run
    made (its ground truth named by ``dataset_key`` and the clip id, its hole by the unit's fingerprint)."""
    dataset = os.path.realpath(plan.dataset)
    return {(s, u.clip_id): ClipSource(dataset, ground_truth_identity(dataset_key, u.clip_id), u.fingerprint,
                                       u.num_frames)
            for u in plan.units.values() for s in u.slices}


def _worker_cpu_note(run: InpaintScoreRun) -> str:
    """The inpaint+evaluate stage's note: the workers' CPU seconds per method (inpainting, scoring) and for the
    HTML report's clip material."""
    return ("worker CPU inpaint " + ", ".join(f"{m} {c:.0f}s" for m, c in run.inpaint_cpu.items())
            + "; scoring " + ", ".join(f"{m} {c:.0f}s" for m, c in run.score_cpu.items())
            + f"; report clips {run.material_cpu:.0f}s")


def _stage(timings: list[StageTiming], say: Callable[[str], None], first: int, name: str, number: int) -> StageTimer:
    """The timer of step ``number`` of the four (after ``first`` earlier stages, e.g. the demo's build)."""
    return StageTimer(name, timings, say=say, number=f"{first + number}/{first + 4}")


def _say_summary(say: Callable[[str], None], result: BenchmarkResult, html_index: Path) -> None:
    """The table, the findings, the timings and the summary lines at the end of a run."""
    counts, names = result.slice_counts, result.methods
    say("")
    say(result.table_markdown.rstrip())
    say("")
    say("videos per slice: " + ", ".join(f"{s} {c}" for s, c in counts.items()))
    say("findings (paper section 6):")
    for f in result.findings:
        say("  " + f.summary().replace("\n", "\n  "))
    if power_note(counts):
        say(power_note(counts))
    say("")
    say("timings:\n" + result.timings_text())
    say(f"HTML report: {html_index}")
    say(f"wrote {len(result.report_files)} report files, {len(result.results_files)} results files and the "
        f"predictions under {result.out_dir}")
    say(f"summary: {len(names)} method(s) ({', '.join(names)}) x {len(result.slices)} slice(s), {result.units} "
        f"distinct (clip, hole) units per method, {sum(counts.values())} slice rows; metrics "
        f"{', '.join(result.metrics)}; {result.wall_s:.1f} s wall in this call; Table 1: "
        f"{result.out_dir / 'table1.md'}")


@cpu_pinned()  # OpenCV pinned for the call, given back after (core/cpu_pins)
def benchmark(  # noqa: PLR0913  (public API: keyword-only options)
    dataset: str | os.PathLike,
    methods: Mapping[str, Method],
    out_dir: str | os.PathLike,
    *,
    slices: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    engine: str | Engine = "local",
    jobs: int | None = None,
    device: str = "cpu",
    progress: bool = True,
    echo: Callable[[str], None] | None = print,
    timings: list[StageTiming] | None = None,
    cache_dir: str = CACHE_DIR,
    ci: str | None = None,
    set_level_ci: bool = False,
    baseline_results: Sequence[str | os.PathLike] = (), allow_mixed: bool = False,
    rerun: Sequence[str] = (),
) -> BenchmarkResult:
    """Inpaint, evaluate and report ``methods`` on ``slices`` of a built dataset, writing everything into ``out_dir``.

    Args:
        dataset: a folder made by ``devil build`` or a Hub repo id.
        methods: method name -> :class:`MethodSpec`, baseline name, or inpainter ``fn(frames, hole) -> frames``.
        out_dir: ``predictions/``, ``results/``, ``table1.md``/``.tsv``, figures, ``findings.*``,
            ``report-html/``, ``timings.json``, ``benchmark.log`` (re-running resumes at the clip level).
        slices: default: the ten slices of Table 1.
        metrics: default: every DEVIL metric that can run here (network metrics when their weights are cached).
        engine: ``local`` (``jobs`` worker processes, default ``min(2, cpu count)``) or ``ray``, or an
            :class:`~devil_dataset.core.engines.Engine`.
        device: where network metrics run (``cpu``, ``cuda``, ``auto``).
        echo: where progress, the table, skipped metrics, findings and the summary are printed (None: silent).
        timings: stage timings of earlier steps (the demo's build), written first into ``timings.json``.
        ci: Table 1 cells with their uncertainty over videos: ``"interval"`` (95% BCa bootstrap) or ``"se"``.
        set_level_ci: also give FID and VFID an interval (``EvalOptions(set_level_ci=True)``: a delete-a-group
            jackknife over 10 groups of videos; its memory and CPU cost per slice: ``devil benchmark --help``).
        baseline_results, allow_mixed: earlier results' folders joined to the report, not re-run
            (:func:`read_baseline_results`); results scored differently are refused unless ``allow_mixed`` (marked).
        rerun: methods whose stored predictions and values are made again (stored work of a method whose code
            changed, :meth:`MethodSpec.identity`, is made again anyway, with a message).

    A prediction folder of ``out_dir`` made by another run (another method spec, slice or dataset) is refused with
    a :class:`DevilError`, as is a ``dataset`` that is neither a folder nor a Hub repo id (before anything is
    written). A method that fails on a clip does not stop the others: they are finished and reported, then
    :class:`MethodsFailedError` (a :class:`DevilError`; ``.result``: what was written) lists the failures. Ctrl-C
    stops within seconds, keeping every unit finished so far for the next run.

    Example:
        >>> r = benchmark("devil-build/", {"telea": "telea"}, "bench-out", slices=["fg_size_high"])  # doctest: +SKIP
        >>> r.table[("telea", "fg_size_high")]["psnr"]  # doctest: +SKIP
    """
    wall_start = time.perf_counter()
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DevilError(f"{out}: exists and is not a directory")
    ds = Path(dataset)
    check_dataset_source(dataset)
    resolve_methods(methods)  # names and baselines checked before anything is written
    baselines = read_baseline_results(baseline_results, methods)  # merged into the report, not re-run
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    timings = list(timings or [])
    first = len(timings)
    say = RunLog(out / LOG_NAME, echo)
    say(f"# devil benchmark {time.strftime('%Y-%m-%d %H:%M:%S')}: {', '.join(methods)} on {dataset}")
    options = EvalOptions(device=device, flow=BENCHMARK_FLOW, set_level_ci=set_level_ci)
    stage = partial(_stage, timings, say, first)
    try:
        with stage("plan", 1):  # 1. plan + metrics
            plan = make_plan(dataset, methods, out, slices=slices, metrics=metrics, engine=engine, jobs=jobs,
                             options=options, say=say, rerun=rerun)
    except DevilError:
        if created:  # a plan that fails (a bad slice, an unreadable dataset) leaves no output folder behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    say(f"{len(plan.units)} distinct (clip, hole) units in {sum(plan.slice_counts().values())} slice rows: each "
        "method inpaints each unit once")
    with stage("inpaint+evaluate", 2) as st:  # 2. inpaint + pixel metrics, one clip at a time, scored from memory
        cache = ValuesCache(out / cache_dir / "values", dataset_digest(dataset), plan.pixel_metrics,
                            scoring_identity(plan.pixel_metrics, options))
        run = inpaint_and_score(plan, cache=cache, progress=progress, say=say,  # and the HTML report's clips
                                material=out / cache_dir / CLIP_MATERIAL_DIR, dataset_key=cache.digest)
        st.note = _worker_cpu_note(run)
    plan = _without_failed(plan, run.failures, say)
    with stage("results", 3):  # 3. results (network metrics through the evaluation engine when their weights exist)
        results = write_slice_results(plan, run.values, progress=progress)
    with stage("report", 4) as st:  # 4. report + findings (kept when its inputs did not change)
        report = write_benchmark_report(plan, results, ci=ci, baselines=baselines, allow_mixed=allow_mixed,
                                        stamp=out / cache_dir / REPORT_STAMP, dataset_key=cache.digest,
                                        clip_material=out / cache_dir / CLIP_MATERIAL_DIR, say=say)
        st.note = KEPT_NOTE if report.kept else ""
    result = BenchmarkResult(out, ds, plan.methods, plan.slices, plan.metrics, dict(plan.skipped_metrics),
                             report.table, report.table_markdown, results, report.files, report.findings,
                             plan.slice_counts(), timings, len(plan.units), time.perf_counter() - wall_start,
                             say.path, dict(run.failures))
    atomic_write_text(out / "timings.json", json.dumps([asdict(t) for t in timings], indent=1) + "\n")
    _say_summary(say, result, report.html_index)
    if run.failures:
        raise MethodsFailedError(failures_text(run.failures, len(plan.units), plan.methods), result)
    return result


def failures_text(failures: Mapping[str, Sequence[str]], units: int, finished: Sequence[str]) -> str:
    """The failures of a run: the first error of each failed method (``clip <id>: ...``) and its count.

    >>> print(failures_text({"mine": ["clip a: boom", "clip b: boom"]}, 3, ["telea"]))
    clip a: boom
      method mine failed on 2 of 3 (clip, hole) units (the first error above); not reported. Reported: telea
    """
    lines = []
    for m, errors in failures.items():
        lines += [errors[0], f"  method {m} failed on {len(errors)} of {units} (clip, hole) units (the first error "
                  f"above); not reported."]
    lines[-1] += f" Reported: {', '.join(finished)}" if finished else " No method finished."
    return "\n".join(lines)


def _without_failed(plan: BenchmarkPlan, failures: Mapping[str, Sequence[str]],
                    say: Callable[[str], None]) -> BenchmarkPlan:
    """The plan of the methods that did not fail (the failed ones are said now and raised at the end); when every
    method failed, the failures are raised now."""
    if not failures:
        return plan
    left = plan.without(set(failures))
    for m, errors in failures.items():
        say(f"method {m} failed on {len(errors)} unit(s); the other methods go on. First error: {errors[0]}")
    if not left.methods:
        raise DevilError(failures_text(failures, len(plan.units), ()))
    return left


__all__ = ["BENCHMARK_FLOW", "BenchmarkReport", "BenchmarkResult", "CACHE_DIR", "CLIP_MATERIAL_DIR", "LOG_NAME",
           "METHOD_NAME_RE", "Method", "MethodSpec", "MethodsFailedError", "PREDICTIONS_DIR", "RESULTS_DIR",
           "RunLog", "TABLE1_SLICES", "benchmark", "check_dataset_source", "check_method_name", "clip_sources",
           "dataset_label", "failures_text", "make_plan", "read_baseline_results", "resolve_methods",
           "write_benchmark_report", "write_slice_results"]
