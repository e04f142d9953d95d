"""Plots for one (definition, hardware) group, drawn with matplotlib: latency, speedup and share of
peak bandwidth against the batch axis (the definition's first var axis), one line per solution.

matplotlib is imported here on first use only (`_mpl`), never by `import flashinfer_bench.report`
(nor by a report whose plots all come from its PlotCache): its import costs ~0.3 s, which the text
reports do not need. No pyplot and no global backend: each plot is a `Figure` printed by the SVG
backend (`print_svg`: FigureCanvasSVG's steps with a renderer that keeps text measurements), so
nothing here changes the backend of a notebook that imports us, and nothing opens a window. Each
plot is a standalone SVG document (UTF-8 bytes, text kept as text, stable ids: the same data gives
the same bytes); None where there is nothing to plot.

Drawing cost is kept at ~15 ms of CPU a plot (the report stage's budget is under 1 s warm): one
template figure per pair of scales, fixed axes rectangle (no tight_layout), tick positions chosen
here (the data's batch sizes; 1-2-5 on log y) with plain-number labels (no mathtext), grid and tick
marks as line collections and labels as texts instead of the axes' Tick artists, legend entries
placed to the right of the axes instead of a packed Legend box, text measured once per process. A report re-run draws only
the groups whose rows changed (PlotCache), in a child beside the page's tables where a core is
idle (Drawing).
"""
from __future__ import annotations

import io
import math
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .units import LATENCY_UNIT_HTML, shorten

MARKERS = "os^Dvp*hX<>"
PLOT_KINDS = ("latency", "speedup", "peak_bw")
EXT = "svg"
MIME = "image/svg+xml"
COLUMNS = ("workload", "workload_label", "solution", "batch", "batch_axis", "timed", "latency_ms",
           "latency_ms_p10", "latency_ms_p90", "reference_latency_ms", "speedup", "pct_of_peak_bw")
SIZE_IN = (6.4, 4.0)  # inches at 72 pt each: 460.8 x 288 pt, ~614 x 384 CSS px
RC = {
    "svg.fonttype": "none",  # text as <text>: searchable, smaller, and half the drawing time of glyph paths
    "svg.hashsalt": "flashinfer-bench",  # ids from a fixed salt: same data, same bytes
    "font.size": 9.0,
    "axes.titlesize": 9.5,
    "legend.fontsize": 7.5,
    "axes.linewidth": 0.8,
    "lines.linewidth": 1.6,
    "lines.markersize": 5.0,
}
GRID_COLOR = "#d8dde3"
TICK_PT = 3.5  # tick marks' length, outward
LEGEND_STEP_PT = 12.0  # the legend's entries apart (7.5 pt text)
LEGEND_CHARS = 26  # longer solution names are shortened in the legend (tables have them in full)
MAX_XTICKS = 9

Row = Mapping[str, Any]
Rows = Union[Sequence[Row], Any]  # records, or a DataFrame with the COLUMNS

_MPL: Dict[str, Any] = {}


def _mpl() -> Dict[str, Any]:
    """matplotlib's pieces, imported on first use."""
    if not _MPL:
        import matplotlib
        from matplotlib import ticker
        from matplotlib.backends.backend_mixed import MixedModeRenderer
        from matplotlib.backends.backend_svg import FigureCanvasSVG, RendererSVG
        from matplotlib.figure import Figure
        from matplotlib.collections import LineCollection
        from matplotlib.lines import Line2D

        class Renderer(RendererSVG):
            """RendererSVG that keeps its text measurements for the process. matplotlib keeps them
            per renderer, and each SVG document has a renderer of its own: every plot measured
            its ~20 texts again (FreeType lays each one out), 22% of its drawing time here
            (26 -> 20 ms a plot). The same numbers, so the same bytes."""

            sizes: Dict[tuple, Any] = {}

            def get_text_width_height_descent(self, s: str, prop: Any, ismath: Any) -> Any:
                key = (s, hash(prop), ismath)  # FontProperties hash (and compare) by their properties
                size = self.sizes.get(key)
                if size is None:
                    if len(self.sizes) > 20000:
                        self.sizes.clear()
                    size = self.sizes[key] = super().get_text_width_height_descent(s, prop, ismath)
                return size

        _MPL.update(matplotlib=matplotlib, Figure=Figure, Canvas=FigureCanvasSVG, ticker=ticker,
                    Renderer=Renderer, Mixed=MixedModeRenderer, Line2D=Line2D, LineCollection=LineCollection,
                    colors=matplotlib.colormaps["tab10"].colors)
    return _MPL


