"""Confinement of a build child: the solution's code runs here too (the entry module's body at
import, a Triton warm-up), so it gets the runner's limits before any of it runs (issue 15).

Writes only the build's own directory (sources, staging, caches, the result), reads the system,
Python and the toolchain, and of /proc only system entries and its own directory (no other
process's command line or environment); no sockets, ptrace, namespaces, mounts or extended
attributes (seccomp); no capabilities; an allow-listed environment (no exported secrets); a
private mount namespace where everything but the build directory is read-only (no utime, chmod,
setxattr on anything outside; where no GPU is visible, see FIB_SANDBOX_RO_MOUNTS; seccomp refuses
metadata changes everywhere); no core files, a runner's cap on tasks (pids cgroup), the lowest
CPU priority (SCHED_IDLE: builds run beside GPU measurements; CPU ones wait for them, build.py),
at most FIB_SANDBOX_NOFILE open files; HOME and TMPDIR inside the build directory; orphans come
back to this process (subreaper) and every process the build started is killed when it ends. On
a GPU machine CUDA is initialised first (Landlock before CUDA init broke the driver on the H100
machine, see bench/confine.py).

The trusted parent then reads and publishes what the build left: `sanitize_build_dir` removes
every symlink and special file first, so that nothing planted there can make the parent read or
write a file elsewhere (a `manifest.json` linked to another solution's source, a build log linked
to a secret: both worked before).
"""
from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path
from typing import Any, Dict, List

from ..sandbox import cgroup, mounts, ns, rlimits, seccomp
from ..sandbox import landlock as ll
from ..sandbox.policy import Settings, allowed_environment, build_ruleset
from ..sandbox.procfs import task_state


def confine_build(work_dir: Path) -> Dict[str, Any]:
    """Confine this (build child) process to `work_dir`; returns what was applied."""
    work_dir = Path(work_dir)
    layers: List[str] = []
    notes: Dict[str, Any] = {}
    settings = Settings.from_env()
    if not settings.enabled:
        return {"sandbox": "none", "notes": {"disabled": "FIB_SANDBOX=off"}}
    # the build's tasks capped as a runner's (pids cgroup: RLIMIT_NPROC does not bind root); 1500
    # threads of a build started where a runner gets ~200 (`build_task_flood`). Taken while still
    # root in the initial namespaces; the next runner's or build's entry removes the group
    group, notes["pids"] = cgroup.enter_limited(settings.pids_max())
    if group is not None:
        layers.append("pidscg")
    notes["priority"] = rlimits.lowest_priority()
    kept = allowed_environment(dict(os.environ))
    os.environ.clear()
    os.environ.update(kept)
    for k, sub in (("HOME", "home"), ("TMPDIR", "tmp"), ("XDG_CACHE_HOME", "xdg_cache"), ("TORCH_EXTENSIONS_DIR", "torch_ext")):
        (work_dir / sub).mkdir(parents=True, exist_ok=True)
        os.environ[k] = str(work_dir / sub)
    import tempfile

    tempfile.tempdir = None
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = settings.nofile if hard == resource.RLIM_INFINITY else min(settings.nofile, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    rlimits.limit_queued_signals()
    # one file's size (a sparse 1 TiB file was published with the artifact: `build_disk_fill`);
    # the whole build directory's is the parent's check before publishing (build.BUILD_MAX_MB)
    fsize = int(os.environ.get("FIB_BUILD_FSIZE_MB", "2048")) << 20
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize) if hard == resource.RLIM_INFINITY else (min(fsize, hard), hard))
    try:
        ns.set_subreaper()
        layers.append("subreaper")
    except OSError as e:
        notes["subreaper"] = e.strerror
    gpu = _gpu_visible()
    if gpu:
        notes["cuda_init"] = _init_cuda()
    if settings.mounts_wanted(gpu):
        try:
            if os.geteuid() != 0:  # without CAP_SYS_ADMIN: a user namespace of our own first
                ns.enter_namespaces(want_pid=False)
            notes["mounts"] = mounts.apply([work_dir])
            layers.append("mountns")
        except OSError as e:
            notes["mounts"] = f"failed: {e}"
    if ll.abi_version() > 0:
        try:
            # after CUDA init on a GPU machine: bind the driver's threads too where the kernel can
            notes["landlock"] = build_ruleset(work_dir, [], shm=False, whole_proc=False).apply(all_threads=gpu)
            layers.append("landlock")
        except OSError as e:
            notes["landlock"] = f"failed: {e}"
    else:
        notes["landlock"] = "unavailable"
    try:
        notes["caps"] = ns.drop_capabilities()
        layers.append("nocaps")
    except OSError as e:
        notes["caps"] = f"failed: {e}"
    if seccomp.available():
        try:
            seccomp.install()
            layers.append("seccomp")
        except OSError as e:
            notes["seccomp"] = f"failed: {e}"
    return {"sandbox": "+".join(layers) or "none", "notes": notes}


