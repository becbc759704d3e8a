"""``devil sources``: list the DEVIL release's 234 source videos and download them."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ._args import EXAMPLE_FORMATTER, non_negative_int, output_directory, positive_int

LIST_EPILOG = """\
examples:
  devil sources list                       # id, user and local status of the 234 videos
  devil sources list --dir devil-sources --json
"""
DOWNLOAD_EPILOG = """\
examples:
  # yt-dlp (no key needed); re-run the same command to resume
  devil sources download --out devil-sources
  # the release's way, through the Flickr API (keys only from the environment, never stored)
  FLICKR_API_KEY=... FLICKR_API_SECRET=... devil sources download --out devil-sources --jobs 4

Exit status 0 when at least one usable 1920x1080 video is in DIR, 1 when none is.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sources", help="the DEVIL release's source videos: list and download",
                              description="The 234 Flickr videos the DEVIL benchmark was cut from (source list of "
                              "the release, MichiganCOG/devil@95a7a1e flickr-config.yml).",
                              epilog=LIST_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    sub = p.add_subparsers(dest="sources_command", metavar="ACTION")
    sub.required = True

    ls = sub.add_parser("list", help="list the source videos with their user and local status",
                        description="List the release's source video ids in its order, with the Flickr user "
                        "(known once downloaded: the list itself does not map videos to users) and the status in "
                        "a local download folder.", epilog=LIST_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    ls.add_argument("--dir", type=Path, metavar="DIR", help="download folder to report the status of")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=run_list)

    dl = sub.add_parser("download", help="download the source videos (yt-dlp, or the Flickr API when keyed)",
                        description="Download the release's source videos into DIR with bounded parallelism, "
                        "retries with backoff and resumable partial files; write DIR/sources-manifest.json and "
                        "print what was obtained and what was not (with the reason).",
                        epilog=DOWNLOAD_EPILOG, formatter_class=EXAMPLE_FORMATTER)
    dl.add_argument("--out", required=True, type=output_directory, metavar="DIR", help="download folder")
    dl.add_argument("--ids", nargs="+", metavar="ID", help="only these video ids (default: all 234)")
    dl.add_argument("--jobs", type=positive_int, default=4, help="videos downloaded at a time (default 4)")
    dl.add_argument("--retries", type=non_negative_int, default=4, help="retries per video (default 4)")
    dl.add_argument("--backoff", type=float, default=2.0, metavar="S",
                    help="first wait before a retry, doubled per retry (default 2 s)")
    dl.add_argument("--base-url", metavar="URL",
                    help="server instead of flickr.com (also DEVIL_SOURCES_BASE_URL; for mirrors and tests)")
    dl.add_argument("--quiet", action="store_true", help="no progress bar")
    dl.set_defaults(func=run_download)


def run_list(args: argparse.Namespace) -> int:
    from ..sources.catalog import load_catalog
    from ..sources.download import read_sources_manifest

    cat = load_catalog()
    local = read_sources_manifest(args.dir) if args.dir else {}
    rows = []
    for vid in cat.video_ids:
        rec = local.get(vid)
        rows.append({"video_id": vid, "user": rec.user if rec else None,
                     "status": rec.status if rec else ("not downloaded" if args.dir else "unknown"),
                     "file": rec.file if rec else None, "reason": rec.reason if rec else None})
    if args.json:
        print(json.dumps({"source_list": cat.provenance, "users": list(cat.users), "videos": rows}, indent=1))
        return 0
    print(f"# {len(rows)} source videos of {len(cat.users)} Flickr users ({', '.join(cat.users)}); "
          f"list: {cat.provenance}")
    for r in rows:
        print(f"{r['video_id']:12s} {(r['user'] or '?'):16s} {r['status']}"
              + (f" ({r['reason']})" if r["reason"] else ""))
    return 0


def run_download(args: argparse.Namespace) -> int:
    from ..sources.download import download_sources

    result = download_sources(args.out, video_ids=args.ids, jobs=args.jobs, retries=args.retries,
                              backoff_s=args.backoff, base_url=args.base_url, progress=not args.quiet)
    print(result.table())
    return 0 if result.obtained else 1
