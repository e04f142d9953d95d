"""Render report tables as terminal text, Markdown, CSV or JSON.

Text and Markdown are for people: numbers rounded, units in the cells, NaN shown blank.
CSV and JSON are for scripts: raw numbers, NaN as empty / null, one row per record.
"""
from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Sequence

import pandas as pd

FORMATS = ("text", "csv", "json", "markdown")


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def fmt_number(col: str, v: Any) -> str:
    """Human form of one cell, chosen by the column's name."""
    if _blank(v):
        return ""
    if isinstance(v, bool):
        return "yes" if v else ""
    if not isinstance(v, (int, float)):
        return str(v)
    if "pct_" in col or col.endswith("_pct"):
        return f"{v:.1f}%" if abs(v) >= 0.1 else f"{v:.2g}%"
    if "speedup" in col or col.endswith("_ratio"):
        if abs(v) >= 10:
            return f"{v:.0f}x"
        return f"{v:.2f}x" if abs(v) >= 0.1 else f"{v:.2g}x"
    if col.endswith("_ms") or col.startswith("latency"):
        return f"{v:.4g}"
    if col.endswith("_error"):
        return f"{v:.2e}"
    if col in ("bytes", "flops"):
        return f"{v:.3g}"
    if col in ("batch", "samples") and float(v).is_integer():
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# Column titles for people (csv/json keep the raw names).
TITLES = {
    "workload_label": "workload", "latency_ms": "latency ms", "reference_latency_ms": "ref ms",
    "speedup": "vs ref", "speedup_vs_baseline": "vs baseline", "geomean_speedup": "geomean vs ref",
    "geomean_speedup_vs_baseline": "geomean vs baseline", "median_pct_of_peak_bw": "median % peak BW",
    "max_abs_error": "max abs err", "max_rel_error": "max rel err", "runner_up_latency_ms": "runner-up ms",
    "runner_up_ratio": "runner-up / winner", "achieved_gbps": "GB/s", "peak_gbps": "peak GB/s",
    "pct_of_peak_bw": "% peak BW", "achieved_tflops": "TFLOP/s", "peak_tflops": "peak TFLOP/s",
    "pct_of_peak_flops": "% peak FLOP/s", "peak_source": "peak from", "clear_wins": "clear wins",
    "runner_up": "runner-up", "tie_with": "tie with",
}


def humanize(df: pd.DataFrame, drop: Sequence[str] = ()) -> pd.DataFrame:
    """Strings for people: formatted numbers, friendly headers, helper columns dropped."""
    cols = [c for c in df.columns if c not in drop]
    out = pd.DataFrame({TITLES.get(c, c): [fmt_number(c, v) for v in df[c]] for c in cols}, columns=[TITLES.get(c, c) for c in cols])
    return out


def markdown_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(none)_\n"
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(cell(c) for c in df.columns) + " |",
             "| " + " | ".join("---" for _ in df.columns) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def text_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "  (none)\n"
    return df.to_string(index=False) + "\n"


def to_records(df: pd.DataFrame) -> List[Dict[str, Any]]:
    """JSON-safe records: NaN -> None, numpy scalars -> Python."""
    return json.loads(df.to_json(orient="records", double_precision=15)) if not df.empty else []


def to_csv(df: pd.DataFrame) -> str:
    return df.to_csv(index=False)


def to_json(obj: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, pd.DataFrame):
            return to_records(o)
        raise TypeError(f"cannot serialise {type(o).__name__}")
    return json.dumps(obj, indent=2, default=default, allow_nan=False) + "\n"


class Doc:
    """A small document of headings, paragraphs and tables rendered as text or Markdown."""

    def __init__(self) -> None:
        self.parts: List[tuple] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(("h", level, text))

    def para(self, text: str) -> None:
        self.parts.append(("p", text))

    def bullets(self, items: Sequence[str]) -> None:
        if items:
            self.parts.append(("ul", list(items)))

    def table(self, df: pd.DataFrame) -> None:
        self.parts.append(("t", df))

    def render(self, fmt: str) -> str:
        out: List[str] = []
        for part in self.parts:
            kind = part[0]
            if kind == "h":
                _, level, text = part
                if fmt == "markdown":
                    out.append("#" * level + " " + text + "\n")
                else:
                    rule = "=" if level <= 2 else "-"
                    out.append(text + "\n" + rule * min(len(text), 100) + "\n")
            elif kind == "p":
                out.append(part[1] + "\n")
            elif kind == "ul":
                out.append("".join(f"- {x}\n" for x in part[1]))
            elif kind == "t":
                out.append(markdown_table(part[1]) if fmt == "markdown" else text_table(part[1]))
        return "\n".join(out)
