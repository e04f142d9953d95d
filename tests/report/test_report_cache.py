"""A report re-run into the folder of an earlier report (the pipeline's report stage) re-uses the
plots and the tables of every (definition, device) group whose traces did not change, and writes
exactly the report a fresh run would."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from flashinfer_bench.report import plots, write_report

from . import dataset as ds

CACHE = ".plot-cache"


def _files(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and CACHE not in p.parts}


def _keys(folder: Path) -> set:
    return {p.name.split(".")[0] for p in (folder / CACHE).iterdir()}


def _slow_down_one_trace(root: Path) -> tuple:
    """The first passed trace of the dataset 1.5x slower; its (definition, device)."""
    for f in sorted((root / "traces").rglob("*.jsonl")):
        lines = f.read_text().splitlines()
        for i, line in enumerate(lines):
            t = json.loads(line)
            perf = (t.get("evaluation") or {}).get("performance")
            if t["evaluation"]["status"] == "PASSED" and perf and perf.get("latency_ms"):
                perf["latency_ms"] *= 1.5
                perf["speedup_factor"] = perf["reference_latency_ms"] / perf["latency_ms"]
                lines[i] = json.dumps(t)
                f.write_text("\n".join(lines) + "\n")
                return t["definition"], t["evaluation"]["environment"]["hardware"]
    raise AssertionError("no passed trace in the test dataset")


def test_rerun_after_a_change_is_the_fresh_report_and_redoes_one_group(tmp_path):
    root = tmp_path / "dataset"
    ds.build().to_path(root)
    rerun = tmp_path / "rerun"
    write_report(root, rerun)
    before = _keys(rerun)
    write_report(root, rerun)  # nothing changed: every entry used again, none added
    assert _keys(rerun) == before

    _slow_down_one_trace(root)
    write_report(root, rerun)
    fresh = tmp_path / "fresh"
    write_report(root, fresh)
    assert _files(rerun) == _files(fresh)  # page, plots, tables, CSVs: byte for byte
    after = _keys(rerun)
    # the changed group's plots and tables were made again; the old entries of it are gone
    assert len(after - before) == 2 and len(before - after) == 2


def test_report_whose_plots_all_come_from_the_cache_does_not_import_matplotlib(small_dataset_dir, tmp_path):
    write_report(small_dataset_dir, tmp_path)
    code = (
        "import sys\n"
        "from flashinfer_bench.report import write_report\n"
        f"write_report({str(small_dataset_dir)!r}, {str(tmp_path)!r})\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported with every plot in the cache'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert list((tmp_path / "plots").glob("*.svg"))


def test_plots_drawn_beside_the_caller_are_the_plots_drawn_by_it(monkeypatch):
    """Where a core is idle one child draws while the report renders its tables: same plots."""
    jobs = [(_rows(k), f"group {k}") for k in range(3)]
    monkeypatch.setenv("FIB_REPORT_PLOT_PROCS", "1")
    here = plots.draw_groups(jobs)
    monkeypatch.delenv("FIB_REPORT_PLOT_PROCS")
    monkeypatch.setattr(plots, "_core_idle", lambda: True)
    with plots.Drawing(jobs) as drawing:
        assert drawing._pool is not None  # a child draws them
        assert drawing.result() == here


def _rows(k: int) -> list:
    return [dict(workload=f"w{b}", workload_label=f"b{b}", solution=sol, batch=float(b), batch_axis="batch_size",
                 timed=True, latency_ms=0.01 * (1 + j + k) * b, latency_ms_p10=None, latency_ms_p90=None,
                 reference_latency_ms=0.02 * b, speedup=2.0 / (1 + j + k), pct_of_peak_bw=10.0 * b)
            for j, sol in enumerate(("a", "b")) for b in (1, 8, 64)]
