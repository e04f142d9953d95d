"""Where a pipeline run's fixed start-up time goes, on the machine it runs on.

    python benchmarks/startup_profile.py [--dataset shared/anchor-dataset] [--device cuda]

Prints: the wall time of `python -c pass`, `snakemake --version`, `flashinfer-bench --help` and a
dry run of the anchor dataset; the slowest imports of Snakemake (python -X importtime); and the
functions with the most cumulative time in the dry run (cProfile inside Snakemake's process).
"""
from __future__ import annotations

import argparse
import io
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wall(cmd, **kw) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t0


def slowest_imports(cmd, n: int = 15) -> str:
    r = subprocess.run([sys.executable, "-X", "importtime", *cmd], capture_output=True, text=True)
    rows = []
    for line in r.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            parts = [p.strip() for p in line[len("import time:"):].split("|")]
            try:
                rows.append((int(parts[1]), parts[2]))
            except ValueError:
                continue
    rows.sort(reverse=True)
    top = [f"  {us / 1e6:6.2f} s  {name}" for us, name in rows if not name.startswith(" " * 6)][:n]
    return "\n".join(top)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", type=Path, default=REPO / "shared/anchor-dataset")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fib-startup-"))
    ds = tmp / "ds"
    shutil.copytree(args.dataset, ds, ignore=shutil.ignore_patterns("traces"))
    cfg = tmp / "cfg.yaml"
    cfg.write_text(f"dataset: {ds}\nresults: {tmp / 'results'}\ndevice: {args.device}\n")
    smk = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "4",
           "--configfile", str(cfg), "--dry-run", "--quiet"]
    print("wall times (s):")
    for label, cmd in (
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("import torch", [sys.executable, "-c", "import torch"]),
        ("snakemake --version", [sys.executable, "-m", "snakemake", "--version"]),
        ("flashinfer-bench --help", [sys.executable, "-m", "flashinfer_bench", "--help"]),
        ("snakemake dry run (anchor)", smk),
        ("snakemake dry run (anchor), again", smk),
    ):
        print(f"  {wall(cmd, cwd=tmp):6.2f}  {label}")
    print("\nslowest imports of `snakemake --version` (cumulative):")
    print(slowest_imports(["-m", "snakemake", "--version"]))
    print("\ndry run under cProfile (top 30 by cumulative time):")
    prof = tmp / "dry.prof"
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "snakemake", *smk[3:]],
                   cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if prof.exists():
        out = io.StringIO()
        pstats.Stats(str(prof), stream=out).sort_stats("cumulative").print_stats(30)
        print("\n".join(out.getvalue().splitlines()[:60]))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
