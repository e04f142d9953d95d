#!/usr/bin/env python3
"""Regenerate the example dataset's solution JSON files from their readable sources.

Each folder dataset_src/<solution>/ holds the kernel source files and a meta.json with every
Solution field except the source contents:

    {"name": ..., "definition": ..., "author": ..., "description": ...,
     "spec": {...}, "sources": ["main.py", ...]}

This script embeds the listed files as {"path", "content"} entries and writes
dataset/solutions/<author>/<op_type>/<definition>/<name>.json (FlashInfer Trace layout), where
op_type comes from the definition file under dataset/definitions/.

    python dataset_src/pack.py            # write the JSON files
    python dataset_src/pack.py --check    # exit 1 if any JSON file is missing or stale

Only the standard library is used, so the script runs with any Python 3.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOLUTION_KEYS = ("name", "definition", "author", "description", "spec")
SPEC_KEYS = ("language", "target_hardware", "entry_point", "dependencies",
             "destination_passing_style", "binding")


def definition_op_types(dataset: Path) -> dict[str, str]:
    op_types = {}
    for path in sorted((dataset / "definitions").rglob("*.json")):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        op_types[d["name"]] = d["op_type"]
    return op_types


def pack_one(src_dir: Path, op_types: dict[str, str]) -> tuple[Path, str]:
    """Return (relative output path, JSON text) for one dataset_src/<solution>/ folder."""
    with open(src_dir / "meta.json", encoding="utf-8") as f:
        meta = json.load(f)
    unknown = set(meta) - set(SOLUTION_KEYS) - {"sources"}
    if unknown:
        raise ValueError(f"{src_dir}/meta.json: unknown keys {sorted(unknown)}")
    if meta["name"] != src_dir.name:
        raise ValueError(f"{src_dir}: folder name differs from solution name {meta['name']!r}")
    if meta["definition"] not in op_types:
        raise ValueError(f"{src_dir}: unknown definition {meta['definition']!r}")
    spec_unknown = set(meta["spec"]) - set(SPEC_KEYS)
    if spec_unknown:
        raise ValueError(f"{src_dir}/meta.json: unknown spec keys {sorted(spec_unknown)}")
    entry_file = meta["spec"]["entry_point"].split("::")[0]
    if entry_file not in meta["sources"]:
        raise ValueError(f"{src_dir}: entry file {entry_file!r} is not among the sources")

    solution = {key: meta[key] for key in SOLUTION_KEYS}
    solution["spec"] = {key: meta["spec"][key] for key in SPEC_KEYS if key in meta["spec"]}
    solution["sources"] = []
    for rel in meta["sources"]:
        with open(src_dir / rel, encoding="utf-8") as f:
            solution["sources"].append({"path": rel, "content": f.read()})

    out_rel = (Path("solutions") / meta["author"] / op_types[meta["definition"]]
               / meta["definition"] / f"{meta['name']}.json")
    return out_rel, json.dumps(solution, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=REPO / "dataset_src")
    parser.add_argument("--dataset", type=Path, default=REPO / "dataset")
    parser.add_argument("--check", action="store_true",
                        help="compare instead of writing; exit 1 if anything is out of date")
    args = parser.parse_args(argv)

    op_types = definition_op_types(args.dataset)
    stale = []
    for src_dir in sorted(p for p in args.src.iterdir() if (p / "meta.json").is_file()):
        rel, text = pack_one(src_dir, op_types)
        target = args.dataset / rel
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if current == text:
            print(f"up to date  {rel}")
            continue
        if args.check:
            stale.append(rel)
            print(f"STALE       {rel}")
        else:
            write_atomic(target, text)
            print(f"wrote       {rel}")
    if stale:
        print(f"{len(stale)} solution file(s) out of date; run dataset_src/pack.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
