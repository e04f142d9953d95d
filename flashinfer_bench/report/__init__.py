"""Reports people read: summary, best-per-workload, roofline, plots and one HTML file.

Everything is keyed by (definition, hardware): results of different devices are never averaged
together. Works on traces with our extra measurements and on plain FlashInfer-Bench 0.1.2 traces.

Every name loads on first use (PEP 562): the tables need pandas, which alone takes most of a
second to import, and `import flashinfer_bench.report` should not pay for it up front. Plots are
drawn by matplotlib's SVG backend (plots.py), imported only when a plot is drawn: the text
reports never import it.

What people read uses report/units.py: latency in microseconds, speedups with significant digits,
workloads by their axes; CSV and JSON keep the traces' raw numbers (milliseconds, `*_ms`).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "Summary": "summary", "summarize": "summary",
    "best_table": "best", "within_noise": "best",
    "traces_frame": "frame",
    "load_paths": "load", "merge_trace_sets": "load",
    "datasheet_peak_gbps": "roofline", "roofline_table": "roofline",
    "render_command": "views",
    "write_report": "html", "write_snakemake_report_assets": "html", "build_report": "html",
    "write_stage_report": "html",
}

__all__ = [
    "Summary", "best_table", "datasheet_peak_gbps", "load_paths", "merge_trace_sets",
    "render_command", "roofline_table", "summarize", "traces_frame", "within_noise",
    "write_report", "write_snakemake_report_assets", "build_report", "write_stage_report",
]

if TYPE_CHECKING:  # for type checkers and IDEs only
    from .best import best_table, within_noise
    from .frame import traces_frame
    from .html import build_report, write_report, write_snakemake_report_assets, write_stage_report
    from .load import load_paths, merge_trace_sets
    from .roofline import datasheet_peak_gbps, roofline_table
    from .summary import Summary, summarize
    from .views import render_command


def __getattr__(name: str) -> Any:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))
