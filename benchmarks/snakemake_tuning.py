"""What each change to Snakemake's internals (flashinfer_bench/pipeline/snakemake_tuning.py) saves,
and what a Snakemake version costs, measured on the example dataset. Prints a table.

    python benchmarks/snakemake_tuning.py [--python PY ...] [--repeat 5] [--dag-jobs 10000]

For each Python (each with its own Snakemake; default: this one): `snakemake --version` (the
start-up floor) and one cold run of the example dataset (profiles/cpu; with --workdir only the
first time); then, in rounds that run every Snakemake with the tuning on, off and with one part
only (FIB_SNAKEMAKE_TUNING=0 / a part's name), so that the machine's drift hits all alike:
- no-op runs (checked: "Nothing to be done");
- report-only runs (results/report/summary.txt removed: one job runs, as after any edit);
- DAG construction of a synthetic dataset (`-n --quiet`, benchmarks/pipeline_cpu.py's).
Wall and CPU time (user+sys of Snakemake and the jobs it waited for): medians. The code measured
is the tree beside this script (PYTHONPATH): run a copy of the tree (`git archive HEAD`) while
others edit the evaluator, whose fingerprint re-runs benchmark jobs.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.pipeline_cpu import synthetic_dataset  # noqa: E402

# (label, FIB_SNAKEMAKE_TUNING value) compared in each scenario: "only X" against "off" is what X
# saves; "on" against "off" all of them
VARIANTS = {
    "no-op": [("tuning on", "1"), ("tuning off", "0"), ("only lazy pandas", "pandas")],
    "report-only": [("tuning on", "1"), ("tuning off", "0"), ("only timer cancel", "timers")],
    "dag": [("tuning on", "1"), ("tuning off", "0")],
}
Row = Tuple[str, str, str, float, float]  # snakemake, scenario, variant, wall, CPU
SCENARIOS = ("start", "first", *VARIANTS)


def run(cmd: List[str], env: Dict[str, str], cwd: Path, expect: str = "") -> Tuple[float, float]:
    """Wall and CPU seconds of one command (CPU: user+sys of it and the children it waited for)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = p.stdout + p.stderr
    if p.returncode != 0 or (expect and expect not in out):
        reasons = [line.strip() for line in out.splitlines() if "reason:" in line]
        print(out[-2000:], "\nfirst reasons:", *reasons[:5], sep="\n")
        raise SystemExit(f"failed or unexpected output ({expect!r}): {' '.join(cmd)}")
    return wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def snakemake_cmd(py: str, work: Path, cfg: Path, *extra: str) -> List[str]:
    return [py, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
            "--configfile", str(cfg), "--profile", str(REPO / "profiles/cpu"), *extra]


