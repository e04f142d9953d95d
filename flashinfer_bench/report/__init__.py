"""Reports people read: summary, best-per-workload, roofline, plots and one HTML file.

Everything is keyed by (definition, hardware): results of different devices are never averaged
together. Works on traces with our extra measurements and on plain FlashInfer-Bench 0.1.2 traces.
"""
from .best import best_table, within_noise
from .frame import traces_frame
from .load import load_paths, merge_trace_sets
from .roofline import datasheet_peak_gbps, roofline_table
from .summary import Summary, summarize
from .views import render_command

__all__ = [
    "Summary", "best_table", "datasheet_peak_gbps", "load_paths", "merge_trace_sets",
    "render_command", "roofline_table", "summarize", "traces_frame", "within_noise",
    "write_report", "write_snakemake_report_assets",
]


def __getattr__(name: str):
    # the HTML writer pulls in matplotlib; import it only when asked for
    if name in ("write_report", "write_snakemake_report_assets"):
        from . import html

        return getattr(html, name)
    raise AttributeError(name)
