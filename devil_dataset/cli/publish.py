"""``devil publish``: upload a built dataset folder to the HuggingFace Hub."""
from __future__ import annotations

import argparse

from ._args import EXAMPLE_FORMATTER, existing_path

EPILOG = """\
examples:
  # list what would be uploaded (and verify the checksums), without contacting the Hub
  devil publish devil-sample --repo-id my-org/devil-sample --dry-run

  # upload (needs `huggingface-cli login` or HF_TOKEN, and network)
  devil publish devil-data --repo-id my-org/devil --private

Publish only data whose licence allows redistribution: every row keeps its source's `license` and `attribution`.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "publish",
        help="upload a built dataset folder to the HuggingFace Hub",
        description="Verify a dataset folder against its manifest.json and upload its published files (README.md, "
        "manifest.json, data/) to a Hub dataset repository with huggingface_hub. The data's licence must allow "
        "redistribution.",
        epilog=EPILOG,
        formatter_class=EXAMPLE_FORMATTER,
    )
    p.add_argument("dataset_dir", type=existing_path, metavar="DATASET_DIR", help="folder written by `devil build`")
    p.add_argument("--repo-id", required=True, metavar="ORG/NAME", help="Hub dataset repository")
    p.add_argument("--dry-run", action="store_true", help="list the files and sizes; upload nothing")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--revision", help="branch to upload to (default: main)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..builder.publish import publish, stray_files

    for rel in stray_files(args.dataset_dir):
        print(f"not uploaded (not in manifest.json): {rel}")
    files = publish(args.dataset_dir, args.repo_id, dry_run=args.dry_run, private=args.private,
                    revision=args.revision)
    total = sum(size for _, size in files)
    for rel, size in files:
        print(f"{size:>14,d}  {rel}")
    verb = "would upload" if args.dry_run else "uploaded"
    print(f"{verb} {len(files)} files, {total:,d} bytes to https://huggingface.co/datasets/{args.repo_id}")
    return 0
