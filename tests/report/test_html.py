"""The HTML report: one self-contained file, plots inlined, sections per definition and device,
failures folded, environment per device, skipped workloads; plus the separate assets."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from . import dataset as ds



class Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))


@pytest.fixture(scope="module")
def page(html_report):
    return html_report.read_text(encoding="utf-8")


def test_written_where_asked(html_report):
    assert html_report.name == "index.html" and html_report.stat().st_size > 10_000


def test_self_contained(page):
    p = Collect()
    p.feed(page)
    for tag, a in p.attrs:
        for key in ("src", "href"):
            v = a.get(key)
            if v is not None:
                assert v.startswith(("data:", "#")), (tag, key, v[:80])
    assert "<link" not in page and "@import" not in page and "http://" not in page and "https://" not in page
    assert p.tags.count("script") == 1


def test_plots_inlined_one_set_per_definition_and_device(page):
    imgs = re.findall(r'<img alt="([^"]+)" src="data:image/svg\+xml;base64,', page)
    assert f"rmsnorm_h4096 on {ds.H100}: latency" in imgs
    for hw in (ds.H100, ds.H200, ds.CPU):
        assert f"rmsnorm_h4096 on {hw}: speedup" in imgs
    assert f"rmsnorm_h4096 on {ds.H200}: peak_bw" in imgs  # datasheet peak
    assert f"rmsnorm_h4096 on {ds.CPU}: peak_bw" not in imgs  # unknown peak: said in words instead
    assert "the device&#x27;s peak bandwidth is unknown" in page


def test_sections_and_sortable_tables(page):
    for anchor in ("summary", "def-rmsnorm_h4096", "def-gemm_n256_k256", "failures", "skipped", "environment", "notes"):
        assert f'id="{anchor}"' in page
    assert page.count('class="sortable"') >= 10
    assert "tie (within noise)" in page and "geomean vs baseline" in page


def test_failures_folded_with_escaped_logs(page):
    fails = re.findall(r"<details><summary>(.*?)</summary><pre>(.*?)</pre></details>", page, re.S)
    assert any("COMPILE_ERROR" in s and "__shfl_sync_x" in log for s, log in fails)
    assert "&lt;b&gt;not html&lt;/b&gt;" in page and "<b>not html</b>" not in page
    assert any("TIMEOUT" in s for s, _ in fails) and any("PASSED, no latency" in s for s, _ in fails)


def test_environment_per_device(page):
    env = page.split('id="environment"')[1].split("</section>")[0]
    for hw in (ds.H100, ds.H200, ds.CPU):
        assert f"<h3>{hw}</h3>" in env.replace("(R)", "(R)")
    assert "sm_count" in env and "132" in env and "libs.torch" in env


def test_skipped_workloads_listed(page):
    sk = page.split('id="skipped"')[1].split("</section>")[0]
    assert "CUDA solution needs a GPU" in sk and "workload above the CPU size limit" in sk


def test_assets_for_snakemake(html_report):
    out = html_report.parent
    svgs = sorted(p.name for p in (out / "plots").glob("*.svg"))
    assert "rmsnorm_h4096__NVIDIA_H100_80GB_HBM3__latency.svg" in svgs
    for n in svgs:  # standalone, well-formed SVG documents
        root = ET.fromstring((out / "plots" / n).read_bytes())
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and float(root.get("width").rstrip("pt")) > 100
    assert not list((out / "plots").glob("*.png"))
    for name in ("leaderboard", "best", "roofline"):
        t = (out / "tables" / f"{name}.html").read_text()
        assert t.startswith("<!DOCTYPE html>") and "<table" in t
    for name in ("leaderboard", "matrix", "best", "roofline", "counts"):
        assert (out / f"{name}.csv").read_text().count("\n") >= 2
    assert oct(html_report.stat().st_mode & 0o777) in ("0o644", "0o664", "0o666")


def test_stale_plots_are_removed(tmp_path, small_dataset_dir, html_report):
    import shutil

    from flashinfer_bench.report import write_report

    shutil.copytree(html_report.parent, tmp_path, dirs_exist_ok=True)
    (tmp_path / "plots" / "mine.svg").write_text("<svg/>")  # not ours: kept
    (tmp_path / "plots" / "mine.png").write_bytes(b"png")
    old_png = tmp_path / "plots" / "gemm_n256_k256__NVIDIA_H100_80GB_HBM3__latency.png"
    old_png.write_bytes(b"png")  # ours, from before plots were SVG: removed
    write_report(small_dataset_dir, tmp_path)
    names = {p.name for p in (tmp_path / "plots").iterdir()}
    assert {"mine.svg", "mine.png"} <= names and not any(n.startswith("rmsnorm") for n in names)
    assert not old_png.exists() and any(n.startswith("gemm") and n.endswith(".svg") for n in names)
