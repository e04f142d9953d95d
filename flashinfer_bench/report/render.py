"""Render report tables as terminal text, Markdown, CSV or JSON.

Text and Markdown are for people: numbers rounded, latency in microseconds, speedups with
significant digits (never 0.00x), NaN shown blank, and text tables at most WIDTH columns wide (long
headers wrap, long names are shortened in the middle, lists wrap at commas, and a table with too
many columns is cut into blocks that repeat its first column). CSV and JSON are for scripts: raw
numbers (latency in milliseconds, columns named *_ms, as in the traces), NaN as empty / null,
every row and every character.
"""
from __future__ import annotations

import html

import json
import math
import re
import textwrap
from typing import Any, Dict, List, Sequence, Tuple

import pandas as pd

from .units import fmt_speedup, fmt_us, shorten

FORMATS = ("text", "csv", "json", "markdown")
WIDTH = 100  # text tables and paragraphs fit a 100-column terminal (issue 17)
GAP = "  "
MIN_TEXT = 24  # a text column is never shortened below this (too wide a table is cut into blocks instead)
SHORTENED_NOTE = f"(long names shortened to fit {WIDTH} columns; --format csv or json has them in full)"


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _latency_col(col: str) -> bool:
    return col.endswith("_ms") or col.startswith("latency_ms")


def fmt_number(col: str, v: Any) -> str:
    """Human form of one cell, chosen by the column's name. Latency columns (`*_ms`) show
    microseconds: their titles (TITLES) say `(us)`."""
    if _blank(v):
        return ""
    if isinstance(v, bool):
        return "yes" if v else ""
    if not isinstance(v, (int, float)):
        return str(v)
    if "pct_" in col or col.endswith("_pct"):
        return f"{v:.1f}%" if abs(v) >= 0.1 else f"{v:.2g}%"
    if "speedup" in col or col.endswith("_ratio"):
        return fmt_speedup(v)
    if _latency_col(col):
        return fmt_us(v)
    if col.endswith("_error"):
        return f"{v:.2e}"
    if col in ("bytes", "flops"):
        return f"{v:.3g}"
    if col in ("batch", "samples") and float(v).is_integer():
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# Column titles for people (csv/json keep the raw names). "(us)": the cells are microseconds.
TITLES = {
    "workload_label": "workload", "latency_ms": "latency (us)", "reference_latency_ms": "reference (us)",
    "speedup": "vs ref", "speedup_vs_baseline": "vs baseline", "geomean_speedup": "geomean vs ref",
    "geomean_speedup_vs_baseline": "geomean vs baseline", "median_pct_of_peak_bw": "median % peak BW",
    "max_abs_error": "max abs err", "max_rel_error": "max rel err", "runner_up_latency_ms": "runner-up (us)",
    "runner_up_ratio": "runner-up / winner", "achieved_gbps": "GB/s", "peak_gbps": "peak GB/s",
    "pct_of_peak_bw": "% peak BW", "achieved_tflops": "TFLOP/s", "peak_tflops": "peak TFLOP/s",
    "pct_of_peak_flops": "% peak FLOP/s", "peak_source": "peak from", "clear_wins": "clear wins",
    "runner_up": "runner-up", "tie_with": "tie with", "hardware": "device",
    "best_solution": "best solution", "best_author": "author", "best_geomean_speedup": "best vs ref",
    "solutions_correct": "solutions correct", "workloads_solved": "workloads solved",
}


def title(col: str) -> str:
    return TITLES.get(col, col)


def humanize(df: pd.DataFrame, drop: Sequence[str] = ()) -> pd.DataFrame:
    """Strings for people: formatted numbers, friendly headers, helper columns dropped."""
    cols = [c for c in df.columns if c not in drop]
    return pd.DataFrame({title(c): [fmt_number(c, v) for v in df[c]] for c in cols}, columns=[title(c) for c in cols])


def markdown_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "_(none)_\n"

    def cell(v: Any) -> str:  # names and authors are the solutions': no live HTML in a rendered table
        return html.escape(str(v), quote=False).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in df.columns) + " |",
             "| " + " | ".join("---" for _ in df.columns) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


# ---- text tables ----------------------------------------------------------------------------
_NUMERIC = re.compile(r"^[<>~+-]?[\d.,]+(e[+-]?\d+)?\s*(x|%|us|µs|ms|s)?$")


def _numeric(cells: Sequence[str]) -> bool:
    filled = [c for c in cells if c]
    return bool(filled) and all(_NUMERIC.match(c) for c in filled)


def _fit(cell: str, width: int) -> List[str]:
    """One cell in at most `width` characters: a comma-separated list (a workload's axes) wraps
    after its commas onto more lines; anything else is shortened in the middle."""
    if len(cell) <= width:
        return [cell]
    if "," in cell and " " not in cell:
        lines: List[str] = []
        for part in re.findall(r"[^,]+,?", cell):
            room = width - (1 if lines else 0)  # continuation lines are indented by one
            if lines and len(lines[-1]) + len(part) <= room:
                lines[-1] += part
            else:
                lines.append(part)
        return [shorten(lines[0], width)] + [" " + shorten(x, width - 1) for x in lines[1:]] if lines else [""]
    return [shorten(cell, width)]


def _header_lines(text: str, width: int) -> List[str]:
    return textwrap.wrap(text, width=max(width, 1), break_long_words=True, break_on_hyphens=False) or [""]


