"""A small dependency-free SVG line-plot writer for the report's plots.

Standard library only (no numpy, no matplotlib): a plot is a handful of `Series` (x, y, optional
error bars, colour, marker, dash), optional horizontal guide lines, and linear, log-2 or log-10
axes. The result is one standalone SVG document (text) with a fixed pixel size, so a browser
decodes it as an <img> and Snakemake's report shows it as is.

Tick labels are plain numbers (1, 8, 64, 512, 4096; 0.5, 2, 10) with no mathtext; the legend goes
in the corner of the plot that covers the fewest points and lines, else below the plot.
Text widths are estimated (there are no font metrics here), generously, so labels do not collide.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, List, Optional, Sequence, Tuple

# matplotlib's tab10: distinct, colour-blind-friendlier than pure hues, familiar to readers
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
MARKERS = "os^Dvp*hX<>"
DASHES = {"dashed": "6,4", "dotted": "1.5,3", "dashdot": "6,3,1.5,3"}
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


@dataclass
class Series:
    """One line. `lo`/`hi` are absolute y values of the error bar ends (None: no bars)."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    lo: Optional[Sequence[float]] = None
    hi: Optional[Sequence[float]] = None
    color: Optional[str] = None
    marker: Optional[str] = "o"
    dash: Optional[str] = None  # "dashed", "dotted", "dashdot" or a stroke-dasharray
    width: float = 1.6


@dataclass
class HLine:
    """A horizontal guide line across the plot (1x, 100%)."""

    y: float
    color: str = "#000000"
    dash: Optional[str] = "dashed"
    width: float = 1.2


@dataclass
class Plot:
    series: List[Series]
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    xscale: str = "linear"  # "linear", "log2" or "log10"
    yscale: str = "linear"
    ylim: Optional[Tuple[float, float]] = None
    hlines: List[HLine] = field(default_factory=list)
    width: int = 640
    height: int = 420