def print_svg(fig: Any) -> bytes:
    """The figure as an SVG document: the steps of FigureCanvasSVG.print_svg (matplotlib 3.7 to
    3.11) with the Renderer above, which print_svg cannot be given (tests/report/test_plots.py
    checks the bytes are print_svg's)."""
    m = _mpl()
    buf = io.StringIO()  # text: no UTF-8 codec writer between the renderer and the buffer
    dpi = fig.dpi
    fig.dpi = 72  # SVG is in points (print_svg leaves the figure at 72 too)
    w, h = fig.get_size_inches()
    renderer = m["Mixed"](fig, w, h, dpi, m["Renderer"](w * 72, h * 72, buf, image_dpi=dpi, metadata={"Date": None}))
    fig.draw(renderer)
    renderer.finalize()
    return buf.getvalue().encode("utf-8")


def unavailable() -> str:
    """Why no plot can be drawn here ("" when matplotlib imports)."""
    try:
        _mpl()
    except ImportError as e:
        return f"plots need matplotlib ({e}): pip install 'flashinfer-bench[report]'"
    return ""


def records(sub: Rows) -> List[Row]:
    """The rows of a traces frame (or of a slice of one) as plain dicts with the plotted columns."""
    if hasattr(sub, "columns"):
        from .frame import rows_of

        return rows_of(sub, [c for c in COLUMNS if c in sub.columns])
    return list(sub)


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _ok(v: Any) -> bool:
    return math.isfinite(_num(v))


def fmt_tick(v: float) -> str:
    """A tick label: plain digits, no float noise (0.30000000000000004 -> 0.3), no mathtext;
    powers of two from 2^17 on as 2¹⁷; other large or tiny numbers as 2.5e7."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 131072 and float(v).is_integer() and (int(a) & (int(a) - 1)) == 0:
        return ("-" if v < 0 else "") + "2" + str(int(a).bit_length() - 1).translate(SUPERSCRIPT)
    if 1e-4 <= a < 1e7:
        s = f"{v:.6g}"
        if "e" not in s:
            return s
        return f"{v:.10f}".rstrip("0").rstrip(".")
    m, e = f"{v:.3g}".split("e")
    return f"{m}e{int(e)}"


SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _x(rows: Sequence[Row]) -> Tuple[Dict[Any, float], str]:
    """x per workload and the axis label: the batch axis when every row has one, else the
    workload's rank by label."""
    axis = rows[0].get("batch_axis") if rows else ""
    if axis and isinstance(axis, str) and all(_ok(r.get("batch")) for r in rows):
        return {r["workload"]: _num(r["batch"]) for r in rows}, axis
    order: Dict[Any, float] = {}
    for r in sorted(rows, key=lambda r: str(r.get("workload_label"))):
        order.setdefault(r["workload"], float(len(order)))
    return order, "workload #"


def _log_x(xs: Dict[Any, float], label: str) -> bool:
    vals = list(xs.values())
    return label != "workload #" and all(v > 0 for v in vals) and len(set(vals)) > 1


def _x_ticks(values: Iterable[float], log: bool) -> List[float]:
    """The data's own x values (batch sizes) when few; else every k-th power of two (log) or an
    even thinning of them, so labels never collide."""
    vals = sorted(set(values))
    if len(vals) <= MAX_XTICKS:
        return vals
    if log:
        lo, hi = math.floor(math.log2(vals[0])), math.ceil(math.log2(vals[-1]))
        step = max(1, math.ceil((hi - lo) / (MAX_XTICKS - 1)))
        return [2.0 ** k for k in range(lo, hi + 1, step)]
    step = math.ceil(len(vals) / MAX_XTICKS)
    return vals[::step]


