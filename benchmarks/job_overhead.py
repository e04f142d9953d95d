"""Wall time of one job of each rule, run as the rule runs it: the per-job cost of the workflow's
entry points (Python start, imports, the job server's fork), apart from Snakemake's own.

    python benchmarks/job_overhead.py [--repo DIR] [--repeat N]

Runs the pipeline once on a small dataset (tests/pipeline/harness.py: one definition, two
solutions, three workloads) in a temporary directory, takes each rule's shell command from a
forced dry run (`-n -F -p`), and runs one command per rule N times: with no job server (a
cluster job, or FIB_BUILD_ZYGOTE=0) and with one running (a local run: the Snakefile's onstart
starts it). CPU time (the job's processes, and the server's fork) says more than wall time on a
loaded machine; the benchmark job's evaluation runs in the worker, outside both. `--repo` measures another checkout of the project (its package comes first on the
path), so two versions compare on the same machine.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict


def commands(repo: Path, work: Path, cfg: Path, env: Dict[str, str]) -> Dict[str, str]:
    """One shell command per rule, from a forced dry run."""
    p = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(work),
                        "--configfile", str(cfg), "--cores", "2", "-n", "-F", "-p"], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(p.stdout[-3000:] + p.stderr[-3000:])
    out: Dict[str, str] = {}
    rule = None
    for line in p.stdout.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):", line)
        if m:
            rule = m.group(1)
        elif rule and line.startswith("Shell command: "):
            out.setdefault(rule, line[len("Shell command: "):])
            rule = None
    return out


def _server_children_cpu(zygote_dir: Path) -> float:
    """CPU seconds of the job server's finished forks (its cutime + cstime), 0 when none runs."""
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            if any(str(zygote_dir).encode() in c for c in cmd) and b"--socket" in cmd:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            continue
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    repo = Path(args.repo).resolve()
    sys.path.insert(0, str(repo))
    from tests.pipeline.harness import write_dataset

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        ds = write_dataset(tmp)
        work = tmp / "work"
        work.mkdir()
        cfg = work / "cfg.json"
        cfg.write_text(json.dumps({"dataset": str(ds), "results": "results", "device": "cpu", "cache_dir": str(tmp / "cache")}))
        env = {**os.environ, "PYTHONPATH": str(repo), "FIB_ZYGOTE_DIR": str(tmp / "zygote"), "FIB_WORKER_DIR": str(tmp / "workers")}
        p = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(work),
                            "--configfile", str(cfg), "--cores", "2"], capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise SystemExit(p.stdout[-3000:] + p.stderr[-3000:])
        cmds = commands(repo, work, cfg, env)
        # what the Snakefile puts in the jobs' environment (rules that name $FIB_RUN_*)
        env.update(FIB_RUN_PYTHON=sys.executable, FIB_RUN_SCRIPTS=str(repo / "scripts"), FIB_RUN_DATASET=str(ds),
                   FIB_RUN_CACHE=str(tmp / "cache"))
        rows = []
        for served in (False, True):
            run_env = {**env, "FIB_BUILD_ZYGOTE": "1" if served else "0"}
            if served:  # start the job server as onstart does, and wait for it
                subprocess.run([sys.executable, "-c", "from flashinfer_bench.pipeline import job_server as j\n"
                                "from flashinfer_bench.compile import zygote as z\nimport time\nj.turn_on()\n"
                                "while z.connect(z.socket_path(), 0.5) is None: time.sleep(0.2)\n"],
                               env={**run_env, "FIB_BUILD_ZYGOTE": ""}, check=True, timeout=300)
                time.sleep(3)  # its preload of the jobs' modules
            for rule in ("validate_definition", "compile", "benchmark", "aggregate", "report"):
                if rule not in cmds:
                    continue
                times, cpus = [], []
                for _ in range(args.repeat):
                    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    s0 = _server_children_cpu(tmp / "zygote")
                    t0 = time.perf_counter()
                    r = subprocess.run(["bash", "-c", cmds[rule]], cwd=work, env=run_env, capture_output=True, text=True)
                    times.append(time.perf_counter() - t0)
                    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpus.append(c1.ru_utime - c0.ru_utime + c1.ru_stime - c0.ru_stime + _server_children_cpu(tmp / "zygote") - s0)
                    if r.returncode != 0:
                        raise SystemExit(f"{rule} failed:\n{cmds[rule]}\n{r.stderr[-3000:]}")
                rows.append((rule, "job server" if served else "no job server", statistics.median(times), statistics.median(cpus)))
    print(f"\n{'rule':22s} {'how':16s} {'wall s':>8s} {'CPU s':>8s}   ({repo}, median of {args.repeat})")
    for rule, how, t, c in rows:
        print(f"{rule:22s} {how:16s} {t:8.3f} {c:8.3f}")


if __name__ == "__main__":
    main()
