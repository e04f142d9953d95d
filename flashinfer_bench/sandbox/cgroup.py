"""A pids cgroup per runner: a hard cap on its processes and threads, whoever it runs as.

RLIMIT_NPROC does not bind root (the kernel exempts uid 0, also inside a user namespace that maps
uid 0 to itself), so where the runner runs as root the cap comes from the pids controller: the
runner's shim (still root in the initial namespaces) makes `<its pids cgroup>/fib-runner-<pid>`,
writes `pids.max` and moves itself in before it forks the runner; everything below inherits it.
When the runner is gone the shim moves out, kills what is still in the group (daemonised children of
a runner without a pid namespace) and removes it; groups of shims that were killed are cleaned the
same way by the next runner. cgroup v1 (a
`pids` hierarchy) and v2 (`pids` enabled for our cgroup's children) are both tried.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .procfs import task_state

PREFIX = "fib-runner-"


def _mounts() -> list:
    try:
        with open("/proc/self/mountinfo") as f:
            return [line.split() for line in f]
    except OSError:
        return []


def pids_base() -> Optional[Tuple[Path, str]]:
    """(directory of our own pids cgroup, "v1" | "v2"), or None when there is no usable one."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    v1_path = v2_path = None
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if "pids" in ctrls.split(","):
            v1_path = path
        elif hid == "0":
            v2_path = path
    for m in _mounts():
        if "-" not in m:
            continue
        sep = m.index("-")
        fstype, opts = m[sep + 1], m[sep + 3] if len(m) > sep + 3 else ""
        mnt = m[4]
        if fstype == "cgroup" and v1_path is not None and "pids" in opts.split(","):
            return Path(mnt) / v1_path.lstrip("/"), "v1"
        if fstype == "cgroup2" and v2_path is not None and v1_path is None:
            base = Path(mnt) / v2_path.lstrip("/")
            try:
                if "pids" in (base / "cgroup.controllers").read_text().split():
                    return base, "v2"
            except OSError:
                pass
    return None


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _kill_members(group: Path) -> None:
    """SIGKILL every process still in `group` (what a runner left: daemonised children)."""
    try:
        pids = [int(x) for x in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return
    for pid in pids:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def _owner_alive(group: Path) -> bool:
    try:
        os.kill(int(group.name[len(PREFIX):]), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def remove_stale(base: Path) -> int:
    """Remove the groups of runners whose shim is gone, killing what they left running."""
    n = 0
    for d in base.glob(PREFIX + "*"):
        if _owner_alive(d):
            continue
        _kill_members(d)
        for _ in range(20):
            try:
                d.rmdir()
                n += 1
                break
            except OSError:
                time.sleep(0.01)
    return n


def enter_limited(max_pids: int) -> Tuple[Optional[Path], str]:
    """Move this process into a new pids cgroup capped at `max_pids`; (its path, note)."""
    found = pids_base()
    if found is None:
        return None, "no pids cgroup controller"
    base, version = found
    remove_stale(base)
    group = base / f"{PREFIX}{os.getpid()}"
    try:
        if version == "v2":
            ctl = base / "cgroup.subtree_control"
            if "pids" not in ctl.read_text().split():
                _write(ctl, "+pids")
        _join_new_group(group, {"pids.max": str(max_pids)})
    except OSError as e:
        return None, f"pids cgroup ({version}) not usable: {e.strerror or e}"
    return group, f"pids cgroup {version}, pids.max={max_pids}"


def _join_new_group(group: Path, settings: Dict[str, str]) -> None:
    """Create `group`, write its `settings` files, move this process into it; on OSError the
    group is removed again before the error is raised."""
    try:
        group.mkdir(exist_ok=True)
        for name, value in settings.items():
            _write(group / name, value)
        _write(group / "cgroup.procs", str(os.getpid()))
    except OSError:
        try:
            group.rmdir()
        except OSError:
            pass
        raise


def _v1_base(controller: str) -> Optional[Path]:
    """Directory of our own group in the cgroup v1 hierarchy of `controller` (None without one)."""
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return None
    path = None
    for line in lines:
        _, ctrls, p = line.split(":", 2)
        if controller in ctrls.split(","):
            path = p
    if path is None:
        return None
    for m in _mounts():
        if "-" not in m:
            continue
        sep = m.index("-")
        if m[sep + 1] == "cgroup" and len(m) > sep + 3 and controller in m[sep + 3].split(","):
            return Path(m[4]) / path.lstrip("/")
    return None


def enter_cpu_accounting(pids_group: Optional[Path]) -> Tuple[Optional[Path], Optional[str], str]:
    """A group that counts the CPU time of this process and everything it starts, exited
    processes included: (group to remove later or None, the file to read, note). cgroup v2: the
    pids group's own cpu.stat (usage_usec, always there); v1: a new group in the cpuacct
    hierarchy (cpuacct.usage, nanoseconds). The supervisor reads it to time the runner from
    outside (bench/sandbox/witness.py)."""
    if pids_group is not None and (pids_group / "cpu.stat").is_file():
        return None, str(pids_group / "cpu.stat"), "cpu time: cgroup v2 cpu.stat"
    base = _v1_base("cpuacct")
    if base is None:
        return None, None, "no cpu accounting cgroup"
    remove_stale(base)
    group = base / f"{PREFIX}{os.getpid()}"
    try:
        _join_new_group(group, {})
    except OSError as e:
        return None, None, f"cpuacct cgroup not usable: {e.strerror or e}"
    return group, str(group / "cpuacct.usage"), "cpu time: cgroup v1 cpuacct"


def cpu_ns(usage_file: Optional[str]) -> Optional[int]:
    """CPU time (ns) used by a group so far, from the file `enter_cpu_accounting` named."""
    if not usage_file:
        return None
    try:
        with open(usage_file) as f:
            text = f.read()
    except OSError:
        return None
    if usage_file.endswith("cpu.stat"):
        for line in text.splitlines():
            if line.startswith("usage_usec"):
                return int(line.split()[1]) * 1000
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def thread_ids(usage_file: str) -> List[str]:
    """The threads of the group `usage_file` belongs to (empty where the list cannot be read)."""
    folder = os.path.dirname(usage_file)
    for name in ("cgroup.threads", "tasks"):  # v2, v1
        try:
            with open(os.path.join(folder, name)) as f:
                return f.read().split()
        except OSError:
            continue
    return []


def _any_running(usage_file: str) -> bool:
    """Whether a thread of the group `usage_file` belongs to is running or runnable (state R);
    False where its thread list cannot be read. Polled: stops at the first one."""
    # a thread that exited (no state) has its time in the group's total already
    return any(task_state(tid) == "R" for tid in thread_ids(usage_file))


# how long a reading waits for a group's threads to leave the CPU: a little over one tick at
# HZ=250 (what the kernels here run), so that a thread still on a CPU after a reply has had its
# time up to the reply counted by a tick meanwhile; FIB_WITNESS_SETTLE_MS for kernels of HZ=100
SETTLE_S = float(os.environ.get("FIB_WITNESS_SETTLE_MS", "5")) / 1e3


def settled_cpu_ns(usage_file: Optional[str], wait_s: float = SETTLE_S) -> Optional[int]:
    """`cpu_ns`, read once no thread of the group is running or runnable (waiting up to
    `wait_s`). The kernel adds a running thread's time to its group only at a tick (4 ms at
    HZ=250) or when it leaves the CPU: read while a thread runs, the total can lack up to a
    tick of its work (measured here: the usage of a busy group moves in 4 ms steps, whatever
    else reads the thread's clock first; a runner burning 6 ms after its reply was read with
    none of it, tests/security/test_sandbox_units.py). A runner still busy after its reply (with
    a round's 16 MiB of inputs to unmap, say) could so have its call left out of the reading: one
    of the two ways a 100x forgery could have passed once in CI. Past `wait_s` (a solution's busy thread; on a loaded machine a
    thread waiting for a CPU, whose time is counted already) the group is read as it stands: a
    tick has counted what ran before the wait began."""
    if not usage_file:
        return None
    end = time.monotonic() + wait_s
    while _any_running(usage_file) and time.monotonic() < end:
        time.sleep(0.0005)
    return cpu_ns(usage_file)


def leave_and_remove(group: Optional[Path]) -> None:
    """Move this process back to the parent group and remove `group` (call when it is empty)."""
    if group is None:
        return
    try:
        _write(group.parent / "cgroup.procs", str(os.getpid()))
    except OSError:
        return
    _kill_members(group)  # without a pid namespace (CUDA runners), daemonised children are still here
    # the namespace's last processes are reaped by the system's init a moment after ours died
    for _ in range(100):
        try:
            group.rmdir()
            return
        except OSError:
            time.sleep(0.02)