def _log_ticks(lo: float, hi: float) -> List[float]:
    """Log-axis ticks inside [lo, hi] only (a locator's out-of-view ticks cost a Tick each):
    1-2-5 per decade over up to two decades, 1 per decade (thinned to <= 8) over more."""
    k0, k1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for subs in ((1.0, 2.0, 5.0), (1.0, 3.0), (1.0,)):
        ticks = [m * 10.0 ** k for k in range(k0, k1 + 1) for m in subs if lo <= m * 10.0 ** k <= hi]
        if len(ticks) <= 8:
            break
    step = max(1, math.ceil(len(ticks) / 8))
    ticks = ticks[::step]
    if len(ticks) < 2:  # under one 1-2-5 step: the ends of the range
        ticks = sorted({float(f"{lo * 1.1:.2g}"), float(f"{hi / 1.1:.2g}")})
    return ticks


def _series(rows: Sequence[Row], xs: Dict[Any, float], col: str, scale: float = 1.0) -> List[Tuple[str, List[Row], List[float], List[float]]]:
    """(solution, rows, x, y) per solution sorted by name, points sorted by x."""
    by_sol: Dict[str, List[Row]] = {}
    for r in rows:
        by_sol.setdefault(str(r["solution"]), []).append(r)
    out = []
    for sol in sorted(by_sol):
        g = sorted((r for r in by_sol[sol] if _ok(r.get(col))), key=lambda r: xs[r["workload"]])
        if g:
            out.append((sol, g, [xs[r["workload"]] for r in g], [_num(r[col]) * scale for r in g]))
    return out


def _median(vals: Iterable[float]) -> float:
    v = sorted(x for x in vals if _ok(x))
    if not v:
        return math.nan
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


AXES_RECT = (0.12, 0.13, 0.54, 0.72)  # left, bottom, width, height (figure fractions): legend on the right
_TEMPLATES: Dict[tuple, Dict[str, Any]] = {}


def _template(xlog: bool, ylog: bool) -> Dict[str, Any]:
    """A figure with its axes, scales, formatters, labels' places and title texts, made once per
    (x scale, y scale) and reused: creating the axes and their ticks is a third of a plot's time,
    and placing the axis labels by measuring the tick labels another quarter."""
    key = (xlog, ylog)
    t = _TEMPLATES.get(key)
    if t is None:
        m = _mpl()
        fig = m["Figure"](figsize=SIZE_IN)
        ax = fig.add_axes(AXES_RECT)
        if xlog:
            ax.set_xscale("log", base=2)
        if ylog:
            ax.set_yscale("log")
        fmt = m["ticker"].FuncFormatter(lambda v, _pos: fmt_tick(v))
        for axis in (ax.xaxis, ax.yaxis):  # the ticks are _Canvas._ticks' artists
            axis.set_major_formatter(fmt)
            axis.set_major_locator(m["ticker"].NullLocator())
            axis.set_minor_locator(m["ticker"].NullLocator())
        ax.xaxis.set_label_coords(0.5, -0.1)  # fixed places: no tick label measured to place them
        title = fig.text(0.01, 0.985, "", ha="left", va="top", fontsize=9.5, fontweight="bold")
        subtitle = fig.text(0.01, 0.925, "", ha="left", va="top", fontsize=9)
        t = _TEMPLATES[key] = {"fig": fig, "ax": ax, "title": title, "subtitle": subtitle, "canvas": m["Canvas"](fig)}
    return t


