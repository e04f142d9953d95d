"""Raw Linux calls the sandbox needs, through ctypes (no dependency beyond libc).

Only x86_64 syscall numbers are known here; on another architecture the callers see
`SYSCALLS_KNOWN == False` and skip what needs a raw syscall (Landlock, seccomp).
"""
from __future__ import annotations

import ctypes
import os
import platform
from typing import Any

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.restype = ctypes.c_int
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

SYSCALLS_KNOWN = platform.machine() == "x86_64"

# x86_64 syscall numbers
NR = {
    "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446,
    "seccomp": 317, "capget": 125, "capset": 126,
}

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000


def syscall(name: str, *args: Any) -> int:
    """A raw syscall by name; raises OSError with errno on failure."""
    r = _libc.syscall(ctypes.c_long(NR[name]), *args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{name}: {os.strerror(e)}")
    return r


def prctl(option: int, a2: int = 0, a3: int = 0, a4: int = 0, a5: int = 0) -> int:
    r = _libc.prctl(option, a2, a3, a4, a5)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl({option}): {os.strerror(e)}")
    return r


def unshare(flags: int) -> None:
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"unshare({flags:#x}): {os.strerror(e)}")
