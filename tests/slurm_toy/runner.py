"""Run a Snakemake DAG through profiles/slurm and inspect what SLURM did with it.

Reusable by tests (tests/test_slurm_cluster.py) and benchmarks
(benchmarks/slurm_overhead.py); swap TOY_SNAKEFILE for the real pipeline's
Snakefile and pass its --config/targets as extra_args.

Needs: snakemake + snakemake-executor-plugin-slurm in the running interpreter
(the optional `slurm` extra) and a reachable controller (.ci/slurm-up.sh).
No accounting DB is assumed: job facts come from `squeue -t all` / `scontrol
show job` (finished jobs stay visible for MinJobAge = 900 s on the test cluster).
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parents[2]
TOY_SNAKEFILE = Path(__file__).resolve().with_name("Snakefile")
SLURM_PROFILE = REPO / "profiles" / "slurm"

ACTIVE_STATES = "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED,RESIZING"

_RUN_ID_RE = re.compile(r"SLURM run ID: ([0-9a-f-]{36})")
_SUBMIT_RE = re.compile(r"submitted with SLURM jobid (\d+)")


# --------------------------------------------------------------------------- cluster probes
def _slurm_cmd(args: Sequence[str], timeout: float = 15) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def slurm_available(timeout: float = 10) -> Tuple[bool, str]:
    """(ok, reason). ok only if `sinfo` answers within `timeout` and a node is usable.

    A timeout is essential: without a slurm.conf the client tools retry for 60 s.
    """
    if shutil.which("sinfo") is None:
        return False, "sinfo not found (slurm-client not installed; run .ci/slurm-up.sh)"
    try:
        p = _slurm_cmd(["sinfo", "-h", "-o", "%P %T %G"], timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"sinfo did not answer within {timeout:.0f}s (no slurm.conf / controller down?)"
    if p.returncode != 0:
        return False, f"sinfo failed: {(p.stderr or p.stdout).strip()[:300]}"
    states = p.stdout.split()
    if not any(s in ("idle", "mixed", "allocated", "completing") for s in states):
        return False, f"no usable node: sinfo says {p.stdout.strip()!r}"
    return True, p.stdout.strip()


def plugin_available() -> Tuple[bool, str]:
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        return False, (f"snakemake-executor-plugin-slurm not installed in {sys.prefix} "
                       "(pip install -e .[slurm], or run .ci/slurm-up.sh)")
    return True, "ok"


def active_jobs(run_uuid: Optional[str] = None) -> List[str]:
    """Job ids that are not finished yet (all jobs, or those of one Snakemake run)."""
    args = ["squeue", "-h", "-t", ACTIVE_STATES, "-o", "%A"]
    if run_uuid:
        args += ["-n", run_uuid]
    p = _slurm_cmd(args)
    return p.stdout.split() if p.returncode == 0 else []


def cancel_run(run_uuid: Optional[str], job_ids: Sequence[str] = (), wait_s: float = 20) -> List[str]:
    """scancel every job of a run (jobs are named after the run uuid) and wait until
    they are gone. Returns the ids still active afterwards (should be empty)."""
    if run_uuid:
        _slurm_cmd(["scancel", "-n", run_uuid])
    if job_ids:
        _slurm_cmd(["scancel", *job_ids])
    deadline = time.monotonic() + wait_s
    left = _still_active(run_uuid, job_ids)
    while left and time.monotonic() < deadline:
        time.sleep(0.3)
        left = _still_active(run_uuid, job_ids)
    return left


def _still_active(run_uuid: Optional[str], job_ids: Sequence[str]) -> List[str]:
    ids = set(job_ids)
    if run_uuid:
        ids |= set(active_jobs(run_uuid))
    return sorted(ids & set(active_jobs()), key=int)


def _parse_time(s: str) -> Optional[float]:
    try:
        return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError:
        return None


def show_job(job_id: str) -> Dict[str, str]:
    """`scontrol show job -o ID` as a dict (JobState, Partition, Comment, TresPerJob, ...)."""
    p = _slurm_cmd(["scontrol", "show", "job", "-o", str(job_id)])
    out: Dict[str, str] = {}
    if p.returncode != 0:
        return out
    # values never contain spaces except Command/WorkDir-like paths; good enough here
    for tok in p.stdout.strip().split(" "):
        if "=" in tok:
            k, v = tok.split("=", 1)
            out.setdefault(k, v)
    return out


# --------------------------------------------------------------------------- running
@dataclass
class SlurmRun:
    cmd: List[str]
    workdir: Path
    returncode: int
    wall_s: float
    log_path: Path
    run_uuid: Optional[str] = None
    job_ids: List[str] = field(default_factory=list)   # as reported by snakemake ("submitted with SLURM jobid N")
    timed_out: bool = False
    left_active: List[str] = field(default_factory=list)  # jobs still active after cleanup (should be [])

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def jobs(self) -> List[Dict[str, object]]:
        """One dict per SLURM job of this run: id, state, partition, comment (rule),
        tres, start/end epoch seconds, runtime_s (1 s resolution)."""
        rows = []
        for jid in self.job_ids:
            info = show_job(jid)
            start, end = _parse_time(info.get("StartTime", "")), _parse_time(info.get("EndTime", ""))
            rows.append({
                "id": jid,
                "state": info.get("JobState"),
                "partition": info.get("Partition"),
                "comment": info.get("Comment"),
                "tres_per_job": info.get("TresPerJob") or info.get("TresPerNode"),
                "cpus": info.get("NumCPUs"),
                "time_limit": info.get("TimeLimit"),
                "submit": _parse_time(info.get("SubmitTime", "")),
                "start": start,
                "end": end,
                "runtime_s": (end - start) if start and end else None,
            })
        return rows


def run_snakemake_slurm(
    snakefile: os.PathLike | str,
    workdir: os.PathLike | str,
    extra_args: Sequence[str] = (),
    *,
    profile: os.PathLike | str = SLURM_PROFILE,
    workflow_profile: Optional[str] = "none",
    env: Optional[Mapping[str, str]] = None,
    timeout: float = 900,
    python: Optional[str] = None,
    log_name: str = "snakemake-slurm.log",
) -> SlurmRun:
    """Run `snakemake --profile <profile>` on `snakefile` in `workdir` and clean up.

    - `workflow_profile="none"` keeps a profiles/default/ from overriding the SLURM
      profile (it would win per key); pass None to let snakemake pick it up.
    - stdout+stderr go to workdir/<log_name> (no pipe that could fill up).
    - On timeout the run's SLURM jobs are scancel'ed first and Snakemake is then
      SIGKILLed: a SIGTERM'd Snakemake waits for its running jobs (and a pending
      one may never start), so it would not exit. The workdir is then `--unlock`ed.
    - In every case, jobs of the run still active at the end are scancel'ed
      (`left_active` lists any that survived).
    """
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    py = python or sys.executable
    base = [py, "-m", "snakemake", "--snakefile", str(Path(snakefile).resolve()),
            "--directory", str(workdir), "--profile", str(profile)]
    if workflow_profile is not None:
        base += ["--workflow-profile", workflow_profile]
    cmd = base + list(extra_args)
    run_env = dict(os.environ)
    if env:
        run_env.update(env)
    log_path = workdir / log_name
    t0 = time.monotonic()
    timed_out = False
    with open(log_path, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=run_env,
                                cwd=str(REPO), start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            uuid = _first(_RUN_ID_RE, log_path)
            cancel_run(uuid, _all(_SUBMIT_RE, log_path), wait_s=10)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = proc.wait()
    wall = time.monotonic() - t0
    uuid = _first(_RUN_ID_RE, log_path)
    job_ids = _all(_SUBMIT_RE, log_path)
    left = _still_active(uuid, job_ids) if (uuid or job_ids) else []
    if left:
        left = cancel_run(uuid, left)
    if timed_out:
        subprocess.run(base + list(extra_args) + ["--unlock"], capture_output=True, env=run_env,
                       cwd=str(REPO), timeout=120)
    return SlurmRun(cmd=cmd, workdir=workdir, returncode=rc, wall_s=wall, log_path=log_path,
                    run_uuid=uuid, job_ids=job_ids, timed_out=timed_out, left_active=left)


def _first(rx: re.Pattern, path: Path) -> Optional[str]:
    try:
        m = rx.search(path.read_text(errors="replace"))
    except FileNotFoundError:
        return None
    return m.group(1) if m else None


def _all(rx: re.Pattern, path: Path) -> List[str]:
    try:
        found = rx.findall(path.read_text(errors="replace"))
    except FileNotFoundError:
        return []
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------- toy outputs
def parse_probe_file(path: os.PathLike | str) -> List[Dict[str, str]]:
    """The toy rules write `key=value` lines (rule, slurm_job_id, cuda_visible_devices, ...)."""
    rows = []
    for line in Path(path).read_text().splitlines():
        kv = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if kv:
            rows.append(kv)
    return rows
