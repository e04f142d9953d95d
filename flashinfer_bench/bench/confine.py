"""Confinement of a runner process, in two steps around torch/CUDA initialisation.

`prepare()` runs first thing in the runner, while it is single-threaded and before torch is
imported: new user, network and pid namespaces (the runner continues as a grandchild inside them,
see `sandbox.ns`), the first Landlock layer (read the system, Python, the cache and the datasets;
write only the scratch directory, the per-evaluation log directory, /dev/shm, the NVIDIA device
files and the roofline cache), and no capabilities. Every thread torch or CUDA starts afterwards
inherits all of that.

`confine()` runs after torch/CUDA are initialised and before the first solution is loaded:
rlimits (core 0, file size, process count, on the CPU also the data segment), the GPU memory
fraction, private cache directories (HOME, TMPDIR, TRITON_HOME, CUDA_CACHE_PATH, ...), a second
Landlock layer without the roofline cache, and a seccomp filter on every thread (no new sockets,
no ptrace, no namespaces, no mounts, ...). It returns what was applied; the runner sends that to
the supervisor, which records `sandbox` in every trace's environment and refuses to evaluate in an
unconfined runner unless the request allows it.
"""
from __future__ import annotations

import os
import resource
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from ..sandbox import landlock as ll
from ..sandbox import cgroup, mounts, ns, rlimits, seccomp
from ..sandbox.policy import Settings, build_ruleset

# A solution that writes a runaway log is stopped at this file size (SIGXFSZ -> RUNTIME_ERROR).
MAX_FILE_BYTES = 8 << 30


def cache_readable(cache_dir: Path) -> List[Path]:
    """What a runner may read of the artifact cache: the published artifacts and the shim builds,
    not its `locks/` (a read-only descriptor takes an exclusive flock, and a builder of that hash
    waited for it up to 3 h while the runner was parked: `flock_cache_locks`) nor its `tmp/`
    (builds in progress). Made here, before the rules: a rule needs its path to exist."""
    paths = [cache_dir / "artifacts", cache_dir / "shim"]
    for p in paths:
        try:
            p.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass
    return paths


# what `prepare()` did, for `confine()` and the record
_STATE: Dict[str, Any] = {"prepared": False, "layers": [], "notes": {}}


def _lower(limit: int, soft: int, hard: int) -> Dict[str, Any]:
    """Set the soft limit to `soft`, never above the hard limit (which we leave alone)."""
    new_soft = soft if hard == resource.RLIM_INFINITY else min(soft, hard)
    resource.setrlimit(limit, (new_soft, hard))
    return {"soft": new_soft, "hard": hard}


def _task_count() -> int:
    """Threads of this process plus the two shims above it in the pid namespace."""
    try:
        return len(os.listdir("/proc/self/task")) + 2
    except OSError:
        return 64


