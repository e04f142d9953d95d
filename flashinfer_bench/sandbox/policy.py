"""What a runner may read and write, and the limits it runs under (settings from the environment).

Environment variables (read by the runner; the worker passes its own environment on):

    FIB_SANDBOX=auto|off          off: apply nothing (the worker then refuses to evaluate unless
                                  the request allows unconfined runs); default auto
    FIB_SANDBOX_NPROC=N           processes+threads a runner may add (default 128; pids cgroup)
    FIB_SANDBOX_FSIZE_MB=N        largest file a runner may write, logs included (default 1024)
    FIB_SANDBOX_GPU_FRACTION=F    torch's per-process GPU memory fraction (default 0.9)
    FIB_SANDBOX_HOST_MEM_GB=G     resident memory of a runner and its children (default: half
                                  of the machine's memory); enforced by the supervisor
    FIB_SANDBOX_NOFILE=N          open files per process, soft and hard (default 1024)
    FIB_SANDBOX_SCRATCH_MB=N      a runner's scratch: a tmpfs of this size (default 2048)
    FIB_SANDBOX_SCRATCH_FILES=N   ... holding at most this many files (default 100000)
    FIB_SANDBOX_RO_MOUNTS=auto|1|0  a private mount namespace, read-only but for scratch and the
                                  logs, with the tmpfs scratch and (CPU runners) a private /proc;
                                  auto (default): where no GPU is visible (on the H200 a CUDA
                                  runner inside it failed CUDA init, error 304); 1 forces it on
"""
from __future__ import annotations

import glob
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List

from . import landlock as ll

# /etc entries that Python, torch, CUDA and a C compiler read; /etc as a whole holds secrets
# (shadow, ssh host keys) that a solution could print into its trace log.
ETC_READABLE = [
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "localtime", "timezone", "passwd", "group",
    "nsswitch.conf", "host.conf", "hosts", "os-release", "lsb-release", "debian_version", "alternatives",
    "mime.types", "machine-id", "protocols", "services", "gai.conf", "OpenCL", "vulkan", "nvidia", "glvnd",
    "cuda", "environment", "fonts", "matplotlibrc", "python3", "pki", "ssl", "ca-certificates",
]
SYSTEM_READABLE = ["/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/sys"]
DEV_RW = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"]


# what sandboxed code may see of its parent's environment: the toolchain, the device, our settings;
# nothing else (API tokens, cloud credentials, the user's HOME and name; issue 15). The worker's
# runner list (bench/worker.py) is this one without the build-only names.
ENV_NAMES = {
    "PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
    "PYTHONPYCACHEPREFIX", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CC", "CXX", "CUDA_HOME", "CUDA_PATH",
    "TMPDIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "FIB_ALLOW_UNCONFINED", "FIB_CPU_THREADS",
    "FIB_CUDA_ARCH", "FIB_CALIBRATE_CUPTI", "FIB_SANDBOX", "FIB_BUILD_TIMEOUT",
    # builds: compilers and their search paths
    "MAX_JOBS", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "PKG_CONFIG_PATH",
}
ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TVM_FFI_", "TILELANG_", "FIB_SANDBOX_", "NCCL_",
                "FIB_BUILD_", "NVCC_")


def allowed_environment(env: Dict[str, str]) -> Dict[str, str]:
    """The allow-listed part of `env`."""
    return {k: v for k, v in env.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}


def _env_float(name: str, default: float) -> float:
    v = os.environ.get(name, "").strip()
    try:
        return float(v) if v else default
    except ValueError:
        return default


def total_memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30


# tasks of a runner or a build before FIB_SANDBOX_NPROC: the interpreter's, torch's and the driver's
BASE_TASKS = 64


