"""`flashinfer-bench run`: the Snakemake DAG over one or more datasets, with progress and a summary."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

DATASET_ERROR_EXIT = 3  # the run finished, but part of the dataset could not be benchmarked
ENVIRONMENT_ERROR_EXIT = 4  # the run finished, but this machine could not evaluate part of it


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="benchmark every (solution, workload) of a dataset through the Snakemake pipeline",
        description="Runs the same Snakemake DAG as `snakemake` in the repository: validate, compile, "
        "benchmark, aggregate into <dataset>/traces/, report. Incremental: only what changed re-runs.",
    )
    p.add_argument("--local", action="append", required=True, metavar="PATH", help="dataset directory (repeatable)")
    p.add_argument("--warmup-runs", type=int)
    p.add_argument("--iterations", type=int)
    p.add_argument("--num-trials", type=int)
    p.add_argument("--rtol", type=float)
    p.add_argument("--atol", type=float)
    p.add_argument("--timeout", type=float, help="seconds per (solution, workload) evaluation")
    p.add_argument("--device", choices=None, help="auto (default), cpu, cuda or cuda:N")
    p.add_argument("--definitions", nargs="+", metavar="NAME")
    p.add_argument("--solutions", nargs="+", metavar="NAME")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    p.add_argument("--gpus", type=int, help="GPUs to measure on, one benchmark at a time each (default: all visible GPUs)")
    p.add_argument("--gpu-lookahead", type=int, default=2, metavar="N",
                   help="benchmark jobs per GPU that wait, client started, while it measures another (default 2; "
                        "0 = Snakemake starts a job only when a GPU is free)")
    p.add_argument("--profile", help="a Snakemake profile directory, e.g. profiles/slurm")
    p.add_argument("--results", help="where per-job outputs and the report go (default ./results)")
    p.add_argument("--dry-run", action="store_true", help="show the jobs that would run")
    p.add_argument("--save-results", dest="save_results", action="store_true", default=True)
    p.add_argument("--no-save-results", dest="save_results", action="store_false")
    p.add_argument("--missing-blobs", choices=("error", "generate"),
                   help="a workload input whose safetensors file is missing: an error for that workload (default), "
                        "or drawn from the input's generator spec instead")
    p.add_argument("--ignore-dataset-errors", action="store_true",
                   help="exit 0 even when the dataset has errors (the good part is benchmarked either way)")
    p.add_argument("--log-level", default="INFO", help="DEBUG shows Snakemake's full output")
    p.add_argument("snakemake_args", nargs=argparse.REMAINDER, help="after --, passed to snakemake")
    p.set_defaults(func=run)


def _config_overrides(args: argparse.Namespace, dataset: Path, results: Path) -> dict:
    cfg = {"dataset": str(dataset), "results": str(results), "save_results": args.save_results}
    if args.device:
        cfg["device"] = args.device
    if args.definitions:
        cfg["definitions"] = args.definitions
    if args.solutions:
        cfg["solutions"] = args.solutions
    if getattr(args, "missing_blobs", None):
        cfg["missing_blobs"] = args.missing_blobs
    ev = {}
    for flag, key in (("warmup_runs", "warmup_runs"), ("iterations", "iterations"), ("num_trials", "num_trials"),
                      ("rtol", "rtol"), ("atol", "atol"), ("timeout", "timeout_s")):
        v = getattr(args, flag)
        if v is not None:
            ev[key] = v
    if ev:  # flags override the CPU settings too
        cfg["evaluation"] = ev
        cfg["cpu"] = {"evaluation": ev}
    return cfg


def _runs_locally(profile: Optional[str], extra: List[str]) -> bool:
    """False when the jobs go to a cluster (an executor other than local, on the command line or
    in the profile): helpers started here would sit on the wrong machine."""
    for i, a in enumerate(extra):
        if a in ("--executor", "-e") and i + 1 < len(extra) and extra[i + 1] not in ("local", "dryrun"):
            return False
        if a.startswith("--executor=") and a.split("=", 1)[1] not in ("local", "dryrun"):
            return False
    if profile:
        import yaml

        for name in ("config.yaml", "profile.yaml"):
            f = Path(profile) / name
            if f.is_file():
                try:
                    data = yaml.safe_load(f.read_text()) or {}
                except (OSError, yaml.YAMLError):
                    return False
                if str(data.get("executor", "local")) not in ("local", "dryrun"):
                    return False
    return True


def gpus_to_show(n: int) -> Optional[str]:
    """CUDA_VISIBLE_DEVICES for a run on the first `n` visible GPUs; None when it sees no more."""
    from flashinfer_bench.pipeline.gpu_slots import visible_gpus

    visible = visible_gpus()
    if n <= 0 or n >= len(visible):
        return None
    return ",".join(visible[:n])


def _should_prestart(device: str) -> bool:
    """On a GPU box (`device`: cpu, cuda or cuda:N): the job server's and the per-GPU workers'
    torch imports then overlap Snakemake's own start. On the CPU, the workflow's onstart alone
    starts the job server: there a torch import beside Snakemake's start slows both (two cores), and
    a run with nothing to do never needs it."""
    return os.environ.get("FIB_PRESTART", "1") != "0" and device.startswith("cuda")


def _prestart(device: str, results: Path) -> None:
    """Start the job server and the GPU workers (each idempotent, detached, exits when idle)."""
    from flashinfer_bench.pipeline import job_server
    from flashinfer_bench.pipeline.prestart import prestart_workers

    job_server.turn_on()
    prestart_workers(device, os.environ.get("FIB_CACHE_PATH", ""), log_dir=str(results / "logs"))


def _precheck(args: argparse.Namespace, dataset: Path, config: dict) -> Tuple[Optional[str], int]:
    """(A --definitions / --solutions name that matches nothing, as one line (the workflow's own
    check would end in Snakemake's traceback); the number of dataset errors). The workflow prints
    the problems itself; the count decides the exit status once the good part has run."""
    from flashinfer_bench.pipeline.plan import build_plan, unreadable_trace_lines

    plan = build_plan(dataset, args.device or "auto", args.definitions, args.solutions, config=config)
    for p in plan.problems:
        if p.path in ("--definitions", "--solutions"):
            return str(p), 0
    # lines of traces/ that cannot be read: aggregation keeps them as they are; say so here
    bad = unreadable_trace_lines(dataset)
    for p in bad:
        print(f"[flashinfer-bench] error: {p} (kept as it is; the other traces are read)", file=sys.stderr)
    return None, len(plan.errors) + len(bad)


_SHOW = re.compile(r"^\[flashinfer-bench\]|steps \(\d+%\) done|^Error in rule|^Exiting because|WorkflowError|^Nothing to be done|MissingInput|^Job \d+ .*failed")


def run(args: argparse.Namespace) -> int:
    from flashinfer_bench.device import detect_device
    from flashinfer_bench.pipeline.gpu_slots import visible_gpus
    from flashinfer_bench.pipeline.workflow import workflow_dir

    wf = workflow_dir()
    device = detect_device(args.device or "auto")  # cpu, cuda or cuda:N; no torch import
    status = 0
    for i, local in enumerate(args.local):
        dataset = Path(local).resolve()
        if not dataset.is_dir():
            print(f"error: dataset directory {dataset} does not exist", file=sys.stderr)
            return 2
        results = Path(args.results or "results")
        braces = [str(p) for p in (dataset, results.resolve()) if "{" in str(p) or "}" in str(p)]
        if braces:  # Snakemake would read them as wildcards in every file name of the run
            print(f"error: {braces[0]} contains '{{' or '}}', which Snakemake reads as a wildcard: "
                  "use a directory without braces", file=sys.stderr)
            return 2
        if len(args.local) > 1:
            results = results / dataset.name
        from flashinfer_bench.bench.addressing import default_worker_dir
        from flashinfer_bench.env import run_directory_problems, unwritable

        user_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        if not args.dry_run and unwritable(user_cache, "the user cache", "") and "XDG_CACHE_HOME" not in os.environ:
            # an unwritable HOME: Snakemake's source cache (and ours, unless FIB_CACHE_PATH is set)
            # go under the results directory instead of ending in Snakemake's traceback
            os.environ["XDG_CACHE_HOME"] = str((results / ".cache").resolve())
            print(f"flashinfer-bench: note: {user_cache} is not writable; caches go to {os.environ['XDG_CACHE_HOME']} "
                  "(set XDG_CACHE_HOME or FIB_CACHE_PATH to choose)", file=sys.stderr)

        problems = [] if args.dry_run else run_directory_problems(default_worker_dir(), results)
        if problems:  # the machine's problem: one message each, nothing run, nothing written
            for p in problems:
                print(f"flashinfer-bench: environment error: {p}", file=sys.stderr)
            return ENVIRONMENT_ERROR_EXIT
        # A config file, not --config: Snakemake reads --config values as strings.
        overrides = _config_overrides(args, dataset, results.resolve())
        cfg_file = results / ".flashinfer-bench-run.json"
        from flashinfer_bench.atomic import atomic_write_json

        atomic_write_json(cfg_file, overrides)
        cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(wf / "Snakefile"),
               "--cores", str(args.cores), "--keep-going", "--scheduler", "greedy",
               "--rerun-incomplete", "--configfile", str(cfg_file)]
        # `gpu` caps the benchmark jobs in flight; the slot lock keeps measurements one per GPU
        in_flight = 1 + max(args.gpu_lookahead, 0)
        if args.gpus is not None:
            cmd += ["--resources", f"gpu={args.gpus * in_flight}"]
            # the slot locks spread jobs over every visible GPU: show this run only its N
            cvd = gpus_to_show(args.gpus)
            if cvd is not None:
                os.environ["CUDA_VISIBLE_DEVICES"] = cvd
        elif not args.profile and device.startswith("cuda"):
            cmd += ["--resources", f"gpu={len(visible_gpus()) * in_flight}"]
        if args.profile:
            cmd += ["--profile", args.profile]
        if args.dry_run:
            cmd += ["--dry-run"]
        extra = [a for a in args.snakemake_args if a != "--"]
        cmd += extra
        _unlock_if_stale(cmd)
        prestart = not args.dry_run and _runs_locally(args.profile, extra) and _should_prestart(device)
        if prestart:  # done below; the workflow's onstart then leaves it to us
            os.environ["FIB_PRESTARTED"] = "1"
        print(f"flashinfer-bench: {dataset} -> {results}", file=sys.stderr)
        t0 = time.perf_counter()
        t0_wall = time.time()
        # Snakemake starts (~1 s of imports) while this process starts the job server and workers and
        # checks the selection: a bad --definitions / --solutions name stops it with one line
        # instead of its traceback.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        if prestart:
            _prestart(device, results)
        why, dataset_errors = _precheck(args, dataset, overrides)
        if why:
            proc.kill()
            proc.wait()
            print(f"error: {why}", file=sys.stderr)
            return 2
        rc = _stream(proc, verbose=str(args.log_level).upper() == "DEBUG" or args.dry_run)
        wall = time.perf_counter() - t0
        summary = results / "report" / "summary.txt"
        if summary.exists() and not args.dry_run:
            print(summary.read_text())
        print(f"flashinfer-bench: {'finished' if rc == 0 else 'FAILED (exit %d)' % rc} in {wall:.1f} s", file=sys.stderr)
        charged = {"dataset": 0, "environment": 0} if args.dry_run else _charged_failures(results, t0_wall)
        dataset_errors += charged["dataset"]
        if rc == 0 and charged["environment"]:
            print(
                f"flashinfer-bench: {charged['environment']} evaluation(s) failed because of this machine, not the "
                f"solutions (listed above, 'environment error'); nothing of them was written into the dataset. "
                f"Exit status {ENVIRONMENT_ERROR_EXIT}.", file=sys.stderr,
            )
            rc = ENVIRONMENT_ERROR_EXIT
        if rc == 0 and dataset_errors and not args.dry_run:
            print(
                f"flashinfer-bench: {dataset} has {dataset_errors} error(s) (listed above; `flashinfer-bench validate "
                f"--local {dataset}` shows each with its file and line): what they concern was not benchmarked, the rest "
                f"was. Exit status {DATASET_ERROR_EXIT} (--ignore-dataset-errors: 0).",
                file=sys.stderr,
            )
            if not args.ignore_dataset_errors:
                rc = DATASET_ERROR_EXIT
        status = status or rc
    return status


def _charged_failures(results: Path, since: float) -> dict:
    """Evaluations of this run charged to the dataset or the machine (the aggregate stage keeps
    them out of the dataset and lists them; its outputs hold every trace of the run)."""
    from flashinfer_bench.data import Trace
    from flashinfer_bench.data.charge import charged_party

    counts = {"dataset": 0, "environment": 0}
    for f in (results / "aggregate").glob("*.jsonl"):
        if f.stat().st_mtime < since - 1:
            continue  # from an earlier run
        for line in f.read_text(errors="replace").splitlines():
            if line.strip():
                party = charged_party(Trace.model_validate_json(line))
                if party != "solution":
                    counts[party] += 1
    return counts


def _stream(proc: subprocess.Popen, verbose: bool) -> int:
    tail: List[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        tail = (tail + [line])[-60:]
        if verbose or _SHOW.search(line):
            sys.stderr.write(line)
    rc = proc.wait()
    if rc != 0 and not verbose:
        sys.stderr.write("---- last lines of Snakemake's output ----\n" + "".join(tail))
    return rc


def _snakemake_alive_here() -> bool:
    """Is another Snakemake process running in this working directory?"""
    here = os.getcwd()
    for proc in Path("/proc").glob("[0-9]*"):
        if int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "snakemake" in cmdline and os.readlink(proc / "cwd") == here:
                return True
        except OSError:
            continue
    return False


def _unlock_if_stale(cmd: List[str]) -> None:
    """A killed run leaves .snakemake/locks behind; remove it only when no Snakemake runs here."""
    locks = Path(".snakemake/locks")
    if locks.is_dir() and any(locks.iterdir()) and not _snakemake_alive_here():
        print("flashinfer-bench: removing the stale lock of a killed run", file=sys.stderr)
        subprocess.run([*cmd, "--unlock"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
