"""``devil report``: the paper's Table 1, relative improvements and plots from ``devil evaluate`` results."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ..core.atomic import atomic_write_text
from ..core.errors import DevilError
from ._args import EXAMPLE_FORMATTER, add_ci_argument, existing_path, output_directory

if TYPE_CHECKING:  # pragma: no cover
    from ..eval.report.caveats import Caveats

EPILOG = """\
example:
  devil report results/*.json --out report/
  # -> report/table1.md, table1.tsv, relative_improvement.md/.tsv, method_performance_<metric>.png,
  #    slice_difficulty_<metric>.png, sensitivity_<attribute>.png
  devil report results/*/*.json --html report-html/ --clip-metric lpips
  # -> report-html/index.html (open from disk): sortable Table 1, plots, worst/best clips as synced players
  devil report demo-out/results/*/*.json --findings --out report/
  # -> also report/findings.md, findings.json: the paper's slice trends checked, each with its permutation test
  devil report demo-out/results/*/*.json --ci interval --out report/
  # -> Table 1 cells "mean [lo, hi]" (95% BCa bootstrap over videos; --ci se: "mean ± se"); report/comparisons.json
  devil report demo-out/results/*/*.json --compare aligned-copy telea
  # -> per slice: where aligned-copy beats telea, where telea beats it, where they cannot be told apart
  devil report my-results/*.json --baseline-results demo-out/ --out report/
  # -> your results beside the demo's baselines (their results files merged, nothing re-run)
  devil report --paper-table mine:DAVIS=davis.json mine:YouTube-VOS=ytvos.json --out paper/
  # -> the DAVIS / YouTube-VOS table papers print (devil evaluate --protocol propainter results): PSNR, SSIM,
  #    VFID, E_warp and every other computed metric per dataset, intervals and a caption saying what they are;
  #    paper/paper_table.md and paper_table.tex
  devil report --paper-table a:removal=a.json b:removal=b.json --out removal-table/
  # -> with devil evaluate --protocol prove results: PROVE's removal table, one row per method: RC-S, RC-T,
  #    background and masked PSNR / SSIM with their intervals and caption

Results scored differently (evaluation protocol, parity, metric modes, flow, weights, precision) are refused with
the files and the differing fields (exit 2); --allow-mixed reports them side by side, marked §. Cells resting on
videos whose infinite PSNR-type value was clipped carry ∞n and are never marked best (docs/report.md).
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "report",
        help="tables (markdown/TSV) and plots from evaluation results",
        description="Combine results files (one per method and slice) into the paper's Table 1 (methods x slices "
        "x metrics, release number formats, arrows for the better direction), the relative improvement "
        "(hi - lo) / lo per attribute, and PNG plots (method performance, slice difficulty, sensitivity). "
        "The markdown table is printed on stdout.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("results", nargs="*", type=existing_path, metavar="RESULTS.json", help="devil evaluate outputs")
    p.add_argument("--baseline-results", action="append", type=existing_path, metavar="DIR",
                   help="also the results files under DIR (DIR/results/ when present, e.g. a demo or benchmark "
                   "output): merged into the report without re-running those methods; repeatable")
    p.add_argument("--allow-mixed", action="store_true",
                   help="report results whose scoring identity differs (protocol, parity, modes, flow, weights, "
                   "precision) side by side, marked § (default: refused with the differing fields)")
    p.add_argument("--out", type=output_directory, metavar="DIR", help="write tables and plots here")
    p.add_argument("--metrics", nargs="+", metavar="KEY", help="result keys to include (default: all present)")
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.add_argument("--findings", action="store_true",
                   help="check the paper's robust slice trends (section 6) on the results: printed after the tables, "
                   "and written to findings.md/.json with --out")
    add_ci_argument(p)
    p.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="print, slice by slice, where method A beats B, where B beats A and where they cannot be "
                   "told apart (paired sign-flip permutation test over videos, Holm-adjusted)")
    p.add_argument("--html", type=output_directory, metavar="DIR",
                   help="also write a self-contained HTML diagnosis report (DIR/index.html, plots, clip videos)")
    p.add_argument("--clip-metric", metavar="KEY", help="result key that ranks the worst/best clips (default psnr)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="worker processes encoding the HTML clips (one clip per task; same files with any N)")
    p.add_argument("--clips-per-end", type=int, default=1, metavar="N",
                   help="worst and best clips shown per slice and method (default 1; 0: no clips)")
    p.add_argument("--paper-table", nargs="+", metavar="[METHOD:]DATASET=FILE",
                   help="instead of Table 1: the table papers print of the results' protocol (--protocol propainter: "
                   "the DAVIS / YouTube-VOS table; --protocol prove: the removal table; one protocol per table; one "
                   "argument per method and dataset; METHOD defaults to the "
                   "file's method): every computed metric with its 95%% interval, and a caption saying what the "
                   "intervals are; with --out also DIR/paper_table.md and paper_table.tex")
    p.set_defaults(func=run)


def _read_all(args: argparse.Namespace) -> tuple[list[dict], Caveats]:
    """The results files given and those under each ``--baseline-results`` folder, with their caveats (clipped
    videos; mixed scoring refused unless ``--allow-mixed``)."""
    from ..eval.report.caveats import caveats_of
    from ..eval.scoring.results import read_results, results_in

    named = [(str(p), read_results(p)) for p in args.results]
    for folder in args.baseline_results or ():
        named += [(str(p), doc) for p, doc in results_in(folder)]
    if not named:
        raise DevilError("no results: give RESULTS.json files or --baseline-results DIR")
    docs = [d for _, d in named]
    return docs, caveats_of(docs, [n for n, _ in named], allow_mixed=args.allow_mixed)


def _paper_table(args: argparse.Namespace) -> int:
    """``--paper-table``: the table papers print of the results' protocol on stdout (and ``--out``'s files)."""
    from ..eval.report.paper_table import (
        paper_table_caption,
        paper_table_latex,
        paper_table_markdown,
        read_table_specs,
        table_keys,
    )

    if args.results or args.baseline_results:
        raise DevilError("--paper-table takes its results as [METHOD:]DATASET=FILE arguments; give no RESULTS.json "
                         "or --baseline-results beside it")
    rows, datasets = read_table_specs(args.paper_table)
    keys = table_keys(rows)
    text = (paper_table_markdown(rows, datasets=datasets, keys=keys, intervals=True) + "\n"
            + paper_table_caption(rows, keys) + "\n")
    sys.stdout.write(text)
    if args.out is not None:
        latex = paper_table_latex(rows, datasets=datasets, keys=keys, intervals=True)
        written = [atomic_write_text(args.out / "paper_table.md", text),
                   atomic_write_text(args.out / "paper_table.tex", latex)]
        print(f"wrote {len(written)} files to {args.out}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    from ..core.engines import get_engine
    from ..eval.report import (
        RELATIVE_IMPROVEMENT_CAPTION,
        cpu_tolerances,
        relative_improvement_markdown,
        score_table,
        table1_markdown,
        video_intervals,
        write_report,
    )
    from ..eval.report.comparisons import compare_text
    from ..eval.report.findings import check_findings, findings_markdown, slice_counts, write_findings
    from ..eval.report.html import write_html_report
    from ..eval.stats.significance import compare_methods

    if args.paper_table:
        return _paper_table(args)
    docs, caveats = _read_all(args)
    table = score_table(docs)
    keys = [k.strip() for item in args.metrics for k in item.split(",") if k.strip()] if args.metrics else None
    comparisons = compare_methods(docs)
    intervals = video_intervals(docs)
    ci = getattr(args, "ci", None)
    if args.compare:

        sys.stdout.write(compare_text(comparisons, *args.compare))
        return 0
    tolerances = cpu_tolerances(docs)
    sys.stdout.write(table1_markdown(table, keys, comparisons=comparisons, uncertainty=intervals, ci=ci,
                                     tolerances=tolerances, caveats=caveats))
    ri = relative_improvement_markdown(table, keys, caveats)
    if ri.count("\n") > 2:

        sys.stdout.write("\nRelative improvement (low -> high):\n\n" + RELATIVE_IMPROVEMENT_CAPTION + "\n\n" + ri)
    findings = None
    if args.findings:

        findings = check_findings(table, slice_counts(docs), docs=docs)
        sys.stdout.write("\nFindings (paper section 6):\n\n" + findings_markdown(findings))
    if args.out is not None:
        written = write_report(table, args.out, keys, plots=not args.no_plots, intervals=intervals,
                               comparisons=comparisons, ci=ci, tolerances=tolerances, caveats=caveats, docs=docs)
        if findings is not None:

            written += write_findings(findings, args.out)
        print(f"wrote {len(written)} files to {args.out}", file=sys.stderr)
    if args.html is not None:

        index = write_html_report(docs, args.html, keys,
                                  clip_metric=args.clip_metric, per_end=max(0, args.clips_per_end),
                                  clips=args.clips_per_end > 0, plots=not args.no_plots, comparisons=comparisons,
                                  caveats=caveats, engine=get_engine("local", jobs=args.jobs))
        print(f"wrote the HTML report {index}", file=sys.stderr)
    return 0