def prepare(scratch_dir: Path, cache_dir: Path, readable: List[Path]) -> Dict[str, Any]:
    """Early, single-threaded part (see the module docstring). Returns in the confined runner."""
    settings = Settings.from_env()
    _STATE.update(settings=settings, scratch=Path(scratch_dir), cache_dir=Path(cache_dir),
                  readable=[Path(p) for p in readable])
    if not settings.enabled:
        _STATE["notes"]["disabled"] = "FIB_SANDBOX=off"
        return _STATE
    Path(scratch_dir).mkdir(parents=True, exist_ok=True)
    _STATE["notes"]["nvidia_uvm"] = _ensure_nvidia_device_files()
    # caches and temp files of torch, CUDA and Triton go to scratch from the start (CUDA init too)
    _STATE["private_dirs"] = _private_dirs(Path(scratch_dir))
    roofline = Path(cache_dir) / "roofline"
    try:
        roofline.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    # a hard cap on processes and threads (RLIMIT_NPROC does not bind root), taken while still
    # root in the initial namespaces; the shim below removes the group when the runner is gone
    pids_max = settings.pids_max()
    group, note = cgroup.enter_limited(pids_max)
    _STATE["notes"]["pids"] = note
    if group is not None:
        _STATE["layers"].append("pidscg")
        _STATE["pids_max"] = pids_max
    # the CPU time of everything this runner runs, readable by the supervisor (its witness)
    cpu_group, usage, cpu_note = cgroup.enter_cpu_accounting(group)
    _STATE["notes"]["cpu_usage_file"] = usage
    _STATE["notes"]["cpu_accounting"] = cpu_note
    # a pid namespace entered before CUDA init breaks the driver (cudaGetDeviceCount error 304,
    # measured on the H100 machine); user+net namespaces keep CUDA working, so only CPU runners
    # (CUDA_VISIBLE_DEVICES="" from the worker) also get a pid namespace
    names = ns.enter_namespaces(want_pid=os.environ.get("CUDA_VISIBLE_DEVICES", None) == "")
    _STATE["layers"] += names
    if "pidns" in names:
        # from here on we are the runner, pid 2 of the namespace
        ns.fork_into_pid_namespace(on_exit=lambda: [cgroup.leave_and_remove(g) for g in (cpu_group, group)])
    else:
        try:
            ns.set_subreaper()
        except OSError as e:
            _STATE["notes"]["subreaper"] = e.strerror
    gpu_runner = os.environ.get("CUDA_VISIBLE_DEVICES", None) != ""
    _STATE["host_pid"] = ns.host_pid()  # before a private /proc hides the host's numbering
    _STATE["whole_proc"] = False
    if settings.mounts_wanted(gpu_runner):
        # everything read-only but scratch (a bounded tmpfs), the roofline cache (and
        # /dev/shm for CUDA): no metadata changes outside scratch; a private /proc in a pid namespace
        try:
            writable = [p for p in (roofline, Path("/dev/shm") if gpu_runner else None) if p is not None]
            info = mounts.apply(writable, scratch=Path(scratch_dir), scratch_bytes=settings.scratch_bytes,
                                scratch_inodes=settings.scratch_inodes, new_proc="pidns" in names and mounts.new_proc_allowed())
            _STATE["layers"].append("mountns")
            _STATE["notes"]["mounts"] = info
            _STATE["whole_proc"] = info.get("proc") == "private"
            _STATE["private_dirs"] = _private_dirs(Path(scratch_dir))  # again, inside the tmpfs
        except OSError as e:
            _STATE["notes"]["mounts"] = f"failed: {e}"
    else:
        _STATE["notes"]["mounts"] = "off (FIB_SANDBOX_RO_MOUNTS; default off where a GPU is visible)"
    if gpu_runner and ll.abi_version() > 0:
        # On the H100 machine a runner restricted before CUDA init failed cudaGetDeviceCount
        # (error 304): the driver reads and opens more than the policy allows at init. CUDA
        # runners therefore get their filesystem rules in confine(), after CUDA is up.
        _STATE["notes"]["landlock"] = "deferred until after CUDA init"
        _STATE["defer_landlock"] = True
    elif ll.abi_version() > 0:
        try:
            # a CPU runner has no use for /dev/shm (a tmpfs file would outlive it, unseen by the
            # memory watch); CUDA runners keep it and the supervisor cleans up after each evaluation
            rs = build_ruleset(Path(scratch_dir), [*cache_readable(Path(cache_dir)), *map(Path, readable)], [roofline],
                               shm=gpu_runner, whole_proc=_STATE["whole_proc"])
            info = rs.apply()
            _STATE["layers"].append("landlock")
            _STATE["notes"]["landlock"] = {**info, **ll.describe_rules(rs)}
        except OSError as e:
            _STATE["notes"]["landlock"] = f"failed: {e}"
    else:
        _STATE["notes"]["landlock"] = "unavailable (kernel without Landlock, or not x86_64)"
    try:
        _STATE["notes"]["caps"] = ns.drop_capabilities()
        _STATE["layers"].append("nocaps")
    except OSError as e:
        _STATE["notes"]["caps"] = f"failed: {e}"
    _STATE["prepared"] = True
    return _STATE


def _private_dirs(scratch: Path) -> Dict[str, str]:
    """Caches and temp files of libraries go to the scratch directory, not to $HOME."""
    env = {
        "TMPDIR": scratch, "HOME": scratch / "home", "XDG_CACHE_HOME": scratch / "cache",
        "TRITON_HOME": scratch / "triton_home", "CUDA_CACHE_PATH": scratch / "nv",
        "TORCHINDUCTOR_CACHE_DIR": scratch / "inductor", "TORCH_EXTENSIONS_DIR": scratch / "torch_extensions",
    }
    out = {}
    for k, v in env.items():
        Path(v).mkdir(parents=True, exist_ok=True)
        os.environ[k] = str(v)
        out[k] = str(v)
    import tempfile

    tempfile.tempdir = None  # re-read TMPDIR
    sys.dont_write_bytecode = True
    return out


def _ensure_nvidia_device_files() -> str:
    """Create /dev/nvidia-uvm while we still may: CUDA's own attempt (the setuid nvidia-modprobe)
    cannot work once no_new_privs is set, and a fresh machine may not have it yet."""
    if not any(Path("/dev").glob("nvidia[0-9]*")) or Path("/dev/nvidia-uvm").exists():
        return "present" if Path("/dev/nvidia-uvm").exists() else "no NVIDIA GPU"
    import shutil
    import subprocess

    exe = shutil.which("nvidia-modprobe")
    if exe is None:
        return "missing, and no nvidia-modprobe to create it"
    try:
        subprocess.run([exe, "-u", "-c=0"], check=False, timeout=30, capture_output=True)
    except (OSError, subprocess.SubprocessError) as e:
        return f"nvidia-modprobe failed: {e}"
    return "created" if Path("/dev/nvidia-uvm").exists() else "nvidia-modprobe did not create it"


def _gpu_fraction(fraction: float) -> Optional[float]:
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    torch.cuda.set_per_process_memory_fraction(fraction, torch.cuda.current_device())
    return fraction