@dataclass(frozen=True)
class Settings:
    enabled: bool
    nproc_extra: int
    fsize_bytes: int
    gpu_fraction: float
    host_mem_bytes: int
    nofile: int = 1024
    scratch_bytes: int = 2048 << 20
    scratch_inodes: int = 100_000
    ro_mounts: str = "auto"

    def pids_max(self) -> int:
        """Tasks (processes and threads) a runner or a build may hold at once, its pids cgroup's
        cap: FIB_SANDBOX_NPROC beyond a base and OpenMP/inter-op pools of two per CPU."""
        return self.nproc_extra + BASE_TASKS + 2 * (os.cpu_count() or 16)

    def mounts_wanted(self, gpu: bool) -> bool:
        """The private read-only mount namespace: by default where no GPU is visible. Turned on
        with a GPU too (2026-11-23, unmeasured), it made every confined CUDA runner fail CUDA init
        on the H200 (cudaGetDeviceCount error 304, benchmarks/measured/2026-11-26-session8.md).
        Metadata changes (utime, chmod, chown, xattrs), which it refuses where it is, are refused
        everywhere by the seccomp filter, and the supervisor holds a scratch on disk to the tmpfs's
        quota (supervise.MemoryWatch); what a GPU runner lacks without it is the private /proc (it
        has no pid namespace either)."""
        if self.ro_mounts in ("1", "on", "true", "yes"):
            return True
        if self.ro_mounts in ("0", "off", "false", "no"):
            return False
        return not gpu

    @classmethod
    def from_env(cls) -> "Settings":
        mode = os.environ.get("FIB_SANDBOX", "auto").strip().lower()
        gb = _env_float("FIB_SANDBOX_HOST_MEM_GB", 0.0)
        return cls(
            enabled=mode not in ("off", "0", "false", "no", "none"),
            nproc_extra=int(_env_float("FIB_SANDBOX_NPROC", 128)),
            fsize_bytes=int(_env_float("FIB_SANDBOX_FSIZE_MB", 1024) * (1 << 20)),
            gpu_fraction=min(1.0, max(0.05, _env_float("FIB_SANDBOX_GPU_FRACTION", 0.9))),
            host_mem_bytes=int(gb * (1 << 30)) if gb > 0 else total_memory_bytes() // 2,
            nofile=max(64, int(_env_float("FIB_SANDBOX_NOFILE", 1024))),
            scratch_bytes=int(max(16.0, _env_float("FIB_SANDBOX_SCRATCH_MB", 2048)) * (1 << 20)),
            scratch_inodes=max(1000, int(_env_float("FIB_SANDBOX_SCRATCH_FILES", 100_000))),
            ro_mounts=os.environ.get("FIB_SANDBOX_RO_MOUNTS", "auto").strip().lower() or "auto",
        )


def _is_dangerous_root(p: Path) -> bool:
    """Directories never granted whole: /, the homes, /tmp, /root, /work-like parents of projects."""
    s = str(p)
    home = os.path.expanduser("~")
    return s in ("/", "/home", "/root", "/tmp", "/var", "/mnt", "/media", "/srv", home) or len(p.parts) <= 1


def python_paths() -> List[Path]:
    """Where this interpreter and its packages live (read-only for the runner)."""
    out: List[Path] = []
    for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        out.append(Path(p))
    for key in ("stdlib", "platstdlib", "purelib", "platlib", "include", "platinclude", "scripts"):
        v = sysconfig.get_paths().get(key)
        if v:
            out.append(Path(v))
    try:
        out.append(Path(site.getusersitepackages()))
    except AttributeError:
        pass
    for p in sys.path:
        if p:
            out.append(Path(p))
    pkg = Path(__file__).resolve().parents[1]  # flashinfer_bench/
    out.append(pkg)
    return [p for p in dict.fromkeys(x.resolve() if x.exists() else x for x in out) if p.exists() and not _is_dangerous_root(p)]


def proc_readable(whole: bool) -> List[str]:
    """What of /proc a sandboxed process may read. `whole`: all of it (a private procfs that shows
    only the sandbox's own processes). Otherwise every system entry (cpuinfo, meminfo, sys,
    driver/nvidia ...) and this process's own directory, but no other process's: their command
    lines, environments and open files are the host's business (issue 15). Children of this
    process cannot read their own /proc/<pid> then (subprocess falls back to closing descriptors
    one by one)."""
    if whole:
        return ["/proc"]
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return ["/proc"]
    for n in names:
        if n.isdigit() or n in ("self", "thread-self"):
            continue
        out.append(f"/proc/{n}")
    try:
        out.append(os.path.join("/proc", os.readlink("/proc/self")))
    except OSError:
        pass
    return out


def build_ruleset(
    scratch: Path, readable: Iterable[Path], extra_writable: Iterable[Path] = (),
    shm: bool = True, whole_proc: bool = False,
) -> ll.Ruleset:
    """The runner's Landlock policy: read the system, Python and the given paths; write scratch
    (and /dev/shm when `shm`: CUDA runners keep it, the supervisor removes what an evaluation
    left there). /proc: see `proc_readable`. Not the logs' folder: an evaluation's log comes as a
    descriptor (`worker._hand_log`; with write access there a runner planted other runners' logs)."""
    rs = ll.ruleset()
    rs.allow(SYSTEM_READABLE, ll.READ)
    rs.allow(proc_readable(whole_proc), ll.READ)
    rs.allow([Path("/etc") / e for e in ETC_READABLE], ll.READ)
    rs.allow(python_paths(), ll.READ)
    rs.allow([p for p in readable if not _is_dangerous_root(Path(p))], ll.READ)
    rs.allow(["/dev"], ll.READ_DIR)
    rs.allow(DEV_RW + sorted(glob.glob("/dev/nvidia*")), ll.READ_FILE | ll.WRITE_FILE | ll.IOCTL_DEV)
    if shm:
        rs.allow(["/dev/shm"], ll.READ | ll.WRITE)
    # REFER: renames between directories of scratch (Triton's cache moves a compiled kernel from
    # its temp dir into place; without it Landlock answers EXDEV)
    rs.allow([scratch], ll.READ | ll.WRITE | ll.REFER)
    rs.allow(list(extra_writable), ll.READ | ll.WRITE_PLAIN)
    return rs
