"""Speed of the pipeline's report stage (`scripts/report.py`, before that `job_main.py report`:
summary.txt, index.html, plots, tables, CSVs) on generated traces. Prints a table: case, traces,
devices, and per mode wall seconds with the job's CPU seconds in parentheses (CPU time changes
less with other load on a shared machine).

    python benchmarks/report_speed.py [--cases tests,example,example3,hw50k] [--repeat 3] [--timeout 600]
                                      [--modes cold,warm,warm+mpl,rerun,changed] [--src DIR]

Cases (every dataset is written to a temporary directory; nothing here touches dataset/):
  tests     the report tests' dataset (tests/report/dataset.py): 4 definitions, 3 devices
  example   the example dataset's definitions, solutions and workloads (dataset/) with one trace
            per (solution, workload) on one device (every 17th failed): the size of a CPU run of it
  example3  the same on three devices (H100, H200, CPU)
  hw50k     50,000 traces over the example dataset's pairs, every trace on a device of its own
            name (issue 17: "did not finish in 11 minutes")

Modes:
  cold      `python -S scripts/report.py ...` in a fresh process, as the rule runs it without the
            job server (imports included)
  warm      the same job in a child forked from a process that imported what the job server
            preloads (`pipeline/job_server.py: PRELOAD`; older trees: the build zygote's list), as
            a local run does
  warm+mpl  warm with report.warm (matplotlib drawn once) preloaded as well (the same as warm once
            the job server preloads it)
  rerun     warm+mpl into the folder of an earlier report of the same traces: the pipeline's
            re-run, unchanged plots come from the report's plot cache
  changed   rerun after a few traces changed: before each run the latency of one passed trace
            in each of CHANGED definitions (their first device) is scaled by 1.1 or back, so each
            run redraws those (definition, device) groups and takes the rest from the cache
Medians of --repeat runs (hw50k: one run each). A run over --timeout prints "> T".

--src DIR measures another source tree (e.g. `git archive <commit> | tar -x -C DIR`, for a
before/after table): its job script runs, and its package comes first on the path.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

REPO = Path(__file__).resolve().parents[1]
SRC = REPO  # the source tree measured (--src)
sys.path.insert(0, str(REPO))

H100, H200, CPU = "NVIDIA H100 80GB HBM3", "NVIDIA H200", "CPU Intel(R) Xeon(R) Platinum 8480+"


def _trace(definition: str, solution: str, workload: dict, hw: str, lat: float, ref: float, rng: random.Random) -> dict:
    spread = rng.uniform(0.01, 0.06)
    return {
        "definition": definition, "workload": workload, "solution": solution,
        "evaluation": {
            "status": "PASSED", "log": "", "timestamp": "2026-11-23T12:00:00.000000Z",
            "environment": {"hardware": hw, "libs": {"torch": "2.13.0"}},
            "correctness": {"max_relative_error": 1e-3, "max_absolute_error": 2e-4,
                            "extra": {"samples": 50, "latency_ms_p10": lat * (1 - spread),
                                      "latency_ms_p90": lat * (1 + spread), "iqr_ms": lat * spread,
                                      "rel_iqr": spread, "noisy": False}},
            "performance": {"latency_ms": lat, "reference_latency_ms": ref, "speedup_factor": ref / lat},
        },
    }


def _failed(definition: str, solution: str, workload: dict, hw: str, status: str) -> dict:
    ev = {"status": status, "log": "error: something went wrong\n" * 3,
          "timestamp": "2026-11-23T12:00:00.000000Z", "environment": {"hardware": hw, "libs": {}}}
    if status == "INCORRECT_NUMERICAL":
        ev["correctness"] = {"max_relative_error": 0.5, "max_absolute_error": 3.0}
    return {"definition": definition, "workload": workload, "solution": solution, "evaluation": ev}


def _example_pairs(root: Path) -> List[tuple]:
    """Copy dataset/'s definitions, solutions and workloads to root; every (definition, solution,
    workload) triple, as (definition, op_type, solution, workload dict)."""
    src = REPO / "dataset"
    for sub in ("definitions", "solutions", "workloads"):
        shutil.copytree(src / sub, root / sub)
    defs = {}
    for f in sorted((root / "definitions").rglob("*.json")):
        d = json.loads(f.read_text())
        defs[d["name"]] = d["op_type"]
    sols = {}
    for f in sorted((root / "solutions").rglob("*.json")):
        s = json.loads(f.read_text())
        sols.setdefault(s["definition"], []).append(s["name"])
    pairs = []
    for f in sorted((root / "workloads").rglob("*.jsonl")):
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            w = json.loads(line)
            for s in sols.get(w["definition"], []):
                pairs.append((w["definition"], defs.get(w["definition"], "unknown"), s, w["workload"]))
    return pairs


def _write_traces(root: Path, traces: List[dict], op_types: dict) -> None:
    by_def: dict = {}
    for t in traces:
        by_def.setdefault(t["definition"], []).append(t)
    for d, ts in by_def.items():
        p = root / "traces" / op_types.get(d, "unknown") / f"{d}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(t) + "\n" for t in ts))


def example_dataset(root: Path, devices: List[str], n_traces: Optional[int] = None, seed: int = 0) -> int:
    """The example dataset with generated traces: every pair once per device, or (n_traces) the
    pairs cycled until n_traces traces, each on a device of its own name. Returns the count."""
    rng = random.Random(seed)
    pairs = _example_pairs(root)
    op_types = {d: op for d, op, _, _ in pairs}
    ref_of = {}
    traces = []
    if n_traces is None:
        jobs = [(p, hw) for hw in devices for p in pairs]
    else:
        jobs = [(pairs[i % len(pairs)], f"GPU model {i:05d} (node {i // 8:04d})") for i in range(n_traces)]
    for i, ((d, _, s, w), hw) in enumerate(jobs):
        ref = ref_of.setdefault((d, w["uuid"], hw), rng.uniform(0.005, 2.0))
        if i % 17 == 5:
            traces.append(_failed(d, s, w, hw, "INCORRECT_NUMERICAL" if i % 2 else "RUNTIME_ERROR"))
            continue
        lat = ref / rng.choice([0.004, 0.3, 0.9, 1.0, 1.1, 2.5, 8.0]) * rng.uniform(0.9, 1.1)
        traces.append(_trace(d, s, w, hw, lat, ref, rng))
    _write_traces(root, traces, op_types)
    return len(traces)


def tests_dataset(root: Path) -> int:
    from tests.report import dataset as ds

    ts = ds.build()
    ts.to_path(root)
    return sum(1 for t in ts.all_traces() if not t.is_workload)


def _job(root: Path, out: Path) -> tuple:
    """(script, argv) of the report stage as the workflow's rule runs it: scripts/report.py (the
    rule's entry since the job scripts moved there), else pipeline/job_main.py report."""
    notes = out / "notes.json"
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text(json.dumps({"skipped": [
        {"definition": "x", "solution": "y", "workload": "z", "reason": "CUDA solution needs a GPU"}], "problems": [],
        "by_file": {}}))
    script = SRC / "scripts" / "report.py"
    if script.is_file():
        return script, ["--dataset", str(root), "--plan-notes", str(notes), "--summary-out", str(out / "report/summary.txt"),
                        "--html-out", str(out / "report/index.html"), "--log", str(out / "report.log"),
                        "--save-results", "True"]
    return SRC / "flashinfer_bench/pipeline/job_main.py", [
        "report", "--dataset", str(root), "--plan-notes", str(notes), "--summary", str(out / "report/summary.txt"),
        "--html", str(out / "report/index.html"), "--log", str(out / "report.log"), "--save-results", "True"]


