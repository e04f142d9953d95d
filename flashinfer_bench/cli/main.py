"""The `flashinfer-bench` command. Each subcommand lives in its own module with
`add_parser(subparsers)` and `run(args) -> int`."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import List, Optional

# subcommand -> module; a module registers its own arguments
SUBCOMMANDS = {
    "run": "flashinfer_bench.cli.run_cmd",
    "validate": "flashinfer_bench.cli.validate_cmd",
    "report": "flashinfer_bench.cli.report_cmd",
    "inputs": "flashinfer_bench.cli.inputs_cmd",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flashinfer-bench",
        description="Benchmark LLM-inference kernels stored in the FlashInfer Trace format.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, modname in SUBCOMMANDS.items():
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name != modname:
                raise
            continue
        mod.add_parser(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        from flashinfer_bench import __version__

        print(__version__)
        return 0
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    logging.basicConfig(
        level=getattr(logging, str(getattr(args, "log_level", "INFO")).upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
