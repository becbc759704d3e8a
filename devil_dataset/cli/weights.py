"""``devil weights``: list, download and import the network weights the evaluation metrics need."""
from __future__ import annotations

import argparse

from ._args import EXAMPLE_FORMATTER, existing_path

EPILOG = """\
examples:
  devil weights list
  devil weights download i3d          # on a connected machine (or: devil weights download all)
  devil weights import ~/Downloads/rgb_imagenet.pt
  devil weights import ./my-copy.pth --name inception

The cache is ~/.cache/devil-dataset/weights; set DEVIL_WEIGHTS_DIR to move it.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "weights",
        help="list, download or import network weights (LPIPS AlexNet, FID Inception, I3D, RAFT)",
        description="Manage the weights cache used by the network metrics (LPIPS, FID, PVCS, VFID, warp error "
        "with RAFT). Files are checked against the known checksums before they enter the cache.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    sub = p.add_subparsers(dest="weights_command", metavar="ACTION")
    sub.required = True

    ls = sub.add_parser("list", help="show known weights and whether they are cached",
                        description="Show every known weights file, its cache status, checksum and URL.",
                        epilog="example:\n  devil weights list\n", formatter_class=EXAMPLE_FORMATTER)
    ls.add_argument("--hash", action="store_true", help="hash cached files and show how they were verified")
    ls.set_defaults(func=_list)

    dl = sub.add_parser("download", help="download weights into the cache (needs network access)",
                        description="Download a weights file from its canonical URL, verify it and store it in the "
                        "cache. Offline, the error names the file and the import command.",
                        epilog="example:\n  devil weights download i3d\n", formatter_class=EXAMPLE_FORMATTER)
    dl.add_argument("name", metavar="NAME", help="alexnet, inception, i3d, raft or all")
    dl.add_argument("--force", action="store_true", help="download again even if cached")
    dl.set_defaults(func=_download)

    im = sub.add_parser("import", help="copy a local weights file into the cache after verifying it",
                        description="Verify a weights file fetched elsewhere and copy it into the cache under its "
                        "canonical name. The name is inferred from the file name or checksum unless --name is given.",
                        epilog="example:\n  devil weights import ~/Downloads/pt_inception-2015-12-05-6726825d.pth\n",
                        formatter_class=EXAMPLE_FORMATTER)
    im.add_argument("path", type=existing_path, metavar="PATH", help="the weights file")
    im.add_argument("--name", help="which weights this is (alexnet, inception, i3d, raft)")
    im.set_defaults(func=_import)


def _list(args: argparse.Namespace) -> int:
    from ..core.weights import KNOWN_WEIGHTS, available, cache_dir, weights_info

    print(f"cache: {cache_dir()}")
    for name, e in sorted(KNOWN_WEIGHTS.items()):
        status = "cached" if available(name) else "missing"
        check = (f"sha256 {e.sha256}" if e.sha256 else f"sha256 prefix {e.sha256_prefix}" if e.sha256_prefix
                 else f"git blob {e.git_blob}" if e.git_blob else "hash recorded at import")
        line = f"{name:<10} {status:<8} {e.filename}  [{check}; used by {e.used_by}]"
        if args.hash and status == "cached":
            info = weights_info(name)
            line += f"\n{'':<10} sha256 {info['sha256']} ({info['verified']})"
        print(line)
        print(f"{'':<10} {e.url}")
    return 0


def _download(args: argparse.Namespace) -> int:
    from ..core.weights import KNOWN_WEIGHTS, download, entry

    names = sorted(KNOWN_WEIGHTS) if args.name == "all" else [entry(args.name).name]
    for name in names:
        path = download(name, force=args.force)
        print(f"{name}: {path}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from ..core.weights import KNOWN_WEIGHTS, import_weights, weights_info

    path = import_weights(args.path, args.name)
    name = next(n for n, e in KNOWN_WEIGHTS.items() if path.name == e.filename)
    info = weights_info(name)
    print(f"{name}: {path} (sha256 {info['sha256']}, {info['verified']})")
    return 0