def describe(py: str) -> str:
    code = ("import importlib.util as u; from importlib.metadata import version; "
            "print(version('snakemake'), '+slurm plugin' if u.find_spec('snakemake_executor_plugin_slurm') else '', "
            "'sqlmodel' if u.find_spec('sqlmodel') else '')")
    return subprocess.run([py, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")[0].strip()


class Setup:
    """One Python's Snakemake, its run directories and its commands."""

    def __init__(self, py: str, tag: str, root: Path, args) -> None:
        self.py, self.label = py, describe(py)
        base = {k: v for k, v in os.environ.items() if k != "FIB_SNAKEMAKE_TUNING"}
        base["FIB_CACHE_PATH"] = str(root / "cache")  # shared by the Pythons: builds are reused
        # the code beside this script, also when it is a snapshot of the tree (others' edits of the
        # evaluator while this runs would re-run benchmark jobs: no no-op to measure)
        base["PYTHONPATH"] = str(REPO)
        self.base, self.root = base, root
        self.work = root / f"example-{tag}"
        ds = self.work / "dataset"
        if not ds.exists():
            shutil.copytree(args.dataset, ds, ignore=shutil.ignore_patterns("traces"))
        self.cfg = self.work / "cfg.json"
        self.cfg.write_text(json.dumps({"dataset": str(ds), "results": str(self.work / "results"), "device": "cpu"}))
        self.swork = root / f"synthetic-{tag}"
        self.swork.mkdir(exist_ok=True)
        self.scfg = self.swork / "cfg.json"
        self.scfg.write_text(json.dumps({"dataset": str(root / "synthetic"), "results": str(self.swork / "results"),
                                         "device": "cpu"}))

    def env(self, switch: str) -> Dict[str, str]:
        return {**self.base, "FIB_SNAKEMAKE_TUNING": switch}

    def example(self) -> List[str]:
        return snakemake_cmd(self.py, self.work, self.cfg)

    def dag(self) -> List[str]:
        return snakemake_cmd(self.py, self.swork, self.scfg, "--dry-run", "--quiet")


def series(setups: List[Setup], scenario: str, n: int, rows: List[Row]) -> None:
    """n rounds; each round runs every variant of every Snakemake once, so drift of the machine
    (other users of its cores) hits them all alike."""
    times: Dict[Tuple[str, str], List[Tuple[float, float]]] = {}
    for _ in range(n):
        for su in setups:
            for label, switch in VARIANTS[scenario]:
                if scenario == "no-op":
                    t = run(su.example(), su.env(switch), su.root, expect="Nothing to be done")
                elif scenario == "report-only":
                    (su.work / "results/report/summary.txt").unlink(missing_ok=True)
                    t = run(su.example(), su.env(switch), su.root, expect="rule report")
                else:
                    t = run(su.dag(), su.env(switch), su.root)
                times.setdefault((su.label, label), []).append(t)
    for su in setups:
        for label, _ in VARIANTS[scenario]:
            ts = times[su.label, label]
            rows.append((su.label, scenario, label, statistics.median(w for w, _ in ts),
                         statistics.median(c for _, c in ts)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", action="append", help="a Python with its own Snakemake (repeatable)")
    ap.add_argument("--dataset", type=Path, default=REPO / "dataset")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--dag-repeat", type=int, default=5)
    ap.add_argument("--dag-jobs", type=int, default=10000, help="benchmark jobs of the synthetic DAG (0: skip)")
    ap.add_argument("--workdir", type=Path, help="keep the runs here (default: a temporary directory)")
    args = ap.parse_args()
    pythons = args.python or [sys.executable]
    rows: List[Row] = []
    with tempfile.TemporaryDirectory(prefix="fib-smk-tuning-") as t:
        root = args.workdir or Path(t)
        root.mkdir(parents=True, exist_ok=True)
        if args.dag_jobs and not (root / "synthetic").exists():
            synthetic_dataset(root / "synthetic", n_defs=10, n_sols=10, n_wl=max(1, args.dag_jobs // 100))
        setups = [Setup(py, f"py{i}", root, args) for i, py in enumerate(pythons)]
        for su in setups:
            print(f"{su.py}: snakemake {su.label}", flush=True)
            ts = [run([su.py, "-m", "snakemake", "--version"], su.env("1"), root) for _ in range(args.repeat)]
            rows.append((su.label, "start", "snakemake --version", statistics.median(w for w, _ in ts),
                         statistics.median(c for _, c in ts)))
            w, c = run(su.example(), su.env("1"), root)
            rows.append((su.label, "first", "first run in the directory (cold once)", w, c))
        series(setups, "no-op", args.repeat, rows)
        series(setups, "report-only", args.repeat, rows)
        if args.dag_jobs:
            series(setups, "dag", args.dag_repeat, rows)
    print(f"\nmedians of {args.repeat} (DAG of {args.dag_jobs} benchmark jobs: {args.dag_repeat}); "
          "CPU = user+sys of Snakemake and the jobs it waited for\n")
    print("| snakemake | scenario | variant | wall s | CPU s |\n|---|---|---|---:|---:|")
    for row in sorted(rows, key=lambda r: ([su.label for su in setups].index(r[0]), list(SCENARIOS).index(r[1]))):
        print("| {} | {} | {} | {:.2f} | {:.2f} |".format(*row))


if __name__ == "__main__":
    main()