def escape(text: object) -> str:
    """Text for XML character data and attribute values."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def text_width(text: str, size: float) -> float:
    """A generous estimate of the rendered width of `text` in a sans-serif font."""
    w = 0.0
    for ch in text:
        if ch in "il.,:;|!'`ij ":
            w += 0.32
        elif ch in "mwMW@%":
            w += 0.92
        elif ch.isupper() or ch in "_#&~":
            w += 0.72
        else:
            w += 0.6
    return w * size


def fmt_num(v: float) -> str:
    """A tick label: plain digits, no float noise (0.30000000000000004 -> 0.3)."""
    if v == 0:
        return "0"
    a = abs(v)
    if 1e-4 <= a < 1e7:
        s = f"{v:.6g}"
        if "e" not in s:
            return s
        return f"{v:.10f}".rstrip("0").rstrip(".")
    m, e = f"{v:.3g}".split("e")
    return f"{m}e{int(e)}"


def _dash(d: Optional[str]) -> str:
    if not d:
        return ""
    return f' stroke-dasharray="{DASHES.get(d, d)}"'


def _finite(v: float) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


# ------------------------------------------------------------------------------------ axes


class Axis:
    """Maps data values to pixels along [p0, p1] and picks ticks (major labelled, minor gridded)."""

    def __init__(self, scale: str, lo: float, hi: float, p0: float, p1: float):
        self.scale, self.lo, self.hi, self.p0, self.p1 = scale, lo, hi, p0, p1
        self.t0, self.t1 = self.fwd(lo), self.fwd(hi)

    def fwd(self, v: float) -> float:
        if self.scale == "linear":
            return v
        return math.log2(v) if self.scale == "log2" else math.log10(v)

    def px(self, v: float) -> float:
        if self.scale != "linear" and v <= 0:
            return self.p0 - 1e4 * (1 if self.p1 > self.p0 else -1)  # far outside; clipped
        t = (self.fwd(v) - self.t0) / (self.t1 - self.t0)
        return self.p0 + t * (self.p1 - self.p0)

    def ticks(self, min_gap: float, label_size: float, prefer: Sequence[float] = ()) -> Tuple[List[Tuple[float, str]], List[float]]:
        """(major ticks with labels, minor tick values) such that neighbouring labels keep
        `min_gap` pixels between their extents (`label_size`: font size, for widths).
        `prefer`: values to label instead (the data's x values), thinned until they fit."""
        if self.scale == "linear":
            major, minor = self._linear(), []
        else:
            major, minor = self._log(min_gap, label_size)
        kept: List[float] = []
        for v in sorted(set(v for v in prefer if _finite(v) and self.lo <= v <= self.hi)):
            if not kept or self._fits([kept[-1], v], min_gap, label_size):
                kept.append(v)
        if len(kept) >= 2 or (len(kept) == 1 and len(set(prefer)) == 1):  # one x value: label just it
            taken = {round(v, 12) for v in kept}
            minor = sorted(set([v for v, _ in major] + minor) - taken)
            if self.scale == "linear":
                minor = []
            major = [(v, self._label(v)) for v in kept]
        return major, minor

    def _linear(self) -> List[Tuple[float, str]]:
        span = self.hi - self.lo
        mag = 10 ** math.floor(math.log10(span / 10))
        step = next(m * mag for m in (1, 2, 5, 10, 20) if span / (m * mag) <= 8)
        first = math.ceil(self.lo / step - 1e-9) * step
        out = []
        v = first
        while v <= self.hi + step * 1e-9:
            val = round(v, 12)
            out.append((val, fmt_num(val if abs(val) > step * 1e-9 else 0.0)))
            v += step
        return out

    def _label(self, v: float) -> str:
        if self.scale == "log2" and v >= 2 ** 17 and math.log2(v).is_integer():
            return "2" + str(round(math.log2(v))).translate(SUPERSCRIPT)
        if self.scale == "log2" and v < 2 ** -10 and math.log2(v).is_integer():
            return "2" + str(round(math.log2(v))).translate(SUPERSCRIPT)
        return fmt_num(v)

    def _fits(self, vals: Sequence[float], min_gap: float, label_size: float) -> bool:
        """Neighbouring labels leave min_gap pixels between them (widths for x, heights for y)."""
        horizontal = abs(self.p1 - self.p0) and self.p1 > self.p0
        for a, b in zip(vals, vals[1:]):
            if horizontal:
                need = (text_width(self._label(a), label_size) + text_width(self._label(b), label_size)) / 2 + min_gap
            else:
                need = label_size + min_gap
            if abs(self.px(b) - self.px(a)) < need:
                return False
        return True

    def _log(self, min_gap: float, label_size: float):
        base = 2 if self.scale == "log2" else 10
        k0, k1 = math.ceil(self.t0 - 1e-9), math.floor(self.t1 + 1e-9)
        inside = lambda vals: [v for v in vals if self.lo * (1 - 1e-9) <= v <= self.hi * (1 + 1e-9)]
        # powers of the base, every step-th one; a step divides the exponent so labels read
        # 1, 8, 64, 512, 4096 (base 2, step 3) or 0.01, 1, 100 (base 10, step 2)
        stepped = [[float(base) ** k for k in range(k0, k1 + 1) if k % step == 0]
                   for step in range(1, max(2, k1 - k0 + 2))]
        major: List[float] = []
        if base == 10 and k1 - k0 < 3:
            # a decade or two: 1-2-5 labels when they fit (at most 8), else decades, else 1..9
            for mants in ((1, 2, 5), (1,), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
                vals = inside(sorted(m * 10.0 ** k for k in range(k0 - 1, k1 + 1) for m in mants))
                if 3 <= len(vals) <= 8 and self._fits(vals, min_gap, label_size):
                    major = vals
                    break
        if not major:
            major = next((c for c in stepped if len(c) >= 2 and self._fits(c, min_gap, label_size)), [])
        if len(major) < 2:
            major = self._fallback(min_gap, label_size)
        if base == 2:
            minor_all = [float(base) ** k for k in range(k0, k1 + 1)]
        else:
            minor_all = inside([m * 10.0 ** k for k in range(k0 - 1, k1 + 1) for m in range(1, 10)])
        majset = {round(v, 12) for v in major}
        minor = [v for v in minor_all if round(v, 12) not in majset]
        return [(v, self._label(v)) for v in major], minor

    def _fallback(self, min_gap: float, label_size: float) -> List[float]:
        """Less than one labelled power in range: two or three round values inside it."""
        lo, hi = self.lo, self.hi
        vals = [lo * (hi / lo) ** f for f in (0.1, 0.5, 0.9)]
        out = []
        for v in vals:
            mag = 10 ** math.floor(math.log10(v))
            out.append(round(v / mag, 1) * mag)
        out = sorted(set(out))
        while len(out) > 2 and not self._fits(out, min_gap, label_size):
            out = [out[0], out[-1]]
        return out


def _limits(vals: Iterable[float], scale: str, fixed: Optional[Tuple[float, float]] = None) -> Tuple[float, float]:
    if fixed is not None:
        return fixed
    vs = [v for v in vals if _finite(v) and (scale == "linear" or v > 0)]
    if not vs:
        return (0.0, 1.0) if scale == "linear" else (1.0, 10.0)
    lo, hi = min(vs), max(vs)
    if scale == "linear":
        if hi == lo:
            d = abs(lo) * 0.1 or 1.0
            return lo - d, hi + d
        pad = (hi - lo) * 0.05
        return lo - pad, hi + pad
    if hi == lo:
        return lo / 1.5, hi * 1.5
    f = (hi / lo) ** 0.05
    return lo / f, hi * f


# ------------------------------------------------------------------------------------ drawing


def _marker(kind: str, x: float, y: float, color: str, r: float = 3.6) -> str:
    f = f'fill="{color}" stroke="{color}"'
    if kind == "o":
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {f}/>'
    if kind == "s":
        return f'<rect x="{x - r * .85:.1f}" y="{y - r * .85:.1f}" width="{r * 1.7:.1f}" height="{r * 1.7:.1f}" {f}/>'
    shapes = {
        "^": [(0, -1.15), (1.05, .8), (-1.05, .8)],
        "v": [(0, 1.15), (1.05, -.8), (-1.05, -.8)],
        "<": [(-1.15, 0), (.8, 1.05), (.8, -1.05)],
        ">": [(1.15, 0), (-.8, 1.05), (-.8, -1.05)],
        "D": [(0, -1.2), (1, 0), (0, 1.2), (-1, 0)],
        "p": [(math.sin(a), -math.cos(a)) for a in (i * 2 * math.pi / 5 for i in range(5))],
        "h": [(math.sin(a), -math.cos(a)) for a in (i * 2 * math.pi / 6 for i in range(6))],
        "*": [((1.25 if i % 2 == 0 else .5) * math.sin(a), -(1.25 if i % 2 == 0 else .5) * math.cos(a))
              for i, a in enumerate(j * math.pi / 5 for j in range(10))],
        "X": [(-.35, -1), (0, -.45), (.35, -1), (1, -.35), (.45, 0), (1, .35), (.35, 1), (0, .45),
              (-.35, 1), (-1, .35), (-.45, 0), (-1, -.35)],
    }
    pts = shapes.get(kind)
    if pts is None:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" {f}/>'
    d = " ".join(f"{x + px * r:.1f},{y + py * r:.1f}" for px, py in pts)
    return f'<polygon points="{d}" {f}/>'


def _legend_entries(series: Sequence[Series]) -> List[Series]:
    return [s for s in series if s.label]


def render(p: Plot) -> str:
    """The plot as one standalone SVG document."""
    W = p.width
    tick_fs, label_fs, title_fs, legend_fs = 13.0, 13.5, 14.0, 12.5
    series = []
    for i, s in enumerate(p.series):
        color = s.color or COLORS[i % len(COLORS)]
        series.append(Series(s.label, list(s.x), list(s.y), None if s.lo is None else list(s.lo),
                             None if s.hi is None else list(s.hi), color, s.marker, s.dash, s.width))

    # data limits
    xs = [x for s in series for x in s.x]
    ys = [y for s in series for y in s.y]
    for s in series:
        for arr in (s.lo, s.hi):
            if arr is not None:
                ys.extend(arr)
    ys.extend(h.y for h in p.hlines)
    xlo, xhi = _limits(xs, p.xscale)
    data_x = sorted(set(x for x in xs if _finite(x)))
    ylo, yhi = _limits(ys, p.yscale, p.ylim)

    # vertical layout: title lines, plot area, tick labels, axis label
    title_lines = [ln for ln in p.title.split("\n")] if p.title else []
    top = 10 + len(title_lines) * (title_fs + 5) + 6
    bottom_axis = tick_fs + 8 + (label_fs + 8 if p.xlabel else 0) + 6
    height = p.height
    plot_bottom = height - bottom_axis
    right = W - 18

    def axes(ylo: float, yhi: float):
        # the y axis first (its labels decide the left margin), then the x axis
        yaxis = Axis(p.yscale, ylo, yhi, plot_bottom, top)
        yticks, yminor = yaxis.ticks(4, tick_fs)
        ylab_w = max((text_width(t, tick_fs) for _, t in yticks), default=10)
        left = 8 + (label_fs + 8 if p.ylabel else 0) + ylab_w + 8
        xaxis = Axis(p.xscale, xlo, xhi, left, right)
        xticks, xminor = xaxis.ticks(14, tick_fs, data_x if len(data_x) <= 16 else ())
        return yaxis, yticks, yminor, left, xaxis, xticks, xminor

    yaxis, yticks, yminor, left, xaxis, xticks, xminor = axes(ylo, yhi)

    # legend: a corner of the plot that covers no point, line or guide line; else make room for it
    # at the top of the plot; else put it below the plot
    entries = _legend_entries(series)
    row_h = legend_fs + 6
    lw = 30 + max((text_width(s.label, legend_fs) for s in entries), default=0) + 10
    lh = len(entries) * row_h + 8
    pad = 8
    legend_at: Optional[Tuple[float, float]] = None
    below_cols = 1

    def place(top_only: bool = False) -> Optional[Tuple[float, float]]:
        pts: List[Tuple[float, float]] = []
        for s in series:
            prev = None
            for x, y in zip(s.x, s.y):
                if not (_finite(x) and _finite(y)):
                    prev = None
                    continue
                cur = (xaxis.px(x), yaxis.px(y))
                pts.append(cur)
                if prev is not None:  # sample the segment
                    n = 2 + int(math.hypot(cur[0] - prev[0], cur[1] - prev[1]) / 4)
                    pts.extend((prev[0] + (cur[0] - prev[0]) * k / n, prev[1] + (cur[1] - prev[1]) * k / n)
                               for k in range(1, n))
                prev = cur
            if s.lo is not None and s.hi is not None:
                for x, y0, y1 in zip(s.x, s.lo, s.hi):
                    if _finite(x) and _finite(y0) and _finite(y1):
                        pts.append((xaxis.px(x), yaxis.px(y0)))
                        pts.append((xaxis.px(x), yaxis.px(y1)))
        for h in p.hlines:
            hy = yaxis.px(h.y)
            pts.extend((left + (right - left) * k / 80, hy) for k in range(81))
        if lw > (right - left) - 2 * pad or lh > (plot_bottom - top) - 2 * pad:
            return None
        cands = [(right - pad - lw, top + pad), (left + pad, top + pad), ((left + right - lw) / 2, top + pad)]
        if not top_only:
            mid = (top + plot_bottom - lh) / 2
            cands += [(right - pad - lw, plot_bottom - pad - lh), (left + pad, plot_bottom - pad - lh),
                      ((left + right - lw) / 2, plot_bottom - pad - lh), (left + pad, mid), (right - pad - lw, mid)]
        m = 8  # a marker's radius and a little air around the box
        for cx, cy in cands:
            if not any(cx - m <= px_ <= cx + lw + m and cy - m <= py_ <= cy + lh + m for px_, py_ in pts):
                return cx, cy
        return None

    if entries:
        legend_at = place()
        room = (lh + 2 * pad + 4) / (plot_bottom - top)
        if legend_at is None and room < 0.45:
            # stretch the y range upwards so the data sits under the legend
            t0, t1 = yaxis.t0, yaxis.t1
            t1 = t0 + (t1 - t0) / (1 - room)
            yhi2 = t1 if p.yscale == "linear" else 10 ** t1
            yaxis, yticks, yminor, left, xaxis, xticks, xminor = axes(ylo, yhi2)
            legend_at = place(top_only=True)
            if legend_at is None:
                yaxis, yticks, yminor, left, xaxis, xticks, xminor = axes(ylo, yhi)
        if legend_at is None:  # below the x axis label, in as many columns as fit
            below_cols = max(1, min(len(entries), int((W - 20) // lw)))
            height += math.ceil(len(entries) / below_cols) * row_h + 10

    out: List[str] = []
    a = out.append
    a(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height:.0f}" '
      f'viewBox="0 0 {W} {height:.0f}" font-family="{FONT}" font-size="{tick_fs:g}">')
    if p.title:
        a(f"<title>{escape(p.title.replace(chr(10), ' - '))}</title>")
    a(f'<rect width="{W}" height="{height:.0f}" fill="#ffffff"/>')
    pw, ph = right - left, plot_bottom - top
    a(f'<defs><clipPath id="plot-area"><rect x="{left:.1f}" y="{top:.1f}" width="{pw:.1f}" height="{ph:.1f}"/></clipPath></defs>')

    # every grid line and tick mark: (on the x axis?, pixel, major?), minor ones first (drawn under)
    marks = ([(True, xaxis.px(v), False) for v in xminor] + [(False, yaxis.px(v), False) for v in yminor]
             + [(True, xaxis.px(v), True) for v, _ in xticks] + [(False, yaxis.px(v), True) for v, _ in yticks])

    # grid: minor faint, major a bit stronger
    grid = []
    for on_x, q, major in marks:
        stroke = "#d8d8d8" if major else "#eeeeee"
        if on_x:
            grid.append(f'<line x1="{q:.1f}" y1="{top:.1f}" x2="{q:.1f}" y2="{plot_bottom:.1f}" stroke="{stroke}"/>')
        else:
            grid.append(f'<line x1="{left:.1f}" y1="{q:.1f}" x2="{right:.1f}" y2="{q:.1f}" stroke="{stroke}"/>')
    a('<g stroke-width="1">' + "".join(grid) + "</g>")

    # guide lines under the data
    for h in p.hlines:
        y = yaxis.px(h.y)
        if top - 0.5 <= y <= plot_bottom + 0.5:
            a(f'<line x1="{left:.1f}" y1="{y:.1f}" x2="{right:.1f}" y2="{y:.1f}" stroke="{h.color}" '
              f'stroke-width="{h.width:g}"{_dash(h.dash)}/>')

    # data
    a('<g clip-path="url(#plot-area)">')
    for s in series:
        pts = [(xaxis.px(x), yaxis.px(y)) for x, y in zip(s.x, s.y) if _finite(x) and _finite(y)]
        if s.lo is not None and s.hi is not None:
            bars = []
            for x, y0, y1 in zip(s.x, s.lo, s.hi):
                if not (_finite(x) and _finite(y0) and _finite(y1)):
                    continue
                X, Y0, Y1 = xaxis.px(x), yaxis.px(y0), yaxis.px(y1)
                bars.append(f"M{X:.1f},{Y0:.1f}V{Y1:.1f}M{X - 3:.1f},{Y0:.1f}h6M{X - 3:.1f},{Y1:.1f}h6")
            if bars:
                a(f'<path d="{"".join(bars)}" stroke="{s.color}" stroke-width="1.1" fill="none"/>')
        if len(pts) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            a(f'<polyline points="{d}" fill="none" stroke="{s.color}" stroke-width="{s.width:g}" '
              f'stroke-linejoin="round"{_dash(s.dash)}/>')
        if s.marker:
            a("".join(_marker(s.marker, x, y, s.color) for x, y in pts))
    a("</g>")

    # frame, ticks, tick labels
    a(f'<rect x="{left:.1f}" y="{top:.1f}" width="{pw:.1f}" height="{ph:.1f}" fill="none" stroke="#333333" stroke-width="1"/>')
    tk = []
    for on_x, q, major in marks:
        length = 5 if major else 2.5
        tk.append(f"M{q:.1f},{plot_bottom:.1f}v{length:g}" if on_x else f"M{left:.1f},{q:.1f}h-{length:g}")
    a(f'<path d="{"".join(tk)}" stroke="#333333" stroke-width="1"/>')
    lab = []
    for v, t in xticks:
        lab.append(f'<text x="{xaxis.px(v):.1f}" y="{plot_bottom + 7 + tick_fs:.1f}" text-anchor="middle">{escape(t)}</text>')
    for v, t in yticks:
        lab.append(f'<text x="{left - 8:.1f}" y="{yaxis.px(v) + tick_fs * 0.35:.1f}" text-anchor="end">{escape(t)}</text>')
    a('<g fill="#222222">' + "".join(lab) + "</g>")

    # axis labels and title
    if p.xlabel:
        a(f'<text x="{(left + right) / 2:.1f}" y="{plot_bottom + 7 + tick_fs + 8 + label_fs:.1f}" '
          f'text-anchor="middle" font-size="{label_fs:g}">{escape(p.xlabel)}</text>')
    if p.ylabel:
        cx, cy = 8 + label_fs, (top + plot_bottom) / 2
        a(f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="middle" font-size="{label_fs:g}" '
          f'transform="rotate(-90 {cx:.1f} {cy:.1f})">{escape(p.ylabel)}</text>')
    for i, ln in enumerate(title_lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        a(f'<text x="{(left + right) / 2:.1f}" y="{10 + title_fs + i * (title_fs + 5):.1f}" text-anchor="middle" '
          f'font-size="{title_fs:g}"{weight}>{escape(ln)}</text>')

    # legend
    if entries:
        def entry(s: Series, x: float, y: float) -> str:
            mid = y + row_h / 2
            parts = [f'<line x1="{x:.1f}" y1="{mid:.1f}" x2="{x + 24:.1f}" y2="{mid:.1f}" stroke="{s.color}" '
                     f'stroke-width="{s.width:g}"{_dash(s.dash)}/>']
            if s.marker:
                parts.append(_marker(s.marker, x + 12, mid, s.color))
            parts.append(f'<text x="{x + 30:.1f}" y="{mid + legend_fs * 0.36:.1f}">{escape(s.label)}</text>')
            return "".join(parts)

        g = [f'<g font-size="{legend_fs:g}" fill="#222222">']
        if legend_at is not None:
            lx, ly = legend_at
            g.append(f'<rect x="{lx:.1f}" y="{ly:.1f}" width="{lw:.1f}" height="{lh:.1f}" rx="3" '
                     f'fill="#ffffff" fill-opacity="0.9" stroke="#cccccc"/>')
            for i, s in enumerate(entries):
                g.append(entry(s, lx + 6, ly + 4 + i * row_h))
        else:
            y0 = plot_bottom + bottom_axis + 2
            total_w = below_cols * lw
            x0 = max(10.0, (W - total_w) / 2)
            for i, s in enumerate(entries):
                r, c = divmod(i, below_cols)
                g.append(entry(s, x0 + c * lw, y0 + r * row_h))
        g.append("</g>")
        a("".join(g))
    a("</svg>\n")
    return "\n".join(out)
