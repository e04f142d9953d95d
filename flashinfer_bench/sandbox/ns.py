"""Namespaces and capabilities for the runner, applied while it is still single-threaded.

* user namespace (identity-mapped: the same uid and gid, so file ownership is unchanged): what
  makes the rest possible without privileges, scopes RLIMIT_NPROC to this runner (the kernel
  counts processes per user *and* user namespace), and makes the runner's capabilities worthless
  outside it.
* network namespace: no interface but a loopback that stays down, so no TCP/UDP to anything,
  localhost included, and abstract unix sockets of the host are out of reach.
* pid namespace: the runner forks a tiny reaper that becomes pid 1 there; every process a
  solution forks lives in that namespace and is killed by the kernel when the reaper dies, which
  it does when the runner dies (PR_SET_PDEATHSIG). A fork bomb or a daemonised child cannot
  outlive its runner.
* capabilities: all dropped (bounding set, ambient, effective/permitted/inheritable), with the
  securebits that keep exec from giving root its capabilities back.
"""
from __future__ import annotations

import ctypes
import os
import signal
from typing import Any, Callable, Dict, List, Optional

from . import _sys


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter_namespaces(want_pid: bool = True) -> List[str]:
    """Unshare user+net(+pid) namespaces, falling back to fewer; returns what was entered."""
    uid, gid = os.geteuid(), os.getegid()
    tries = [
        (_sys.CLONE_NEWUSER | _sys.CLONE_NEWNET | (_sys.CLONE_NEWPID if want_pid else 0), ["userns", "netns"] + (["pidns"] if want_pid else [])),
        (_sys.CLONE_NEWNET | (_sys.CLONE_NEWPID if want_pid else 0), ["netns"] + (["pidns"] if want_pid else [])),
        (_sys.CLONE_NEWNET, ["netns"]),
    ]
    for flags, names in tries:
        try:
            _sys.unshare(flags)
        except OSError:
            continue
        if flags & _sys.CLONE_NEWUSER:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
            _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
        return names
    return []


def _close_fds_except(keep: int) -> None:
    fd = os.open(os.devnull, os.O_RDWR)
    for t in (0, 1, 2):
        os.dup2(fd, t)
    os.close(fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)


def _mirror(status: int) -> None:
    """Leave the way the process with wait status `status` left (same signal or exit code)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # neither can be handled (EINVAL)
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def fork_into_pid_namespace(on_exit: Optional[Callable[[], None]] = None) -> None:
    """Call right after unshare(CLONE_NEWPID); returns in the runner, now pid 2 of the namespace.

    A process that unshared its pid namespace cannot create threads itself, so the work moves to
    a grandchild. This process (what the supervisor started) waits and leaves the way the runner
    left (same exit code or signal), after `on_exit()`; its child is the namespace's init, which reaps orphans and
    forwards the runner's wait status. When the runner dies, init returns and the kernel kills
    every process left in the namespace. Signals sent to the process group reach all three.
    """
    rfd, wfd = os.pipe()
    init = os.fork()
    if init:  # the supervisor's child: a shim
        os.close(wfd)
        _close_fds_except(rfd)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        data = b""
        while len(data) < 4:
            chunk = os.read(rfd, 4 - len(data))
            if not chunk:
                break
            data += chunk
        _, st = os.waitpid(init, 0)
        if on_exit is not None:
            on_exit()
        _mirror(int.from_bytes(data, "little") if len(data) == 4 else st)
    # pid 1 of the new namespace
    os.close(rfd)
    try:
        _sys.prctl(_sys.PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    runner = os.fork()
    if runner == 0:
        os.close(wfd)
        _sys.prctl(_sys.PR_SET_PDEATHSIG, signal.SIGKILL)
        return  # the runner goes on
    _close_fds_except(wfd)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        try:
            pid, st = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        except InterruptedError:
            continue
        if pid == runner:
            os.write(wfd, st.to_bytes(4, "little"))
            os._exit(0)  # the kernel now kills what is left in the namespace


def host_pid() -> int:
    """This process's pid as the supervisor sees it (outermost entry of NSpid)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return os.getpid()


def set_subreaper() -> None:
    """Without a pid namespace: orphans of the solution's processes come back to the runner."""
    _sys.prctl(_sys.PR_SET_CHILD_SUBREAPER, 1)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CAP_V3 = 0x20080522
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS_LOCKED, NO_CAP_AMBIENT_RAISE, and their locks
_SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80


def effective_caps() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1


def drop_capabilities() -> Dict[str, Any]:
    """Drop every capability of this thread (and of what it starts later) for good."""
    notes: Dict[str, Any] = {}
    try:
        _sys.prctl(_sys.PR_SET_SECUREBITS, _SECUREBITS)
        notes["securebits"] = hex(_SECUREBITS)
    except OSError as e:
        notes["securebits"] = f"not set: {e.strerror}"
    try:
        last = int(open("/proc/sys/kernel/cap_last_cap").read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        try:
            _sys.prctl(_sys.PR_CAPBSET_DROP, cap)
        except OSError:
            break  # no CAP_SETPCAP: the bounding set stays; effective/permitted still go below
    try:
        _sys.prctl(_sys.PR_CAP_AMBIENT, _sys.PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass
    hdr = _CapHeader(_CAP_V3, 0)
    data = (_CapData * 2)()
    if _sys.SYSCALLS_KNOWN:
        _sys.syscall("capset", ctypes.byref(hdr), data)
    notes["effective_after"] = hex(effective_caps())
    return notes