class _Canvas:
    """One plot drawn on a reused template figure: one axes at a fixed place, legend to its right."""

    def __init__(self, title: str, subtitle: str, xlog: bool, ylog: bool):
        m = _mpl()
        self.m = m
        self.ctx = m["matplotlib"].rc_context(RC)
        self.ctx.__enter__()
        try:
            self.t = _template(xlog, ylog)
            self.fig, self.ax = self.t["fig"], self.t["ax"]
            for artist in (*self.ax.lines, *self.ax.collections, *self.ax.texts):
                artist.remove()
            self.ax.set_autoscale_on(True)
            self.t["title"].set_text(shorten(title, 95))
            self.t["subtitle"].set_text(subtitle)
        except BaseException:
            self.ctx.__exit__(None, None, None)
            raise
        self.xlog = xlog
        self.n = 0

    def line(self, label: str, x: Sequence[float], y: Sequence[float], **kw: Any) -> Any:
        colors = self.m["colors"]
        kw.setdefault("color", colors[self.n % len(colors)])
        kw.setdefault("marker", MARKERS[self.n % len(MARKERS)])
        self.n += 1
        return self.ax.plot(x, y, label=shorten(label, LEGEND_CHARS), **kw)[0]

    def axes(self, xs: Dict[Any, float], xlabel: str, ylabel: str, ylog: bool, ylim: Optional[Tuple[float, float]] = None,
             yvalues: Sequence[float] = ()) -> None:
        ax = self.ax
        ax.relim()
        ax.autoscale_view()
        xticks = _x_ticks(xs.values(), self.xlog)
        if self.xlog:
            lo, hi = min(xs.values()), max(xs.values())
            ax.set_xlim(lo / 1.3, hi * 1.3)
        ys = [v for v in yvalues if math.isfinite(v) and (v > 0 or not ylog)]
        yticks: Optional[List[float]] = None
        if ylog and ys:
            lo, hi = min(ys) / 1.25, max(ys) * 1.25
            ax.set_ylim(lo, hi)
            yticks = _log_ticks(lo, hi)
        if ylim:
            ax.set_ylim(*ylim)
        ylo, yhi = ax.get_ylim()
        if yticks is None:
            yticks = list(self.m["ticker"].MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]).tick_values(ylo, yhi))
        xlo, xhi = ax.get_xlim()
        xticks = [v for v in xticks if xlo <= v <= xhi]
        yticks = [v for v in yticks if min(ylo, yhi) <= v <= max(ylo, yhi)]
        self._ticks(xticks, yticks)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        # the y label clears the widest tick label (estimated from its characters: ~5.6 pt each at 9 pt)
        width_pt = SIZE_IN[0] * 72 * AXES_RECT[2]
        ax.yaxis.set_label_coords(-(10.0 + 5.6 * max((len(fmt_tick(v)) for v in yticks), default=1)) / width_pt, 0.5)

    def _ticks(self, xticks: Sequence[float], yticks: Sequence[float]) -> None:
        """Grid lines, tick marks and tick labels as two line collections and one text a tick
        (`<g id="xtick_N">` in the SVG, as matplotlib names its own), where the axes' own ticks
        drew five artists a tick and measured every label: 55-70% of a plot's drawing time."""
        ax = self.ax
        w_pt, h_pt = SIZE_IN[0] * 72 * AXES_RECT[2], SIZE_IN[1] * 72 * AXES_RECT[3]
        bx, by = ax.get_xaxis_transform(), ax.get_yaxis_transform()  # (data, axes) and (axes, data)
        Collection = self.m["LineCollection"]
        grid = dict(colors=GRID_COLOR, linewidths=0.6, zorder=0.5)
        ink = dict(colors="#000000", linewidths=0.8, zorder=2.5, clip_on=False)
        tx, ty = TICK_PT / h_pt, TICK_PT / w_pt
        ax.add_collection(Collection([[(x, 0.0), (x, 1.0)] for x in xticks], transform=bx, **grid), autolim=False)
        ax.add_collection(Collection([[(0.0, y), (1.0, y)] for y in yticks], transform=by, **grid), autolim=False)
        ax.add_collection(Collection([[(x, 0.0), (x, -tx)] for x in xticks], transform=bx, **ink), autolim=False)
        ax.add_collection(Collection([[(0.0, y), (-ty, y)] for y in yticks], transform=by, **ink), autolim=False)
        pad_x, pad_y = (TICK_PT + 3.5) / h_pt, (TICK_PT + 3.5) / w_pt
        for i, x in enumerate(xticks):
            ax.text(x, -pad_x, fmt_tick(x), transform=bx, ha="center", va="top", clip_on=False, gid=f"xtick_{i}")
        for i, y in enumerate(yticks):
            ax.text(-pad_y, y, fmt_tick(y), transform=by, ha="right", va="center_baseline", clip_on=False,
                    gid=f"ytick_{i}")

    def _key(self) -> None:
        """The legend to the right of the axes: a sample of each labelled line (its colour, style
        and marker) and its label, one entry per line of legend text, placed here instead of by
        matplotlib's Legend, whose box packing measured every entry again: 22% of the drawing time
        of a plot (0.32 of 1.48 s for the example dataset's 78 plots)."""
        Line2D = self.m["Line2D"]
        step = LEGEND_STEP_PT / (SIZE_IN[1] * 72 * AXES_RECT[3])  # axes fraction per entry
        for i, ln in enumerate(x for x in self.ax.lines if not str(x.get_label()).startswith("_")):
            y = 1.0 - (i + 0.5) * step
            sample = Line2D([1.03, 1.07, 1.11], [y, y, y], transform=self.ax.transAxes, clip_on=False,
                            color=ln.get_color(), linestyle=ln.get_linestyle(), linewidth=ln.get_linewidth(),
                            marker=ln.get_marker(), markevery=[1], markersize=ln.get_markersize())
            self.ax.add_line(sample)  # the next plot on this figure removes it with the other lines and texts
            self.ax.text(1.13, y, ln.get_label(), transform=self.ax.transAxes, va="center", ha="left",
                         fontsize=RC["legend.fontsize"], clip_on=False)

    def svg(self) -> bytes:
        try:
            if self.n:
                self._key()
            return print_svg(self.fig)
        finally:
            self.ctx.__exit__(None, None, None)


