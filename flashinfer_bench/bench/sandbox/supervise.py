"""The supervisor's side of confinement (torch-free): refuse, watch, and believe only what holds.

* `refusal()`: the runner reported that it is not confined and the request did not allow that.
* `uncovered()`: paths a request needs (dataset, artifact) that the runner cannot read; the
  supervisor then starts a runner that can.
* `MemoryWatch`: resident memory of the runner and everything it started, polled while an
  evaluation runs; over the limit the whole process group is killed and the evaluation says why.
* `check_reply()`: the answer must be the runner's sealed reply to this request (`channel`), and
  its numbers must be plausible (`plausibility_problems`): finite, positive, consistent with each
  other, and on a GPU not faster than a quarter of the bandwidth floor computed here from the
  definition and the peaks the runner measured before any solution was loaded.
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ...sandbox import cgroup
from ...sandbox.policy import Settings
from ...sandbox.procfs import parent_pid, task_state
from ...sandbox.proctree import resume, stop_tree  # noqa: F401 - the supervisor's API
from ...sandbox.proctree import tree as _tree
from . import channel

STATUSES = {
    "PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE", "RUNTIME_ERROR", "COMPILE_ERROR", "TIMEOUT",
}
FLOOR_FACTOR = 0.25
# a claim under this share of the smallest kernel's time (the runner's calibration, before any
# solution): no call that launches a kernel is that fast
LAUNCH_FLOOR_FACTOR = 0.8


def runner_args(readable: Iterable[Path]) -> List[str]:
    """Runner arguments: what it may read (plus the dataset named by
    FIB_DATASET_PATH / FLASHINFER_BENCH_DATASET_PATH, so that its first request needs no restart)."""
    from ...env import dataset_path

    roots = {str(Path(p)) for p in readable}
    ds = dataset_path(default="")
    if str(ds) not in ("", ".") and ds.is_dir():
        roots.add(str(ds.resolve()))
    args: List[str] = []
    for p in sorted(roots):
        args += ["--readable", p]
    return args


def confinement(ready: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return dict((ready or {}).get("confine") or {})


def key_of(ready: Optional[Dict[str, Any]]) -> Optional[bytes]:
    k = (ready or {}).get("key")
    return bytes.fromhex(k) if isinstance(k, str) else None


def refusal(ready: Optional[Dict[str, Any]], allow_unconfined: bool) -> Optional[str]:
    """Why this runner must not run solutions (None when it may)."""
    c = confinement(ready)
    if c.get("confined") or allow_unconfined:
        return None
    missing = ", ".join(c.get("missing") or ["unknown"])
    return (
        f"refusing to run an untrusted solution unconfined: the runner could not apply {missing} "
        f"(sandbox: {c.get('sandbox', 'none')}). Set evaluation.allow_unconfined: true "
        f"(EvalConfig.allow_unconfined=True) to run anyway on a machine you do not mind losing."
    )


def needed_paths(request: Dict[str, Any], build: Dict[str, Any]) -> List[Optional[str]]:
    """What a runner must read for this request: the artifact, and the dataset only when the
    workload reads tensors from files (most workloads draw random inputs)."""
    inputs = ((request.get("workload") or {}).get("inputs") or {}).values()
    from_files = any(isinstance(i, dict) and i.get("type") not in ("random", "scalar") for i in inputs)
    return [build.get("artifact_dir"), request.get("dataset_root") if from_files else None]


def _beneath(p: Path, roots: Iterable[str]) -> bool:
    s = str(p)
    return any(s == r or s.startswith(r.rstrip("/") + "/") for r in roots)


def uncovered(ready: Optional[Dict[str, Any]], paths: Iterable[Optional[str]]) -> List[Path]:
    """Of `paths`, those the runner may not read (only when it is confined by Landlock)."""
    c = confinement(ready)
    if "landlock" not in str(c.get("sandbox", "")):
        return []
    roots = list((c.get("notes") or {}).get("landlock", {}).get("read", [])) + list(
        (c.get("notes") or {}).get("landlock", {}).get("write", [])
    )
    out = []
    for p in paths:
        if not p:
            continue
        rp = Path(p).resolve()
        if rp.exists() and not _beneath(rp, roots):
            out.append(rp)
    return out


# ----------------------------------------------------------------------------- memory
def leftover_processes(pid: int, runner_pid: Optional[int]) -> List[int]:
    """Processes under the runner started as `pid` other than the runner `runner_pid` (its host
    pid, from its ready message) and the chain of processes that started it (its shim, a pid
    namespace's init): children a solution left running after its evaluation, seen from outside
    the runner (the runner's own guard says so too, but code in the runner can disarm it). Exited
    ones not yet reaped (zombies) are not counted."""
    tree = _tree(pid)
    own = {pid}
    if isinstance(runner_pid, int) and runner_pid in tree:
        p: Optional[int] = runner_pid
        while p is not None and p not in own:
            own.add(p)
            p = parent_pid(p)
    return [p for p in tree if p not in own and task_state(p) not in (None, "Z", "X")]



@contextmanager
def held(pid: Optional[int]) -> Iterator[None]:
    """The runner `pid` stopped (`stop_tree`) while the block runs, resumed after it."""
    pids = stop_tree(pid) if pid else []
    try:
        yield
    finally:
        resume(pids)


# a stopped runner's CPU time over at least this window, read only when one of its threads is
# still running or inside a system call
STOPPED_WINDOW_S = 0.03
# ... and for as long as one still is, up to this: a thread that is still in the kernel (R or D)
# this long after the stop is in a call that heeds only SIGKILL
STOPPED_GRACE_S = 0.25
_NOT_STOPPED = ("R", "D")


def busy_while_stopped(usage_file: Optional[str], pid: Optional[int] = None,
                       window_s: float = STOPPED_WINDOW_S, grace_s: float = STOPPED_GRACE_S) -> Tuple[float, bool]:
    """(CPU seconds a stopped runner used per `window_s`, whether a thread of it was still running
    or inside a system call `grace_s` after the stop); (0.0, False) where every thread is stopped
    or asleep. SIGSTOP takes a thread when it returns to user space: one inside a long system call
    that heeds only fatal signals runs on (three threads in `madvise(MADV_POPULATE_READ)` over 64
    GiB kept both cores busy ~15 s under a "stopped" runner, `stopped_kernel_burner`); only
    SIGKILL ends them. A thread asleep in such a call (state D, reading a file's pages from the
    disk) is not on a CPU at the first look and burns later (`stopped_io_then_burn`, red team 6:
    the gate looked for state R once and passed it 1 time in 5), so the gate watches while any
    thread is in R or D, up to `grace_s`. Read from the runner's CPU-accounting cgroup
    (`usage_file`), else (no cgroup: the GPU machine's runners) from its tree's threads'
    scheduler statistics."""
    if usage_file:
        def threads() -> List[str]:
            return cgroup.thread_ids(usage_file)

        def cpu() -> Optional[int]:
            return cgroup.cpu_ns(usage_file)
    elif pid:
        def threads() -> List[str]:
            return _tree_threads(pid)

        def cpu() -> Optional[int]:
            return _threads_cpu_ns(_tree_threads(pid))
    else:
        return 0.0, False

    def states() -> List[Optional[str]]:
        return [task_state(t) for t in threads()]

    now = states()
    if not any(x in _NOT_STOPPED for x in now):
        return 0.0, False
    t0, c0 = time.monotonic(), cpu()
    if "R" in now:  # on a CPU: read what it burns over the window
        time.sleep(window_s)
    # else only asleep in a call (a CUDA runner's driver threads, briefly, after most stops on the
    # H200: the whole window each time cost ~40 ms a job): polled until it leaves it
    while True:
        active = any(x in _NOT_STOPPED for x in states())
        elapsed = time.monotonic() - t0
        if not active or elapsed >= grace_s:
            break
        time.sleep(0.002)
    c1 = cpu()
    spent = max(0.0, (c1 - c0) / 1e9) if c0 is not None and c1 is not None else 0.0
    used = spent * window_s / max(elapsed, window_s)  # a rate, per window: never from a few ms' sample
    return used, active


def _tree_threads(pid: int) -> List[str]:
    """Every thread of `pid` and the processes below it, as "<pid>/task/<tid>" of /proc."""
    out: List[str] = []
    for p in _tree(pid):
        try:
            out += [f"{p}/task/{t}" for t in os.listdir(f"/proc/{p}/task")]
        except OSError:
            continue
    return out


def _threads_cpu_ns(tids: Iterable[str]) -> int:
    """The CPU time of these threads so far (ns: the first field of their schedstat)."""
    total = 0
    for t in tids:
        try:
            with open(f"/proc/{t}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def tree_rss_bytes(pid: int) -> int:
    """Sum of resident memory over the tree (cheap; counts pages forked children share many times)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE")
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def tree_page_table_bytes(pid: int) -> int:
    """Kernel memory the tree's page tables take (VmPTE): no resident set counts it, and a runner
    that maps a huge read-only range and reads a byte every 2 MiB makes a 4 KiB table page each
    while its resident set stays flat (`page_table_hoard`: 3 GiB of page tables beside 184 MiB
    resident, over a 2 GiB limit, held on while parked; up to 256 GiB a process)."""
    return _tree_kib_field(pid, "status", "VmPTE:")


def tree_memory_bytes(pid: int) -> int:
    """What the tree holds of the host's memory as the parked runners' cap counts it: resident
    memory plus page tables."""
    return tree_rss_bytes(pid) + tree_page_table_bytes(pid)


def tree_pss_bytes(pid: int) -> int:
    """Sum of proportional resident memory over the tree (shared pages split between sharers)."""
    return _tree_kib_field(pid, "smaps_rollup", "Pss:")


def _tree_kib_field(pid: int, name: str, field: str) -> int:
    """Bytes: the sum over the tree of the first `field` line (in kB) of each /proc/<p>/`name`."""
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/{name}") as f:
                for line in f:
                    if line.startswith(field):
                        total += int(line.split()[1]) * 1024
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total


def fd_shmem_bytes(pids: Iterable[int]) -> int:
    """Bytes of shared memory that the processes hold only through file descriptors: anonymous
    files (memfd_create) and /dev/shm files, mapped or not (a resident set counts only mapped
    pages: 3 GiB in unmapped memfds went unseen, issue 15). Each file counted once."""
    seen = set()
    total = 0
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{p}/fd/{fd}"
            try:
                target = os.readlink(path)
            except OSError:
                continue
            if not (target.startswith("/memfd:") or target.startswith("/dev/shm/")):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                seen.add(key)
                total += st.st_blocks * 512
    return total


def scratch_bytes(view: Optional[str]) -> int:
    """Bytes in use on a runner's tmpfs scratch (seen through its /proc/<pid>/root)."""
    if not view:
        return 0
    try:
        st = os.statvfs(view)
    except OSError:
        return 0
    return (st.f_blocks - st.f_bfree) * st.f_frsize


def disk_usage(root: str, max_files: int) -> Tuple[int, int]:
    """(bytes allocated, files) under `root`, links not followed; stops counting files once past
    `max_files` (the answer is then over the quota anyway, and the walk stays bounded)."""
    total, files = 0, 0
    stack = [root]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                files += 1
                if files > max_files:
                    return total, files
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    total += e.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    continue
    return total, files


@dataclass(frozen=True)
class DiskScratch:
    """A runner's scratch that is a directory on the worker's disk (no mount namespace, hence no
    tmpfs with its quota: CUDA runners), and the quota the supervisor holds it to instead."""
    path: str
    max_bytes: int
    max_files: int


class MemoryWatch:
    """Kill the runner's process group when its memory passes `limit` bytes: the tree's resident
    memory, plus the tmpfs scratch it filled (`scratch_view`), plus shared memory its processes
    hold through descriptors (memfd, /dev/shm; looked at every `fd_every`-th poll); or when its
    scratch on disk (`disk_scratch`, where it has no tmpfs) passes its quota of bytes or files
    (looked at every `fd_every`-th poll too)."""

    def __init__(self, pid: int, limit: int, interval: float = 0.1, scratch_view: Optional[str] = None,
                 fd_every: int = 3, disk_scratch: Optional[DiskScratch] = None) -> None:
        self.pid, self.limit, self.interval = pid, limit, interval
        self.scratch_view = scratch_view
        self.disk_scratch = disk_scratch
        self.fd_every = max(1, fd_every)
        self.tripped: Optional[str] = None
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="fib-memwatch")

    @classmethod
    def for_runner(cls, pid: int, ready: Optional[Dict[str, Any]]) -> "MemoryWatch":
        """The watch of a runner started as `pid` that said `ready` (its limit, its scratch)."""
        c = confinement(ready)
        view = None
        mounts = (c.get("notes") or {}).get("mounts")
        rpid = (ready or {}).get("pid")
        disk = None
        if isinstance(mounts, dict) and mounts.get("scratch_tmpfs") and c.get("scratch_dir") and isinstance(rpid, int):
            view = f"/proc/{rpid}/root{c['scratch_dir']}"
        elif c.get("scratch_dir"):
            settings = Settings.from_env()  # the runner's own: the worker passes it its environment
            if settings.enabled:
                disk = DiskScratch(str(c["scratch_dir"]), settings.scratch_bytes, settings.scratch_inodes)
        return cls(pid, host_limit(ready), scratch_view=view, disk_scratch=disk)

    def _run(self) -> None:
        shm = 0
        n = 0
        while not self._stop.wait(self.interval):
            n += 1
            pids = _tree(self.pid)
            if n % self.fd_every == 1 or self.fd_every == 1:
                shm = fd_shmem_bytes(pids)
                if self.disk_scratch is not None and self._disk_scratch_over():
                    return
            if self.limit <= 0:
                continue  # the scratch quota alone
            rss = tree_rss_bytes(self.pid)
            scratch = scratch_bytes(self.scratch_view)
            tables = tree_page_table_bytes(self.pid)
            if rss + scratch + shm + tables > self.limit:  # forked children count shared pages again: look closer
                rss = tree_pss_bytes(self.pid)
            total = rss + scratch + shm + tables
            self.peak = max(self.peak, total)
            if total > self.limit:
                parts = f"{rss / 2**30:.2f} GiB resident"
                if tables >= 1 << 26:  # 64 MiB: more than a process's usual few
                    parts += f" + {tables / 2**30:.2f} GiB of page tables"
                if scratch:
                    parts += f" + {scratch / 2**30:.2f} GiB in its tmpfs scratch"
                if shm:
                    parts += f" + {shm / 2**30:.2f} GiB of shared memory held by descriptors"
                return self._trip(
                    f"host memory limit exceeded: the runner and its processes held {parts}, over the "
                    f"limit of {self.limit / 2**30:.2f} GiB (FIB_SANDBOX_HOST_MEM_GB); the runner was killed"
                )

    def _disk_scratch_over(self) -> bool:
        d = self.disk_scratch
        assert d is not None
        used, files = disk_usage(d.path, d.max_files)
        if used <= d.max_bytes and files <= d.max_files:
            return False
        self._trip(
            f"scratch quota exceeded: the runner's scratch directory held {used / 2**20:.0f} MiB in "
            f"{files}{'+' if files > d.max_files else ''} files, over {d.max_bytes / 2**20:.0f} MiB or "
            f"{d.max_files} files (FIB_SANDBOX_SCRATCH_MB, FIB_SANDBOX_SCRATCH_FILES); the runner was killed"
        )
        return True

    def _trip(self, why: str) -> None:
        """Record which limit the runner passed and kill its process group."""
        self.tripped = why
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def __enter__(self) -> "MemoryWatch":
        if self.limit > 0 or self.disk_scratch is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()


def explain_death(rc: Optional[int], watch: Optional[MemoryWatch], ready: Optional[Dict[str, Any]]) -> str:
    """A line that names the limit a dead runner hit, or "" when none is known."""
    if watch is not None and watch.tripped:
        return watch.tripped
    if rc is not None and rc == -signal.SIGXFSZ:
        lim = (confinement(ready).get("rlimits") or {}).get("fsize", {}).get("soft")
        size = f"{lim / 2**20:.0f} MiB " if isinstance(lim, int) else ""
        return (f"file size limit exceeded: the solution wrote a file (its output log or a scratch file) "
                f"larger than the {size}limit (FIB_SANDBOX_FSIZE_MB)")
    return ""


# ----------------------------------------------------------------------------- replies
def check_reply(
    reply: Any, key: Optional[bytes], nonce: str, last_seq: int,
) -> Tuple[Optional[Dict[str, Any]], str]:
    return channel.verify(key, nonce, last_seq, reply)


def _finite_pos(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


# no call of a solution returns in under a nanosecond (a Python call alone is ~50 ns); a claim of
# 1e-320 ms passed the checks below with an infinite speedup and then broke the witness's
# arithmetic (`subnormal_latency`, session 19)
MIN_LATENCY_MS = 1e-6


# the fields of a runner's result the supervisor reads, and the JSON types they must have (any
# status): a sealed PASSED reply with `extra` a list, or a failed one with `correctness` a list,
# raised in the worker outside every handler and ended the job unjudged (`reply_field_types`,
# `reply_failed_field_types`, session 23)
RESULT_FIELDS: Dict[str, Tuple[type, ...]] = {
    "performance": (dict,), "correctness": (dict,), "extra": (dict,), "env": (dict,), "message": (str,),
    "healthy": (bool,), "unhealthy_reason": (str,),
}
EXTRA_LISTS = ("flags", "notes")


def shape_problems(result: Dict[str, Any]) -> List[str]:
    """What in a runner's result is not of the type the supervisor reads it as (null is fine)."""
    st = result.get("status")
    if not isinstance(st, str) or st not in STATUSES:
        return [f"unknown status {str(st)[:80]!r}"]
    probs = [f"{k} is a {type(result[k]).__name__}, not {' or '.join(t.__name__ for t in types)}"
             for k, types in RESULT_FIELDS.items() if result.get(k) is not None and not isinstance(result[k], types)]
    extra = result.get("extra")
    if isinstance(extra, dict):
        probs += [f"extra.{k} is a {type(extra[k]).__name__}, not a list of strings" for k in EXTRA_LISTS
                  if extra.get(k) is not None and not (isinstance(extra[k], list) and all(isinstance(x, str) for x in extra[k]))]
    return probs


def plausibility_problems(
    result: Dict[str, Any], request: Dict[str, Any], ready: Optional[Dict[str, Any]], device: str,
) -> List[str]:
    """What is impossible about a runner's result (empty when nothing is)."""
    shape = shape_problems(result)
    if shape:
        return shape
    st = result.get("status")
    if st != "PASSED":
        return []
    probs: List[str] = []
    perf = result.get("performance") or {}
    corr = result.get("correctness") or {}
    extra = result.get("extra") or {}
    lat = perf.get("latency_ms")
    if not _finite_pos(lat):
        return [f"latency_ms {lat!r} is not a finite positive number"]
    if lat < MIN_LATENCY_MS:  # 1e-320 ms gave an infinite speedup, "close" to reference/latency
        return [f"latency_ms {lat!r} is under {MIN_LATENCY_MS} ms: no call returns that fast"]
    for k in ("max_abs", "max_rel"):
        v = corr.get(k)
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            probs.append(f"correctness {k} {v!r} is not a finite number >= 0")
    profile = bool((request.get("config") or {}).get("profile_baseline", True))
    ref = perf.get("reference_latency_ms")
    sp = perf.get("speedup_factor")
    if profile:
        if not _finite_pos(ref):
            probs.append(f"reference_latency_ms {ref!r} is not a finite positive number")
        elif not (_finite_pos(sp) and math.isclose(sp, ref / lat, rel_tol=1e-6)):
            probs.append(f"speedup_factor {sp!r} is not reference/latency = {ref / lat:.6g}")
    n = extra.get("samples")
    if not (isinstance(n, int) and n >= 1):
        probs.append(f"samples {n!r}: no timed sample")
    p10, p90 = extra.get("latency_ms_p10"), extra.get("latency_ms_p90")
    if _finite_pos(p10) and _finite_pos(p90) and not (p10 * (1 - 1e-9) <= p90):
        probs.append(f"p10 {p10} > p90 {p90}")
    return probs


def floor_suspicion(
    result: Dict[str, Any], request: Dict[str, Any], ready: Optional[Dict[str, Any]], device: str,
) -> Optional[Tuple[str, str]]:
    """(flag, why) when a PASSED latency is below what is physically possible: far below the
    definition's memory floor (`below_roofline_floor`), or below the smallest kernel's time as
    the runner's timing protocol measured it before any solution loaded (`below_launch_floor`).

    Checked here, outside the solution's process, so a result forged inside the runner cannot
    hide it. Not a rejection by itself: the floor counts every declared tensor, and a correct
    solution may legitimately skip an input the reference ignores too (or launch nothing at all
    for a call that only returns a view); `witness_graph.judge_floor` decides with what the
    witness timed.
    """
    if device == "cpu" or result.get("status") != "PASSED":
        return None
    lat = (result.get("performance") or {}).get("latency_ms")
    if not _finite_pos(lat):
        return None
    floor = _floor_ms(request, ready)
    if floor is not None and lat < FLOOR_FACTOR * floor:
        return "below_roofline_floor", (
            f"latency {lat * 1e3:.3f} us is under a quarter of the memory floor {floor * 1e3:.3f} us "
            f"(bytes of all declared tensors / measured peak bandwidth): either a declared input is not "
            f"read, or the result is not real")
    launch = ((ready or {}).get("calibration") or {}).get("min_kernel_ms")
    if _finite_pos(launch) and lat < LAUNCH_FLOOR_FACTOR * launch:
        return "below_launch_floor", (
            f"latency {lat * 1e3:.3f} us is under {LAUNCH_FLOOR_FACTOR:g}x the time the same timing gives the "
            f"smallest kernel there is on this GPU ({launch * 1e3:.2f} us, measured before any solution "
            f"loaded): a call that launches a kernel is not that fast, the result is not real")
    return None


def _floor_ms(request: Dict[str, Any], ready: Optional[Dict[str, Any]]) -> Optional[float]:
    from ...data import Definition
    from ...data.devices import floor_gbps

    peaks = (ready or {}).get("peaks") or {}
    gbps = floor_gbps(peaks.get("peak_gbps"), peaks.get("device_name"))
    if gbps is None:
        return None

    try:
        d = Definition.model_validate(request["definition"])
        axes = (request.get("workload") or {}).get("axes") or {}
        nbytes = d.bytes_moved({k: v for k, v in axes.items() if k in d.var_axes})
    except (KeyError, ValueError, TypeError):
        return None
    return nbytes / (gbps * 1e9) * 1e3


def host_limit(ready: Optional[Dict[str, Any]]) -> int:
    """The runner's resident-memory limit in bytes (0: none, e.g. an unconfined runner)."""
    v = (confinement(ready).get("rlimits") or {}).get("host_rss_bytes")
    return int(v) if isinstance(v, (int, float)) and v > 0 else 0


# ----------------------------------------------------------------------------- the reference
_REF_EXTRA = {
    "reference_iqr_ms": "iqr_ms", "reference_samples": "samples", "reference_latency_ms_median": "median_ms",
    "reference_noisy": "noisy", "reference_gate_mode": "gate_mode", "reference_converged": "converged",
    "reference_rel_ci": "rel_ci",
}


def own_reference(result: Dict[str, Any], ref_stats: Optional[Dict[str, Any]]) -> None:
    """Put the supervisor's own reference numbers (from the reference runner, where no solution
    ever ran) into a solution runner's result, and the speedup computed from them: the copy the
    solution's runner echoed back lived in memory the solution could rewrite (issue 15: a
    reference time inflated 100x from inside the runner gave a 100x speedup)."""
    if not ref_stats or result.get("status") != "PASSED":
        return
    perf = result.get("performance")
    ref = ref_stats.get("center_ms")
    if not isinstance(perf, dict) or not _finite_pos(ref):
        return
    lat = perf.get("latency_ms")
    claimed = perf.get("reference_latency_ms")
    perf["reference_latency_ms"] = ref
    if _finite_pos(lat):
        perf["speedup_factor"] = ref / lat
    extra = result.setdefault("extra", {})
    for k, src in _REF_EXTRA.items():
        if src in ref_stats:
            extra[k] = ref_stats[src]
    extra["reference_source"] = "reference_runner"
    extra["reference_cached"] = bool(ref_stats.get("cached", False))
    if _finite_pos(claimed) and not math.isclose(claimed, ref, rel_tol=1e-9):
        extra["flags"] = list(dict.fromkeys([*(extra.get("flags") or []), "reference_tampered"]))
        extra["suspect"] = True
        extra["notes"] = [*(extra.get("notes") or []), (
            f"supervisor: the runner reported a reference time of {claimed:.6g} ms, the reference runner "
            f"measured {ref:.6g} ms; the latter is recorded")]
