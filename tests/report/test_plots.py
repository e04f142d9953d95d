"""The report's plots (matplotlib, SVG backend): well-formed standalone documents with the text kept
as text, log axes with plain-number ticks, latency in µs, guide lines; matplotlib imported only
when a plot is drawn, and no global backend or pyplot state touched."""
from __future__ import annotations

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from flashinfer_bench.report import plots

NS = "{http://www.w3.org/2000/svg}"


def _rows(sols=("triton_row", "torch_fn"), batches=(1, 8, 64, 512, 4096), **over):
    out = []
    for j, sol in enumerate(sols):
        for b in batches:
            lat = 0.003 * (1 + j) * (1 + b / 512)
            r = dict(workload=f"w{b}", workload_label=f"b{b}", solution=sol, batch=float(b),
                     batch_axis="batch_size", timed=True, latency_ms=lat, latency_ms_p10=lat * 0.95,
                     latency_ms_p90=lat * 1.05, reference_latency_ms=0.03 * (1 + b / 512),
                     speedup=10.0 / (1 + j), pct_of_peak_bw=min(100.0, b / 40))
            r.update(over)
            out.append(r)
    return out


def _parse(svg: bytes) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg"
    assert float(root.get("width").rstrip("pt")) >= 400 and float(root.get("height").rstrip("pt")) >= 250
    return root


def _texts(root: ET.Element) -> list:
    return ["".join(t.itertext()).strip() for t in root.iter(f"{NS}text")]


def test_three_kinds_are_wellformed_svg_with_legend_and_title():
    out = plots.group_plots(_rows(), "rms on H100")
    assert set(out) == set(plots.PLOT_KINDS) and all(isinstance(v, bytes) for v in out.values())
    for kind, svg in out.items():
        texts = _texts(_parse(svg))
        assert "rms on H100" in texts and "triton_row" in texts and "torch_fn" in texts
        assert "batch_size" in texts
        assert "matplotlib" in svg.decode().lower()  # drawn by the library, not by hand


def test_log_axes_have_plain_number_ticks_and_latency_in_microseconds():
    root = _parse(plots.latency_plot(_rows(), "t"))
    texts = _texts(root)
    assert _ticks(root, "x") == ["1", "8", "64", "512", "4096"]  # x: the data's batch sizes
    assert not any(re.search(r"e[+-]?\d|\$", t) for t in texts)  # no 1e+03, no mathtext
    assert "latency (µs)" in texts  # one unit everywhere: microseconds
    assert {"5", "10", "20", "50"} <= set(_ticks(root, "y"))  # y: 1-2-5 ticks within the decades


def _ticks(root: ET.Element, axis: str) -> list:
    """The tick labels of one axis (matplotlib groups each tick as <g id="xtick_N">)."""
    return [t for g in root.iter(f"{NS}g") if (g.get("id") or "").startswith(f"{axis}tick_") for t in _texts(g) if t]


def test_wide_batch_range_thins_labels_on_powers_of_two():
    batches = [2 ** k for k in range(0, 21)]
    xs = _ticks(_parse(plots.speedup_plot(_rows(batches=batches), "t")), "x")
    assert 3 <= len(xs) <= 9 and xs[:3] == ["1", "8", "64"] and xs[-1] == "2¹⁸", xs  # every third power of two


def test_reference_dashed_guides_and_error_bars():
    lat = plots.latency_plot(_rows(), "t").decode()
    assert "reference" in lat and "stroke-dasharray" in lat
    assert lat.count('id="LineCollection_') >= 2  # p10-p90 bars of both solutions
    sp = plots.speedup_plot(_rows(), "t").decode()
    assert re.search(r"stroke-dasharray[^\"]*\"[^>]*>", sp) or "stroke-dasharray" in sp  # 1x guide
    bw = plots.peak_bw_plot(_rows(), "t").decode()
    assert "#d62728" in bw and "stroke-dasharray" in bw  # 100% guide
    assert "100" in _texts(_parse(bw.encode()))


def test_distinct_colours_and_markers_per_solution():
    sols = [f"s{i}" for i in range(6)]
    svg = plots.speedup_plot(_rows(sols=sols), "t").decode()
    colours = set(re.findall(r"stroke: (#[0-9a-f]{6}); stroke-width: 1\.6", svg))
    assert len(colours) == 6, colours


def test_text_is_escaped():
    nasty = 'a<b>&"c\'</text><script>x</script>'
    svg = plots.group_plots(_rows(sols=(nasty,)), "def <&> on 'hw'")
    for v in svg.values():
        root = _parse(v)
        texts = _texts(root)
        assert any("a<b>&" in t for t in texts) and "def <&> on 'hw'" in texts
        assert not list(root.iter(f"{NS}script"))


