"""`flashinfer-bench inputs`: what applies to a definition's family, readable before a run.

Prints, per definition, how each input is generated when a workload does not give it (the
resolved generator specs), which correctness check runs and the tolerance its outputs get:
the shipped op-type settings (`flashinfer_bench/data/op_types.py`) under the config's
`op_type_evaluation` / `definition_evaluation` overrides.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inputs",
        help="show how each definition's inputs are generated and which correctness check runs",
        description="The resolved input generators, check and tolerance per definition (docs/inputs.md).",
    )
    p.add_argument("--local", required=True, metavar="PATH", help="dataset directory")
    p.add_argument("--definitions", nargs="+", metavar="NAME", help="only these definitions")
    p.add_argument("--config", metavar="YAML", help="a config file with op_type_evaluation / definition_evaluation overrides")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from flashinfer_bench.data.op_types import family_settings
    from flashinfer_bench.data.trace_set import TraceSet
    from flashinfer_bench.pipeline.settings import evaluation_for

    config = {}
    if args.config:
        import yaml

        config = yaml.safe_load(Path(args.config).read_text()) or {}
    ts = TraceSet.from_path(args.local)
    names = args.definitions or sorted(ts.definitions)
    unknown = sorted(set(names) - set(ts.definitions))
    if unknown:
        print(f"error: no definition named {unknown} in {args.local}", file=sys.stderr)
        return 2
    out = {}
    for name in names:
        d = ts.definitions[name]
        ev = evaluation_for(config, name, "cuda", d.op_type) if config else {}
        fam = family_settings(d, ev.get("inputs"), ev.get("check"), ev.get("tolerance"))
        out[name] = {
            "op_type": d.op_type,
            "inputs": {n: fam["inputs"].get(n, {"kind": "random"}) for n in d.inputs},
            "check": fam["check"] or {"kind": "elementwise"},
            "tolerance": fam["tolerance"],
        }
    print(json.dumps(out, indent=2))
    return 0