def latency_plot(sub: Rows, title: str) -> Optional[bytes]:
    """Median latency per solution (p10-p90 bars where recorded) and the reference, in µs."""
    rows = [r for r in records(sub) if r.get("timed")]
    if not rows:
        return None
    xs, label = _x(rows)
    scale = 1000.0  # ms -> µs
    ylog = all(_num(r.get(k)) > 0 for r in rows for k in ("latency_ms", "reference_latency_ms", "latency_ms_p10")
               if _ok(r.get(k)))
    c = _Canvas(title, f"latency ({LATENCY_UNIT_HTML}, median; bars: p10-p90)", _log_x(xs, label), ylog)
    ys: List[float] = []
    for sol, g, x, y in _series(rows, xs, "latency_ms", scale):
        ln = c.line(sol, x, y)
        ys += y
        lo = [_num(r.get("latency_ms_p10")) * scale for r in g]
        hi = [_num(r.get("latency_ms_p90")) * scale for r in g]
        bars = [(xx, min(a, yy), max(b, yy)) for xx, yy, a, b in zip(x, y, lo, hi) if math.isfinite(a) and math.isfinite(b)]
        if bars:
            c.ax.vlines([b[0] for b in bars], [b[1] for b in bars], [b[2] for b in bars], colors=[ln.get_color()], linewidth=1.0)
            ys += [b[1] for b in bars] + [b[2] for b in bars]
    ref: Dict[Any, List[float]] = {}
    for r in rows:
        ref.setdefault(r["workload"], []).append(_num(r.get("reference_latency_ms")))
    pts = sorted((xs[w], _median(v)) for w, v in ref.items())
    pts = [(x, y * scale) for x, y in pts if math.isfinite(x) and math.isfinite(y)]
    if pts:
        c.line("reference", [p[0] for p in pts], [p[1] for p in pts], color="#000000", marker="", linestyle="--", linewidth=1.2)
        ys += [p[1] for p in pts]
    c.axes(xs, label, f"latency ({LATENCY_UNIT_HTML})", ylog=ylog, yvalues=ys)
    return c.svg()


def speedup_plot(sub: Rows, title: str) -> Optional[bytes]:
    """Speedup over the definition's reference per solution; 1x marked."""
    rows = [r for r in records(sub) if r.get("timed") and _ok(r.get("speedup"))]
    if not rows:
        return None
    xs, label = _x(rows)
    sp = [_num(r["speedup"]) for r in rows]
    ylog = min(sp) > 0 and max(sp) / min(sp) > 20  # a 100x-slower interpreter run next to a real kernel
    c = _Canvas(title, "speedup over the reference (reference / solution; dashed: 1x)", _log_x(xs, label), ylog)
    for sol, _, x, y in _series(rows, xs, "speedup"):
        c.line(sol, x, y)
    c.ax.axhline(1.0, color="#000000", linestyle="--", linewidth=1.0)
    c.axes(xs, label, "speedup vs reference (x)", ylog=ylog, yvalues=sp + [1.0])
    return c.svg()


