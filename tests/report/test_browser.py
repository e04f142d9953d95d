"""The HTML report in a real headless browser (Debian's chromium, driven over the DevTools
protocol): it renders, its plots load, its tables sort, it makes no request outside the file, and
the console stays clean. A screenshot is saved ($FIB_REPORT_SCREENSHOT_DIR keeps a copy).

Needs `apt-get install -y chromium`; skipped with that hint when it is absent."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from .cdp import Browser, find_chromium

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get update && apt-get install -y chromium)")

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def browser():
    with Browser(CHROMIUM) as b:
        yield b


def test_renders_without_console_errors(browser, html_report, tmp_path):
    browser.open(html_report.resolve().as_uri())
    assert browser.evaluate("document.title") == "FlashInfer-Bench report"
    assert browser.console_errors() == []
    # the page asked for nothing but itself and its inlined images
    schemes = {u.split(":", 1)[0] for u in browser.requested_urls()}
    assert schemes <= {"file", "data"}, browser.requested_urls()
    # every plot decoded to a real image
    sizes = browser.evaluate("Array.from(document.images).map(i => i.complete ? i.naturalWidth : 0)")
    assert sizes and all(w > 100 for w in sizes)
    # the script ran and wired every sortable table
    n = int(browser.evaluate("document.body.getAttribute('data-sortable-tables')"))
    assert n == browser.evaluate("document.querySelectorAll('table.sortable').length") > 5
    # the first plot is visible on screen somewhere in the page's layout
    assert browser.evaluate("document.images[0].getBoundingClientRect().height") > 100
    shot = tmp_path / "report.png"
    browser.evaluate("document.querySelector('section[id^=def-]').scrollIntoView()")
    browser.screenshot(str(shot))
    assert shot.read_bytes().startswith(PNG) and shot.stat().st_size > 20_000
    keep = os.environ.get("FIB_REPORT_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "report.png")


def test_clicking_a_header_sorts_numerically(browser, html_report):
    browser.open(html_report.resolve().as_uri())
    # the solutions table of the first definition section, by its geomean speedup
    js = """
    (() => {
      const t = document.querySelector('section[id^=def-] table.sortable');
      const ths = Array.from(t.tHead.rows[0].cells);
      const i = ths.findIndex(th => th.textContent.trim() === 'geomean vs ref');
      const col = () => Array.from(t.tBodies[0].rows).map(r => r.cells[i].getAttribute('data-sort'));
      ths[i].click(); const up = col(); const a1 = ths[i].getAttribute('aria-sort');
      ths[i].click(); const down = col(); const a2 = ths[i].getAttribute('aria-sort');
      return {up, down, a1, a2};
    })()
    """
    r = browser.evaluate(js)
    nums = lambda xs: [float(x) for x in xs if x not in (None, "")]
    assert r["a1"] == "ascending" and r["a2"] == "descending"
    assert nums(r["up"]) == sorted(nums(r["up"])) and nums(r["down"]) == sorted(nums(r["down"]), reverse=True)
    assert len(nums(r["up"])) >= 2
    assert browser.console_errors() == []


OVERFLOW_JS = """
(() => {
  const doc = document.documentElement;
  const boxes = Array.from(document.querySelectorAll('.scroll, pre, table, .plots, nav'));
  const wide = boxes.filter(b => b.scrollWidth > b.clientWidth + 1 && b.tagName !== 'PRE')
                    .map(b => b.tagName + ' ' + b.scrollWidth + '>' + b.clientWidth + ' after ' +
                         (b.previousElementSibling ? b.previousElementSibling.textContent.slice(0, 60) : ''));
  const right = Array.from(document.querySelectorAll('table, img, figure'))
                     .filter(e => e.getBoundingClientRect().right > doc.clientWidth + 1).length;
  return {page: doc.scrollWidth, view: doc.clientWidth, wide, right};
})()
"""


@pytest.mark.parametrize("which", ["test", "wide"])
def test_nothing_overflows_at_1400px(browser, html_report, tmp_path, which):
    """At a 1400 px wide window no table, plot or heading is wider than the page: long names
    and long lists of axes wrap inside their cells (the text report shortens them instead)."""
    from flashinfer_bench.report import write_report

    from . import dataset as ds

    if which == "wide":
        root = tmp_path / "ds"
        ds.wide().to_path(root)
        page = write_report(root, tmp_path / "h")
    else:
        page = html_report
    browser.open(page.resolve().as_uri(), width=1400)
    r = browser.evaluate(OVERFLOW_JS)
    assert r["page"] <= r["view"] and r["wide"] == [] and r["right"] == 0, r


def test_a_broken_page_is_caught(tmp_path):
    """The checker itself: a page with a script error and a console.error must be reported."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>console.error('boom'); undefinedFn();</script></body></html>")
    with Browser(CHROMIUM) as b:
        b.open(page.resolve().as_uri())
        errors = b.console_errors()
    assert any("boom" in e for e in errors) and any("undefinedFn" in e for e in errors)