CHANGED = 3  # definitions with one changed trace each (mode changed)


def _flip(root: Path, k: int) -> None:
    """Change one passed trace in each of the first CHANGED trace files that have two passed
    traces on one device: latency x1.1 on even k, back on odd k (the file's other lines verbatim)."""
    done = 0
    for f in sorted((root / "traces").rglob("*.jsonl")):
        lines = f.read_text().splitlines()
        passed = [i for i, x in enumerate(lines) if '"PASSED"' in x]
        if len(passed) < 2:
            continue
        i = passed[0]
        t = json.loads(lines[i])
        perf = t["evaluation"]["performance"]
        perf["latency_ms"] *= 1.1 if k % 2 == 0 else 1 / 1.1
        perf["speedup_factor"] = perf["reference_latency_ms"] / perf["latency_ms"]
        lines[i] = json.dumps(t)
        f.write_text("\n".join(lines) + "\n")
        done += 1
        if done == CHANGED:
            return


def _cpu_children() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cold(root: Path, out: Path, timeout: float) -> Optional[tuple]:
    env = {k: v for k, v in os.environ.items() if k != "FIB_BUILD_ZYGOTE"}
    env["FIB_BUILD_ZYGOTE"] = "0"
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    c0 = _cpu_children()
    t0 = time.perf_counter()
    try:
        script, argv = _job(root, out)
        p = subprocess.run([sys.executable, "-S", str(script), *argv], capture_output=True, text=True, env=env,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-2000:] + p.stderr[-4000:])
        raise SystemExit("report job failed")
    return wall, _cpu_children() - c0


MPL = ("flashinfer_bench.report.warm", "matplotlib.figure", "matplotlib.backends.backend_svg")