def peak_bw_plot(sub: Rows, title: str) -> Optional[bytes]:
    """Share of the device's peak DRAM bandwidth per solution; None when the peak is unknown."""
    rows = [r for r in records(sub) if r.get("timed") and _ok(r.get("pct_of_peak_bw"))]
    if not rows:
        return None
    xs, label = _x(rows)
    top = max(_num(r["pct_of_peak_bw"]) for r in rows)
    c = _Canvas(title, "share of peak DRAM bandwidth (dotted: 100%)", _log_x(xs, label), False)
    for sol, _, x, y in _series(rows, xs, "pct_of_peak_bw"):
        c.line(sol, x, y)
    c.ax.axhline(100.0, color="#d62728", linestyle=":", linewidth=1.4)
    c.axes(xs, label, "% of peak DRAM bandwidth", ylog=False, ylim=(0.0, max(105.0, top * 1.05)))
    return c.svg()


_VERSION: List[str] = []


def _version() -> str:
    """What a cached plot depends on besides its data: this module's and units.py's code and
    matplotlib's version (read from its installed metadata: a report whose plots all come from the
    cache never imports matplotlib)."""
    if not _VERSION:
        import hashlib
        from importlib import metadata
        from pathlib import Path

        try:
            mpl = metadata.version("matplotlib")
        except metadata.PackageNotFoundError:  # nothing is drawn then (unavailable() says why)
            mpl = ""
        h = hashlib.sha256(mpl.encode())
        for f in ("plots.py", "units.py"):
            h.update((Path(__file__).parent / f).read_bytes())
        _VERSION.append(h.hexdigest()[:16])
    return _VERSION[0]


_CODE: List[str] = []


