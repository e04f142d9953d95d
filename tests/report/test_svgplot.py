"""The dependency-free SVG plots: well-formed standalone documents, escaped text, log axes with
plain-number ticks, guide lines, error bars; and the report never imports matplotlib."""
from __future__ import annotations

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from flashinfer_bench.report import plots, svgplot

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
    assert float(root.get("width")) >= 600 and float(root.get("height")) >= 400
    return root


def _texts(root: ET.Element) -> list:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def test_three_kinds_are_wellformed_svg_with_legend_and_title():
    out = plots.group_plots(_rows(), "rms on H100")
    assert set(out) == set(plots.PLOT_KINDS) and all(isinstance(v, bytes) for v in out.values())
    for kind, svg in out.items():
        texts = _texts(_parse(svg))
        assert "rms on H100" in texts and "triton_row" in texts and "torch_fn" in texts
        assert "batch_size" in texts


def test_log_axes_have_plain_number_ticks():
    root = _parse(plots.latency_plot(_rows(), "t"))
    texts = _texts(root)
    for label in ("1", "8", "64", "512", "4096"):  # x: the data's batch sizes
        assert label in texts
    assert not any(re.search(r"e[+-]?\d|\$", t) for t in texts)  # no 1e+03, no mathtext
    assert "latency (µs, median)" in texts  # every value under a millisecond: microseconds
    assert {"5", "10", "20", "50"} & set(texts)  # y: 1-2-5 ticks within the decades


def test_wide_batch_range_thins_labels_on_powers_of_two():
    batches = [2 ** k for k in range(0, 21)]
    root = _parse(plots.speedup_plot(_rows(batches=batches), "t"))
    rows = {}  # x tick labels: the row of centred texts with the most entries
    for t in root.iter(f"{NS}text"):
        if t.get("text-anchor") == "middle" and not t.get("transform"):
            rows.setdefault(t.get("y"), []).append(t.text)
    xs = max(rows.values(), key=len)
    assert 3 <= len(xs) <= 10 and xs[:3] == ["1", "8", "64"] and xs[-2:] == ["2¹⁸", "2²¹"], xs


def test_reference_dashed_guides_and_error_bars():
    lat = plots.latency_plot(_rows(), "t").decode()
    assert "reference" in lat and "stroke-dasharray" in lat
    assert lat.count("<polyline") == 3  # two solutions and the reference
    assert re.search(r'<path d="M[^"]*h6', lat)  # p10-p90 bars with caps
    sp = plots.speedup_plot(_rows(), "t").decode()
    assert re.search(r'<line [^>]*stroke="#000000"[^>]*stroke-dasharray', sp)  # 1x
    bw = plots.peak_bw_plot(_rows(), "t").decode()
    assert re.search(r'<line [^>]*stroke="#d62728"[^>]*stroke-dasharray', bw)  # 100%
    assert "100" in _texts(_parse(bw.encode()))


def test_distinct_colours_and_markers_per_solution():
    sols = [f"s{i}" for i in range(6)]
    svg = plots.speedup_plot(_rows(sols=sols), "t").decode()
    colours = set(re.findall(r'<polyline [^>]*stroke="(#[0-9a-f]{6})"', svg))
    assert len(colours) == 6


def test_text_is_escaped():
    nasty = 'a<b>&"c\'</text><script>x</script>'
    svg = plots.group_plots(_rows(sols=(nasty,)), "def <&> on 'hw'")
    for v in svg.values():
        root = _parse(v)
        assert nasty in _texts(root) and "def <&> on 'hw'" in _texts(root)
        assert not list(root.iter(f"{NS}script"))


def test_odd_data_does_not_break_plots():
    assert plots.group_plots([], "t") == {"latency": None, "speedup": None, "peak_bw": None}
    one = _rows(batches=(16,), sols=("a",))
    assert all(v is not None for v in plots.group_plots(one, "t").values())
    nan = _rows(pct_of_peak_bw=math.nan, latency_ms_p10=math.nan)
    out = plots.group_plots(nan, "t")
    assert out["peak_bw"] is None and out["latency"] is not None
    no_axis = _rows(batch=math.nan, batch_axis="")
    root = _parse(plots.latency_plot(no_axis, "t"))
    assert "workload #" in _texts(root)
    zero = _rows(latency_ms=0.0)
    _parse(plots.latency_plot(zero, "t"))  # linear y: no log of zero


@pytest.mark.parametrize("v,s", [(4096.0, "4096"), (0.5, "0.5"), (0.1 + 0.2, "0.3"), (1e-5, "1e-5"),
                                 (0.0, "0"), (65536.0, "65536"), (2.5e7, "2.5e7")])
def test_tick_number_format(v, s):
    assert svgplot.fmt_num(v) == s


def test_report_does_not_import_matplotlib(small_dataset_dir, tmp_path):
    code = (
        "import sys, time\n"
        "t = time.perf_counter()\n"
        "import flashinfer_bench.report as r\n"
        "assert 'pandas' not in sys.modules, 'pandas imported eagerly'\n"
        f"r.write_report({str(small_dataset_dir)!r}, {str(tmp_path)!r})\n"
        "assert 'matplotlib' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert list((tmp_path / "plots").glob("*.svg"))