def _preload(extra: tuple = ()) -> None:
    """What the job server imports for workflow jobs (and `extra`), loaded the way it does it."""
    import importlib

    try:
        from flashinfer_bench.pipeline.job_server import PRELOAD as names
    except ImportError:  # before the job server: the build zygote preloaded them
        names = ("flashinfer_bench.pipeline.jobs", "flashinfer_bench.compile.build", "pandas",
                 "flashinfer_bench.report.html")
    for name in (*names, *extra):
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def warm(root: Path, out: Path, timeout: float, extra: tuple = ()) -> Optional[tuple]:
    _preload(extra)
    script, argv = _job(root, out)
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the job server's child: run the job's script, exit with its status
        rc = 1
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            if script.name == "job_main.py":
                from flashinfer_bench.pipeline import job_main

                rc = job_main.main(argv)
            else:
                import runpy

                os.environ["FIB_JOB_SERVED"] = "1"  # what the server sets: the script runs on here
                sys.argv = [str(script), *argv]
                sys.path.insert(0, str(script.parent))
                runpy.run_path(str(script), run_name="__main__")
                rc = 0
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        finally:
            os._exit(rc)
    deadline = t0 + timeout
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.002)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("report job failed (warm)")
    return wall, usage.ru_utime + usage.ru_stime


def _median(xs: List[Optional[tuple]]) -> Optional[tuple]:
    """The run of median wall time, as (wall, cpu)."""
    if any(x is None for x in xs):
        return None
    return sorted(xs)[len(xs) // 2]


def _cell(x: Optional[tuple], timeout: float) -> str:
    """wall (cpu): CPU seconds of the job itself, which other load on the machine changes less."""
    return f"> {timeout:.0f}" if x is None else f"{x[0]:.2f} ({x[1]:.2f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="tests,example,example3,hw50k")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per report run")
    ap.add_argument("--keep", action="store_true", help="keep the generated datasets and reports (printed)")
    ap.add_argument("--modes", default="cold,warm,warm+mpl,rerun")
    ap.add_argument("--src", help="source tree to measure (default: this checkout)")
    a = ap.parse_args()
    global SRC
    if a.src:
        SRC = Path(a.src).resolve()
        sys.path.insert(0, str(SRC))
    for m in list(sys.modules):
        if m == "flashinfer_bench" or m.startswith("flashinfer_bench."):
            del sys.modules[m]
    modes = a.modes.split(",")
    builders = {
        "tests": (tests_dataset, "3"),
        "example": (lambda r: example_dataset(r, [CPU]), "1"),
        "example3": (lambda r: example_dataset(r, [H100, H200, CPU]), "3"),
        "hw50k": (lambda r: example_dataset(r, [], n_traces=50_000), "50,000"),
    }
    rows = {}
    base = Path(tempfile.mkdtemp(prefix="fib-report-speed-"))
    try:
        cases = []
        for case in a.cases.split(","):
            build, devices = builders[case]
            root = base / case / "dataset"
            root.mkdir(parents=True)
            n = build(root)
            cases.append((case, root, n))
            rows[case] = [case, f"{n:,}", devices]
        # every case's warm runs before matplotlib is imported here (warm+mpl forks after it)
        for mode in modes:
            for case, root, n in cases:
                reps = 1 if n > 10_000 else a.repeat
                if mode == "cold":
                    t = _median([cold(root, base / case / f"cold{i}", a.timeout) for i in range(reps)])
                elif mode == "rerun":  # the report folder of an earlier report of the same traces
                    warm(root, base / case / "rerun", a.timeout, MPL)
                    t = _median([warm(root, base / case / "rerun", a.timeout, MPL) for i in range(reps)])
                elif mode == "changed":  # the same, after a few traces changed before each run
                    warm(root, base / case / "changed", a.timeout, MPL)
                    runs = []
                    for i in range(reps):
                        _flip(root, i)
                        runs.append(warm(root, base / case / "changed", a.timeout, MPL))
                    if reps % 2:
                        _flip(root, reps)  # the traces as they were, for the modes after this one
                    t = _median(runs)
                else:
                    extra = MPL if mode == "warm+mpl" else ()
                    t = _median([warm(root, base / case / f"{mode}{i}", a.timeout, extra) for i in range(reps)])
                rows[case].append(_cell(t, a.timeout))
                print(f"  {case}: {n} traces, {mode} {_cell(t, a.timeout)} s", file=sys.stderr)
    finally:
        if a.keep:
            print(f"kept: {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    head = ("case", "traces", "devices", *(f"{m} s (cpu s)" for m in modes))
    rows = list(rows.values())
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print("  ".join(h.ljust(w) if i < 1 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        print("  ".join(str(x).ljust(w) if i < 1 else str(x).rjust(w) for i, (x, w) in enumerate(zip(r, widths))))


if __name__ == "__main__":
    main()