def test_same_data_same_bytes():
    assert plots.latency_plot(_rows(), "t") == plots.latency_plot(_rows(), "t")


def test_plots_are_the_bytes_of_matplotlibs_own_svg_printer():
    """plots.print_svg (a renderer that keeps text measurements) prints what print_svg prints."""
    import io

    import matplotlib

    # the figure each plot was drawn on, by its (log x, log y): the figure still holds that plot
    for kind, scales in (("latency_plot", (True, True)), ("speedup_plot", (True, False)), ("peak_bw_plot", (True, False))):
        mine = getattr(plots, kind)(_rows(), "t")
        fig = plots._TEMPLATES[scales]["fig"]
        buf = io.BytesIO()
        with matplotlib.rc_context(plots.RC):
            fig.canvas.print_svg(buf, metadata={"Date": None})
        assert buf.getvalue() == mine


def test_odd_data_does_not_break_plots():
    assert plots.group_plots([], "t") == {"latency": None, "speedup": None, "peak_bw": None}
    one = _rows(batches=(16,), sols=("a",))  # one point: nothing a plot adds to its table row
    assert plots.group_plots(one, "t") == {"latency": None, "speedup": None, "peak_bw": None}
    two = _rows(batches=(16,), sols=("a", "b"))  # two solutions at one batch size: compared
    assert all(v is not None for v in plots.group_plots(two, "t").values())
    nan = _rows(pct_of_peak_bw=math.nan, latency_ms_p10=math.nan)
    out = plots.group_plots(nan, "t")
    assert out["peak_bw"] is None and out["latency"] is not None
    no_axis = _rows(batch=math.nan, batch_axis="")
    root = _parse(plots.latency_plot(no_axis, "t"))
    assert "workload #" in _texts(root)
    zero = _rows(latency_ms=0.0)
    _parse(plots.latency_plot(zero, "t"))  # linear y: no log of zero


@pytest.mark.parametrize("v,s", [(4096.0, "4096"), (0.5, "0.5"), (0.1 + 0.2, "0.3"), (1e-5, "1e-5"),
                                 (0.0, "0"), (65536.0, "65536"), (2.5e7, "2.5e7"), (262144.0, "2¹⁸")])
def test_tick_number_format(v, s):
    assert plots.fmt_tick(v) == s


def test_matplotlib_only_where_plots_are_made(small_dataset_dir, tmp_path):
    """`import flashinfer_bench.report` and the text reports import neither pandas up front nor
    matplotlib at all; the HTML report imports matplotlib without pyplot and leaves the backend
    as it was."""
    code = (
        "import sys\n"
        "import flashinfer_bench.report as r\n"
        "assert 'pandas' not in sys.modules, 'pandas imported eagerly'\n"
        f"s = r.summarize(r.load_paths([{str(small_dataset_dir)!r}]))\n"
        "r.render_command(s, 'summary', 'text')\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported by a text report'\n"
        f"r.write_report({str(small_dataset_dir)!r}, {str(tmp_path)!r})\n"
        "assert 'matplotlib' in sys.modules and 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert list((tmp_path / "plots").glob("*.svg"))


def test_plot_cache_redraws_only_what_changed(tmp_path):
    """A report re-run keeps the plots whose rows did not change (same bytes) and redraws the
    others; entries the run did not use are removed."""
    cache = plots.PlotCache(tmp_path / "c")
    a, b = _rows(), _rows(sols=("x", "y"))
    first = [plots.cached_group_plots(r, "t", cache) for r in (a, b)]
    assert (cache.hits, cache.misses) == (0, 2)
    cache.prune()
    again = plots.PlotCache(tmp_path / "c")
    changed = _rows(sols=("x", "y"), latency_ms=0.5)
    second = [plots.cached_group_plots(r, "t", again) for r in (a, changed)]
    assert (again.hits, again.misses) == (1, 1)
    assert second[0] == first[0] and second[1]["latency"] != first[1]["latency"]
    again.prune()
    keys = {f.name.split(".")[0] for f in (tmp_path / "c").iterdir()}
    assert len(keys) == 2 and again.key(b, "t") not in keys


def test_many_groups_drawn_in_several_processes_give_the_same_plots(monkeypatch):
    jobs = [(_rows(sols=(f"s{k}", "t")), f"group {k}") for k in range(20)]
    monkeypatch.setenv("FIB_REPORT_PLOT_PROCS", "1")
    serial = plots.draw_groups(jobs)
    monkeypatch.setenv("FIB_REPORT_PLOT_PROCS", "3")
    assert plots._procs(len(jobs)) == 3
    assert plots.draw_groups(jobs) == serial
    monkeypatch.delenv("FIB_REPORT_PLOT_PROCS")
    assert plots._procs(9) == 1  # a few groups: no fork
