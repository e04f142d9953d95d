"""A private mount namespace: everything read-only but the few writable places, a bounded tmpfs
scratch, and (inside a pid namespace) a /proc that shows only the sandbox's own processes.

Landlock decides which files may be *opened*; it does not govern metadata: utime, chmod, chown
and setxattr on a dataset file all succeeded from a confined runner (issue 15). A read-only mount
refuses every one of them (EROFS), whatever the syscall, so the rule is general: outside the
places listed as writable, nothing on any filesystem can change. The namespace is the calling
process's own (and its children's), dies with them, and changes nothing the host sees.

* `/` and every mount below it: read-only and nosuid (`mount_setattr(AT_RECURSIVE)`, Linux >=
  5.12); device nodes (/dev/null, /dev/nvidia*) keep working on a read-only mount.
* the writable places: bind mounts of themselves, made writable again (mounts made here are not
  locked, unlike those inherited from the parent namespace).
* scratch: a tmpfs of `scratch_bytes` and `scratch_inodes` (a hard quota on bytes and files; it
  is gone when the last process of the namespace is, so nothing to clean), in huge pages where a
  file covers them (`huge=within_size`, when the kernel has them). Its pages are memory: the
  supervisor counts them with the runner's (`bench/sandbox/supervise.py`).
* /proc: a new procfs mount when the caller is in a pid namespace of its own: the host's
  processes (their command lines, environments, open files) are not there to be read.

Needs CAP_SYS_ADMIN over the current user namespace (the runner's fresh user namespace, or root
for a build child) and a kernel with mount_setattr; `apply()` raises OSError otherwise and the
caller records why.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Dict, Iterable, List, Optional

from . import _sys

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
_NR_MOUNT_SETATTR = 442

_libc = _sys._libc
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.mount.restype = ctypes.c_int


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _mount(source: Optional[str], target: str, fstype: Optional[str], flags: int, data: Optional[str] = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount({source!r}, {target!r}, {fstype!r}): {os.strerror(e)}")


def _setattr(path: str, attr_set: int, attr_clr: int, recursive: bool) -> None:
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    r = _libc.syscall(ctypes.c_long(_NR_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), path.encode(),
                      ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)))
    if r != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount_setattr({path!r}): {os.strerror(e)}")


def new_proc_allowed() -> bool:
    """A fresh procfs shows the processes of the caller's pid namespace: only worth mounting (and
    only permitted) when the caller is in a pid namespace of its own."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return len(line.split()) > 2
    except OSError:
        pass
    return False


def apply(
    writable: Iterable[Path], scratch: Optional[Path] = None, scratch_bytes: int = 0, scratch_inodes: int = 0,
    new_proc: bool = False,
) -> Dict[str, object]:
    """Enter a new mount namespace and make it read-only but `writable` (and `scratch`, mounted as
    a bounded tmpfs when `scratch_bytes` > 0). Returns what was done, for the record."""
    if not _sys.SYSCALLS_KNOWN:
        raise OSError(38, "mount_setattr: syscall number unknown on this architecture")
    _sys.unshare(_sys.CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    done: Dict[str, object] = {}
    rw: List[str] = []
    if scratch is not None:
        s = str(Path(scratch).resolve())
        if scratch_bytes > 0:
            opts = f"size={scratch_bytes},mode=0700" + (f",nr_inodes={scratch_inodes}" if scratch_inodes > 0 else "")
            # huge pages for files that cover them: the supervisor's witness maps its inputs from
            # here, and mapping 36 MiB cost 2.4 ms in 4 KiB pages, 0.03 ms in 2 MiB ones (a
            # kernel without shmem huge pages refuses the option: then without)
            try:
                _mount("fib-scratch", s, "tmpfs", MS_NOSUID | MS_NODEV, opts + ",huge=within_size")
                huge = "within_size"
            except OSError:
                _mount("fib-scratch", s, "tmpfs", MS_NOSUID | MS_NODEV, opts)
                huge = "never"
            done["scratch_tmpfs"] = {"bytes": scratch_bytes, "inodes": scratch_inodes, "huge": huge}
        else:
            _mount(s, s, None, MS_BIND | MS_REC)
        rw.append(s)
    for p in writable:
        s = str(Path(p).resolve())
        if not os.path.exists(s) or s in rw:
            continue
        _mount(s, s, None, MS_BIND | MS_REC)
        rw.append(s)
    if new_proc:
        try:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            done["proc"] = "private"
        except OSError as e:  # e.g. a container whose /proc has masked paths: Landlock narrows it
            done["proc"] = f"not private: {e.strerror or e}"
    _setattr("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, recursive=True)
    for s in rw:
        _setattr(s, 0, MOUNT_ATTR_RDONLY, recursive=True)
    done["read_only"] = "/ (recursive)"
    done["writable"] = rw
    # the working directory still names the directory under the mounts just made (a build's own
    # directory under its bind mount, a runner's scratch under its tmpfs): relative writes there
    # failed with EROFS; entered again by path, it is the writable mount's
    try:
        os.chdir(os.getcwd())
    except OSError:
        pass
    return done