def _code_version() -> str:
    """The report code and pandas version, for text() entries."""
    if not _CODE:
        import hashlib
        from importlib import metadata
        from pathlib import Path

        h = hashlib.sha256(metadata.version("pandas").encode())
        for f in sorted(Path(__file__).parent.glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
        _CODE.append(h.hexdigest()[:16])
    return _CODE[0]


class PlotCache:
    """Plots kept from the last report in a folder, keyed by what they are drawn from (the rows,
    the title, the plotting code): a re-run after one solution changed redraws the plots of its
    definition only. The page's sections of tables are kept the same way (text()). Entries this
    report did not use are removed when it is done (prune)."""

    def __init__(self, folder: Any):
        from pathlib import Path

        self.dir = Path(folder)
        self.used: set = set()
        self.hits = self.misses = 0  # plots
        self.text_hits = self.text_misses = 0  # text()

    def key(self, rows: Sequence[Row], title: str) -> str:
        import hashlib
        import json

        cols = [c for c in COLUMNS]
        data = [[r.get(c) for c in cols] for r in rows]
        blob = json.dumps([_version(), title, cols, data], default=str, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:32]

    def get(self, key: str) -> Optional[Dict[str, Optional[bytes]]]:
        marker = self.dir / f"{key}.json"
        if not marker.is_file():
            return None
        import json

        try:
            kinds = json.loads(marker.read_text())
            out = {k: ((self.dir / f"{key}.{k}.{EXT}").read_bytes() if kinds.get(k) else None) for k in PLOT_KINDS}
        except (OSError, ValueError):
            return None
        self.used.add(key)
        self.hits += 1
        return out

    def put(self, key: str, plots: Mapping[str, Optional[bytes]]) -> None:
        import json
        import os

        self.misses += 1
        self.used.add(key)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            for k, v in plots.items():
                if v is not None:
                    tmp = self.dir / f".{key}.{k}.{os.getpid()}.tmp"
                    tmp.write_bytes(v)
                    os.replace(tmp, self.dir / f"{key}.{k}.{EXT}")
            (self.dir / f"{key}.json").write_text(json.dumps({k: v is not None for k, v in plots.items()}))
        except OSError:
            pass  # a cache that cannot be written only costs the next report its time

    def text(self, parts: Any, make: Callable[[], str]) -> str:
        """make(), or what it returned in the last report for the same `parts`, which name
        everything it reads (a page section: its group and tables' rows), under the same report
        code (every module of flashinfer_bench/report) and pandas."""
        import hashlib
        import os

        # repr, not JSON: any cell value (a device's environment is a dict) gives the same text for
        # the same value; a value without a stable repr only costs a miss
        key = hashlib.sha256(repr([_code_version(), parts]).encode()).hexdigest()[:32]
        self.used.add(key)
        path = self.dir / f"{key}.html"
        try:
            out = path.read_text(encoding="utf-8")
            self.text_hits += 1
            return out
        except (OSError, ValueError):
            pass
        out = make()
        self.text_misses += 1
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp = self.dir / f".{key}.html.{os.getpid()}.tmp"
            tmp.write_text(out, encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass  # as in put()
        return out

    def prune(self) -> None:
        if not self.dir.is_dir():
            return
        for f in self.dir.iterdir():
            if f.name.split(".", 1)[0] not in self.used:
                try:
                    f.unlink()
                except OSError:
                    pass


PARALLEL_MIN_GROUPS = 16  # fewer groups to draw: one process (measured: 9 groups drew faster in one)
# at most one drawing process per this many groups: the example dataset on 3 devices (29 groups)
# on the H200 box's 16 cores took 1.58 s with 1 process, 0.74 with 2, 0.61 with 3, 0.60 with 4,
# 0.50 with 6 (2026-11-26); on 2 cores the cores bound it
GROUPS_PER_PROC = 5
MAX_PROCS = 8


def _cores() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _procs(n_groups: int) -> int:
    """Processes to draw `n_groups` groups' plots with: the usable cores (at most MAX_PROCS, at
    most one per GROUPS_PER_PROC groups), or FIB_REPORT_PLOT_PROCS; 1 without fork."""
    import os

    env = os.environ.get("FIB_REPORT_PLOT_PROCS", "").strip()
    if env.isdigit():
        return max(1, min(int(env), n_groups))
    if n_groups < PARALLEL_MIN_GROUPS or not hasattr(os, "fork"):
        return 1
    return max(1, min(_cores(), MAX_PROCS, n_groups // GROUPS_PER_PROC))


def _core_idle() -> bool:
    """Whether one drawing process should be a child beside the caller rather than the caller
    itself: where a core is idle (load average at least one below the usable cores), so that the
    plots cost no wall time; not on a busy machine, where a child only adds its own cost (~10%
    more CPU for the same plots: the fork, pages copied on write on both sides); never when
    FIB_REPORT_PLOT_PROCS says how many processes draw."""
    import os

    if os.environ.get("FIB_REPORT_PLOT_PROCS", "").strip() or not hasattr(os, "fork"):
        return False
    try:
        return _cores() - os.getloadavg()[0] >= 1.0
    except OSError:
        return False


def _warm_up() -> None:
    """Import matplotlib, load the fonts (one small plot) and make every template."""
    group_plots([{"workload": w, "workload_label": w, "solution": "s", "batch": float(b), "batch_axis": "b",
                  "timed": True, "latency_ms": 1.0, "reference_latency_ms": 1.0, "speedup": 1.0, "pct_of_peak_bw": 1.0}
                 for w, b in (("a", 1), ("b", 2))], "warm-up")
    with _mpl()["matplotlib"].rc_context(RC):
        for xlog in (True, False):
            for ylog in (True, False):
                _template(xlog, ylog)


def _draw_chunk(jobs: Sequence[Tuple[Sequence[Row], str]]) -> List[Dict[str, Optional[bytes]]]:
    return [group_plots(rows, title) for rows, title in jobs]


# a pool that cannot start or lost a child (a daemon process, limits): the plots are drawn here instead
_NO_CHILDREN = (OSError, RuntimeError, AssertionError, ImportError)


class Drawing:
    """The plots of `jobs` (rows, title), on their way: those in `cache` at once; the others drawn
    in child processes started here while the caller goes on (the report renders its tables
    meanwhile) when there are many (_procs) or when a core is idle (_core_idle), else by the
    caller in result(), which returns them all. matplotlib is imported only when a plot must be
    drawn; `why` says why none can be ("" when they can). A context manager: leaving it waits
    for the children."""

    def __init__(self, jobs: Sequence[Tuple[Sequence[Row], str]], cache: Optional[PlotCache] = None):
        self.jobs = [(records(rows), title) for rows, title in jobs]
        self.cache = cache
        self.out: List[Optional[Dict[str, Optional[bytes]]]] = [None] * len(self.jobs)
        self.keys: Dict[int, str] = {}
        self.todo: List[int] = []
        for i, (rows, title) in enumerate(self.jobs):
            if cache is not None:
                self.keys[i] = cache.key(rows, title)
                hit = cache.get(self.keys[i])
                if hit is not None:
                    self.out[i] = hit
                    continue
            self.todo.append(i)
        self.why = unavailable() if self.todo else ""
        self._pool: Any = None
        self._parts: List[Tuple[List[int], Any]] = []
        self._done = False
        procs = _procs(len(self.todo)) if self.todo and not self.why else 0
        if procs > 1 or (procs == 1 and _core_idle()):
            self._start(procs)

    def _start(self, procs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            if procs > 1:
                _warm_up()  # matplotlib imported, templates made and fonts loaded once here, not in every child
            self._pool = ProcessPoolExecutor(procs, mp_context=multiprocessing.get_context("fork"))
            for k in range(procs):
                chunk = self.todo[k::procs]
                self._parts.append((chunk, self._pool.submit(_draw_chunk, [self.jobs[i] for i in chunk])))
        except _NO_CHILDREN:
            self.close()
            self._parts = []

    def result(self) -> List[Dict[str, Optional[bytes]]]:
        """Every job's plots by kind, in order ({} for all of them when `why`)."""
        if self.why:
            return [{} for _ in self.jobs]
        if not self._done:
            drawn: Dict[int, Dict[str, Optional[bytes]]] = {}
            try:
                for chunk, future in self._parts:
                    drawn.update(zip(chunk, future.result()))
            except _NO_CHILDREN:
                drawn = {}
            finally:
                self.close()
            rest = [i for i in self.todo if i not in drawn]
            drawn.update(zip(rest, _draw_chunk([self.jobs[i] for i in rest])))
            for i in self.todo:
                self.out[i] = drawn[i]
                if self.cache is not None:
                    self.cache.put(self.keys[i], drawn[i])
            self._done = True
        return [r if r is not None else {} for r in self.out]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "Drawing":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def draw_groups(jobs: Sequence[Tuple[Sequence[Row], str]], cache: Optional[PlotCache] = None) -> List[Dict[str, Optional[bytes]]]:
    """group_plots for every (rows, title) of `jobs`, in order: from `cache` where it has them,
    the rest drawn in child processes (several when there are many: matplotlib draws on one core;
    a report of many definitions and devices spreads over the free ones). See Drawing."""
    with Drawing(jobs, cache) as d:
        return d.result()


def cached_group_plots(sub: Rows, title: str, cache: Optional[PlotCache] = None) -> Dict[str, Optional[bytes]]:
    """group_plots, from `cache` when the same rows were plotted before with the same code."""
    rows = records(sub)
    if cache is None:
        return group_plots(rows, title)
    key = cache.key(rows, title)
    hit = cache.get(key)
    if hit is not None:
        return hit
    out = group_plots(rows, title)
    cache.put(key, out)
    return out


def group_plots(sub: Rows, title: str) -> Dict[str, Optional[bytes]]:
    """All plots of one (definition, hardware) group, by kind; None where there is nothing to plot
    (fewer than two timed results: a plot of one point says nothing its table row does not)."""
    rows = records(sub)
    if sum(1 for r in rows if r.get("timed")) < 2:
        return {k: None for k in PLOT_KINDS}
    return {
        "latency": latency_plot(rows, title),
        "speedup": speedup_plot(rows, title),
        "peak_bw": peak_bw_plot(rows, title),
    }