def confine(scratch_dir: Path, readable: List[Path]) -> Dict[str, Any]:
    """Late part: limit this process; return a description of what was applied (recorded by the worker)."""
    scratch_dir = Path(scratch_dir)
    scratch_dir.mkdir(parents=True, exist_ok=True)
    settings: Settings = _STATE.get("settings") or Settings.from_env()
    layers: List[str] = list(_STATE["layers"])
    notes: Dict[str, Any] = dict(_STATE["notes"])
    limits: Dict[str, Any] = {}
    # no core files: a crashing solution must not spend seconds writing gigabytes of core
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))
    limits["core"] = 0
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    limits["fsize"] = _lower(resource.RLIMIT_FSIZE, settings.fsize_bytes if settings.enabled else MAX_FILE_BYTES, hard)
    os.chdir(scratch_dir)
    applied: Dict[str, Any] = {"scratch_dir": str(scratch_dir), "readable": [str(p) for p in readable], "cwd": str(scratch_dir)}
    if settings.enabled:
        _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        limits["nproc"] = _lower(resource.RLIMIT_NPROC, _task_count() + settings.nproc_extra, hard)
        limits["nproc"]["enforced"] = os.geteuid() != 0  # the kernel exempts root, even in a user namespace
        if "pidscg" in layers:
            limits["pids_cgroup_max"] = _STATE.get("pids_max")
        torch = sys.modules.get("torch")
        on_cpu = torch is None or not torch.cuda.is_initialized()
        if on_cpu:
            # CUDA reserves terabytes of address space and maps driver memory as data, so the
            # data-segment limit is for the CPU runner only; the supervisor watches RSS on both
            vm_data = _vm_data_bytes()
            _, hard = resource.getrlimit(resource.RLIMIT_DATA)
            limits["data"] = _lower(resource.RLIMIT_DATA, vm_data + settings.host_mem_bytes, hard)
        limits["host_rss_bytes"] = settings.host_mem_bytes
        frac = _gpu_fraction(settings.gpu_fraction)
        if frac is not None:
            limits["gpu_memory_fraction"] = frac
        applied["private_dirs"] = _STATE.get("private_dirs") or _private_dirs(scratch_dir)
        os.environ["FIB_SANDBOX_SCRATCH"] = str(scratch_dir)  # compile.load copies caches it must write here
        if _STATE.get("defer_landlock"):
            st = _STATE
            try:
                rs = build_ruleset(scratch_dir, [*cache_readable(st["cache_dir"]), *st["readable"], *map(Path, readable)],
                                   whole_proc=st.get("whole_proc", False))
                # CUDA's threads exist by now: bind them too where the kernel can (docs/security.md)
                info = rs.apply(all_threads=True)
                layers.append("landlock")
                notes["landlock"] = {**info, **ll.describe_rules(rs), "applied": "after CUDA init"}
            except OSError as e:
                notes["landlock"] = f"failed after CUDA init: {e}"
        elif "landlock" in layers:
            st = _STATE
            try:
                build_ruleset(scratch_dir, [*cache_readable(st["cache_dir"]), *st["readable"], *map(Path, readable)],
                              shm=False, whole_proc=st.get("whole_proc", False)).apply()
            except OSError as e:
                notes["landlock_layer2"] = f"failed: {e}"
        # open files, soft and hard: descriptors are kernel memory no memory watch sees, and the
        # file table is the host's (issue 15: exhausting descriptors)
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        n = settings.nofile if hard == resource.RLIM_INFINITY else min(settings.nofile, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
        limits["nofile"] = n
        limits["sigpending"] = rlimits.limit_queued_signals()
        if seccomp.available():
            try:
                notes["seccomp"] = seccomp.install(deny_memfd=on_cpu)
                layers.append("seccomp")
            except OSError as e:
                notes["seccomp"] = f"failed: {e}"
        else:
            notes["seccomp"] = "unavailable (not x86_64)"
    else:
        os.environ["TMPDIR"] = str(scratch_dir)
    layers.append("rlimits")
    applied["rlimits"] = limits
    fs_ok = "landlock" in layers
    net_ok = "netns" in layers or "seccomp" in layers
    missing = ([] if fs_ok else ["filesystem (Landlock)"]) + ([] if net_ok else ["network (netns or seccomp)"])
    order = ["landlock", "seccomp", "mountns", "netns", "pidns", "userns", "nocaps", "pidscg", "rlimits"]
    applied.update(
        sandbox="+".join(x for x in order if x in layers) if settings.enabled else "none",
        confined=not missing and settings.enabled,
        missing=missing if settings.enabled else ["everything (FIB_SANDBOX=off)"],
        layers=layers, notes=notes,
    )
    return applied


def _vm_data_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def host_pid() -> int:
    """This runner's pid as the supervisor sees it (it is pid 2 inside its own pid namespace)."""
    return _STATE.get("host_pid") or ns.host_pid()