def sanitize_build_dir(root: Path) -> List[str]:
    """Remove every symlink and special file (FIFO, socket, device) under `root`, which a build
    child left for its trusted parent; returns what was removed (relative paths). Call after the
    child and everything it started are gone, before the parent reads or writes anything there."""
    import stat

    removed: List[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in list(dirnames) + filenames:
            p = os.path.join(dirpath, name)
            try:
                mode = os.lstat(p).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
                continue
            try:
                os.unlink(p)
                removed.append(os.path.relpath(p, root))
            except OSError:
                pass
            if name in dirnames:
                dirnames.remove(name)
    return removed


def _gpu_visible() -> bool:
    return os.environ.get("CUDA_VISIBLE_DEVICES", None) != "" and any(Path("/dev").glob("nvidia[0-9]*"))


def _init_cuda() -> str:
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.init()
            return "initialised before Landlock"
        return "no CUDA device"
    except (ImportError, RuntimeError) as e:
        return f"failed: {e}"


def _children(pid: int) -> List[int]:
    """Live children of this process (orphans of the build come back to it: it is their
    subreaper), read from its own /proc entry, the only one it may read."""
    out = []
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
        for k in kids:
            if task_state(k) != "Z":  # None, not readable from here: alive as far as we know
                out.append(k)
    return out


def kill_leftovers(rounds: int = 20) -> int:
    """SIGKILL every process the build left (they are our children: we are their subreaper)."""
    me = os.getpid()
    killed = 0
    for _ in range(rounds):
        kids = _children(me)
        if not kids:
            break
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)
    return killed


# what a build child may report about itself (its `info`); anything else it writes into its
# result is dropped, and none of it may override what the parent knows (hash, entry point ...)
CHILD_INFO_KEYS = {
    "package", "triton_backend", "triton_cache", "tilelang_cache", "loadable_here", "warmup_axes", "warmup_note",
    "build_sandbox", "killed_leftovers", "library", "python_module", "namespaces", "note", "build_process",
}


INFO_DEPTH = 4


def _shallow(v: Any, depth: int) -> bool:
    """Whether `v` is JSON nested at most `depth` containers deep."""
    if isinstance(v, dict):
        return depth > 0 and all(_shallow(x, depth - 1) for x in v.values())
    if isinstance(v, list):
        return depth > 0 and all(_shallow(x, depth - 1) for x in v)
    return True


def child_info(info: Any) -> Dict[str, Any]:
    """The part of a build child's self-report the parent may record: known keys only, cache
    directories as plain names inside the artifact."""
    if not isinstance(info, dict):
        return {}
    # values nested a few levels at most: a list nested ~950 deep under `note` went into the
    # manifest, and re-reading it raised RecursionError out of build() (`build_info_deep`)
    out = {k: v for k, v in info.items() if k in CHILD_INFO_KEYS and _shallow(v, INFO_DEPTH)}
    for k in ("triton_cache", "tilelang_cache", "library"):
        v = out.get(k)
        if v is None:
            continue
        norm = os.path.normpath(v) if isinstance(v, str) and v else ".."
        if os.path.isabs(norm) or norm == ".." or norm.startswith("../"):
            out.pop(k)  # a path leaving the artifact
    return out