def _layout(headers: List[str], cols: List[List[str]], numeric: List[bool], width: int) -> Tuple[List[int], bool]:
    """Column widths for a table at most `width` wide where possible: headers first wrap onto
    more lines (down to their longest word), then text columns are shortened (down to MIN_TEXT).
    True when a cell had to be shortened or wrapped."""
    def longest_word(h: str) -> int:
        return max((len(w) for w in h.split()), default=0)

    cellw = [max((len(c) for c in col), default=0) for col in cols]
    widths = [max(c, len(h)) for c, h in zip(cellw, headers)]
    total = sum(widths) + len(GAP) * (len(widths) - 1)
    floor = [max(c, longest_word(h)) for c, h in zip(cellw, headers)]
    while total > width:  # wrap headers, the one with the most room to give first
        i = max(range(len(widths)), key=lambda j: widths[j] - floor[j])
        if widths[i] <= floor[i]:
            break
        widths[i] -= 1
        total -= 1
    squeezed = False
    while total > width:
        cands = [i for i, w in enumerate(widths) if not numeric[i] and w > max(MIN_TEXT, floor[i] if floor[i] < MIN_TEXT else 0)]
        if not cands:
            break
        i = max(cands, key=lambda j: widths[j])
        widths[i] -= 1
        total -= 1
        squeezed = True
    return widths, squeezed


def _render_block(headers: List[str], cols: List[List[str]], numeric: List[bool], widths: List[int]) -> List[str]:
    head = [_header_lines(h, w) for h, w in zip(headers, widths)]
    n_head = max(len(h) for h in head)
    lines = []
    for k in range(n_head):
        # headers sit on their last line (bottom-aligned), like a printed table
        parts = []
        for h, w, num in zip(head, widths, numeric):
            j = k - (n_head - len(h))
            text = h[j] if j >= 0 else ""
            parts.append(text.rjust(w) if num else text.ljust(w))
        lines.append(GAP.join(parts).rstrip())
    lines.append(GAP.join("-" * w for w in widths))
    n_rows = len(cols[0]) if cols else 0
    for r in range(n_rows):
        cells = [_fit(col[r], w) for col, w in zip(cols, widths)]
        height = max(len(c) for c in cells)
        for k in range(height):
            parts = []
            for c, w, num in zip(cells, widths, numeric):
                text = c[k] if k < len(c) else ""
                parts.append(text.rjust(w) if num else text.ljust(w))
            lines.append(GAP.join(parts).rstrip())
    return lines


def text_table(df: pd.DataFrame, width: int = WIDTH) -> str:
    """A table of strings for a terminal, at most `width` columns wide (see the module doc)."""
    if df.empty:
        return "  (none)\n"
    headers = [str(c) for c in df.columns]
    cols = [["" if _blank(v) else str(v) for v in df[c].tolist()] for c in df.columns]
    numeric = [_numeric(col) for col in cols]
    widths, squeezed = _layout(headers, cols, numeric, width)
    total = sum(widths) + len(GAP) * (len(widths) - 1)
    blocks: List[List[int]] = []
    if total <= width or len(cols) <= 1:
        blocks = [list(range(len(cols)))]
    else:  # too many columns: blocks of columns, each repeating the first (the row's name)
        first = widths[0]
        cur: List[int] = [0]
        used = first
        for i in range(1, len(cols)):
            if len(cur) > 1 and used + len(GAP) + widths[i] > width:
                blocks.append(cur)
                cur, used = [0], first
            cur.append(i)
            used += len(GAP) + widths[i]
        blocks.append(cur)
    out: List[str] = []
    for b, idx in enumerate(blocks):
        if b:
            out.append("")
        out += _render_block([headers[i] for i in idx], [cols[i] for i in idx], [numeric[i] for i in idx],
                             [widths[i] for i in idx])
    if squeezed:
        out.append(SHORTENED_NOTE)
    return "\n".join(out) + "\n"


def wrap_para(text: str, width: int = WIDTH, indent: str = "") -> str:
    return "\n".join(textwrap.wrap(text, width=width, subsequent_indent=indent + "  ", initial_indent=indent,
                                   break_long_words=False, break_on_hyphens=False)) or text


# ---- machine formats ------------------------------------------------------------------------
def to_records(df: pd.DataFrame) -> List[Dict[str, Any]]:
    """JSON-safe records: NaN -> None, numpy scalars -> Python."""
    return json.loads(df.to_json(orient="records", double_precision=15)) if not df.empty else []


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _inert(v: Any) -> Any:
    """A text cell a spreadsheet would run as a formula (a solution named `=HYPERLINK(...)`),
    quoted with a leading apostrophe; numbers are left as they are."""
    if isinstance(v, str) and v.startswith(_FORMULA_START) and not _NUMBER.match(v):
        return "'" + v
    return v


def to_csv(df: pd.DataFrame) -> str:
    df = df.copy()
    for c in df.select_dtypes(include=["object", "string"]).columns:
        df[c] = df[c].map(_inert)
    df.columns = [_inert(c) for c in df.columns]  # a pivot's columns may be solutions' names
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
                else:  # a long heading (a definition on a device) wraps; the rule spans its widest line
                    lines = textwrap.wrap(text, width=WIDTH, break_long_words=True, break_on_hyphens=False) or [""]
                    rule = "=" if level <= 2 else "-"
                    out.append("\n".join(lines) + "\n" + rule * max(len(x) for x in lines) + "\n")
            elif kind == "p":
                out.append((part[1] if fmt == "markdown" else wrap_para(part[1])) + "\n")
            elif kind == "ul":
                if fmt == "markdown":
                    out.append("".join(f"- {x}\n" for x in part[1]))
                else:
                    out.append("".join(wrap_para(f"- {x}") + "\n" for x in part[1]))
            elif kind == "t":
                out.append(markdown_table(part[1]) if fmt == "markdown" else text_table(part[1]))
        return "\n".join(out)
