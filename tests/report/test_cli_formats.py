"""Every `report` command in every output format, through the CLI."""
from __future__ import annotations

import io
import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from . import dataset as ds

COMMANDS = ("summary", "best", "roofline")


@pytest.mark.parametrize("command", COMMANDS)
def test_text_is_the_default(cli, dataset_dir, command):
    rc, out, err = cli("report", command, "--local", str(dataset_dir))
    assert rc == 0, err
    assert f"rmsnorm_h4096 on {ds.H100}" in out and f"rmsnorm_h4096 on {ds.CPU}" in out
    tables = out.split("\nNotes\n")[0]
    assert not re.search(r"\bnan\b", tables, re.I)  # missing numbers are blank, not "nan"


def test_summary_text_content(cli, dataset_dir):
    rc, out, _ = cli("report", "summary", "--local", str(dataset_dir))
    assert "Traces: 40 total, 34 passed, 6 failed" in out
    assert "COMPILE_ERROR" in out and "geomean" in out and "baseline" in out
    assert "4.10 us 5.00x" in out  # a matrix cell: latency in microseconds, speedup vs the reference


def test_best_text_names_ties(cli, dataset_dir):
    rc, out, _ = cli("report", "best", "--local", str(dataset_dir))
    assert "tie (within noise)" in out and "triton_twin" in out and "no spread recorded" in out


@pytest.mark.parametrize("command,table,columns", [
    ("summary", "", {"definition", "hardware", "solution", "wins", "geomean_speedup"}),
    ("summary", "matrix", {"workload_label", "status", "latency_ms", "speedup"}),
    ("summary", "counts", {"status", "all", ds.H100, ds.H200, ds.CPU}),
    ("best", "", {"winner", "verdict", "tie_with", "max_abs_error", "spread"}),
    ("roofline", "", {"achieved_gbps", "pct_of_peak_bw", "peak_source"}),
])
def test_csv(cli, dataset_dir, command, table, columns):
    args = ["report", command, "--local", str(dataset_dir), "--format", "csv"] + (["--table", table] if table else [])
    rc, out, err = cli(*args)
    assert rc == 0, err
    df = pd.read_csv(io.StringIO(out))
    assert columns <= set(df.columns) and len(df) > 0


@pytest.mark.parametrize("command", COMMANDS)
def test_json(cli, dataset_dir, command):
    rc, out, err = cli("report", command, "--local", str(dataset_dir), "--format", "json")
    assert rc == 0, err
    data = json.loads(out)  # strict JSON: NaN became null
    assert data["totals"]["traces"] == 40
    key = {"summary": "leaderboard", "best": "best", "roofline": "roofline"}[command]
    assert isinstance(data[key], list) and data[key]
    assert {r["hardware"] for r in data[key]} == {ds.H100, ds.H200, ds.CPU}


@pytest.mark.parametrize("command", COMMANDS)
def test_markdown(cli, dataset_dir, command):
    rc, out, err = cli("report", command, "--local", str(dataset_dir), "--format", "markdown")
    assert rc == 0, err
    assert out.startswith("# ") and "\n| " in out and "| --- |" in out


def test_output_file(cli, dataset_dir, tmp_path):
    target = tmp_path / "best.md"
    rc, out, _ = cli("report", "best", "--local", str(dataset_dir), "--format", "markdown", "--output", str(target))
    assert rc == 0 and target.read_text().startswith("# Best")


def test_unknown_table_is_a_message(cli, dataset_dir):
    rc, out, err = cli("report", "summary", "--local", str(dataset_dir), "--format", "csv", "--table", "nope")
    assert rc == 2 and "--table must be one of" in err and "Traceback" not in err


def test_bare_report_prints_help(cli):
    rc, out, _ = cli("report")
    assert rc == 2 and "summary" in out


def test_html_command(cli, small_dataset_dir, tmp_path):
    skipped = tmp_path / "skipped.json"
    skipped.write_text(json.dumps([{"definition": "d", "solution": "s", "workload": "w", "reason": "CUDA solution needs a GPU"}]))
    rc, out, err = cli("report", "html", "--local", str(small_dataset_dir), "--output", str(tmp_path / "rep"),
                       "--skipped", str(skipped), "--no-assets")
    assert rc == 0, err
    text = (tmp_path / "rep" / "index.html").read_text()
    assert "CUDA solution needs a GPU" in text and not (tmp_path / "rep" / "plots").exists()


def test_bad_skipped_file(cli, dataset_dir, tmp_path):
    bad = tmp_path / "skipped.json"
    bad.write_text('{"not": "a list"}')
    rc, _, err = cli("report", "html", "--local", str(dataset_dir), "--output", str(tmp_path / "r"), "--skipped", str(bad))
    assert rc == 1 and "expected a JSON list" in err


def test_console_script_smoke(dataset_dir):
    r = subprocess.run([sys.executable, "-m", "flashinfer_bench", "report", "summary", "--local", str(dataset_dir)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traces: 40 total" in r.stdout
