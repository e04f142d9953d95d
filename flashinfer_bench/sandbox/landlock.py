"""Landlock (Linux >= 5.13): restrict which files this thread and its future children may touch.

A ruleset names the access rights it *handles*; every handled right is denied except beneath the
paths that a rule grants it for. Restrictions stack (a later layer can only take away) and cannot
be lifted. They bind the calling thread and the threads and processes it creates afterwards, not
threads that already exist (until kernels with LANDLOCK_RESTRICT_SELF_TSYNC), so the runner applies
its first layer while it is still single-threaded. Rights are checked when a file is opened: file
descriptors opened before (CUDA's device files) keep working.

From ABI 4 the same ruleset can deny TCP bind/connect, from ABI 6 it scopes abstract unix sockets
and signals to the sandbox (a confined process cannot signal or ptrace its supervisor; ptrace of a
process outside the domain is denied from ABI 1).
"""
from __future__ import annotations

import ctypes
import errno
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List

from . import _sys

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5

NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1
RESTRICT_SELF_TSYNC = 1 << 3  # ABI 8: the ruleset binds every thread of the process

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SYM | MAKE_SOCK | MAKE_FIFO | TRUNCATE
)
# where the supervisor later reads files: plain files only (no FIFO that would block it, no symlink
# that would make it read something else)
WRITE_PLAIN = WRITE_FILE | MAKE_REG | REMOVE_FILE | TRUNCATE

_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1


class _Attr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI (0 when Landlock is missing or disabled)."""
    if not _sys.SYSCALLS_KNOWN:
        return 0
    try:
        return _sys.syscall("landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


@dataclass
class Ruleset:
    """Paths and the rights granted beneath them; `apply()` enforces it on the calling thread."""

    abi: int
    rules: Dict[str, int] = field(default_factory=dict)
    skipped: List[str] = field(default_factory=list)

    def allow(self, paths: Iterable[object], rights: int) -> None:
        for p in paths:
            s = os.path.abspath(str(p))
            if os.path.exists(s):
                self.rules[s] = self.rules.get(s, 0) | rights
            else:
                self.skipped.append(s)

    def apply(self, deny_tcp: bool = True, scope: bool = True, all_threads: bool = False) -> Dict[str, object]:
        """Enforce (sets no_new_privs, which Landlock requires). Returns what was handled.

        Landlock binds the calling thread and the threads it starts later. `all_threads` asks for
        every thread of the process (LANDLOCK_RESTRICT_SELF_TSYNC, ABI 8, Linux 7.0): a CUDA
        runner is restricted after CUDA init, when the driver's threads already exist, and code
        that runs on one of them (a host callback) would otherwise be outside the domain. On an
        older kernel the answer says "calling thread and its later threads"."""
        handled = _fs_rights(self.abi)
        attr = _Attr(handled, 0, 0)
        size = 8
        if self.abi >= 4 and deny_tcp:
            attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
            size = 16
        if self.abi >= 6 and scope:
            attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL
            size = 24
        fd = _sys.syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        try:
            for path, rights in sorted(self.rules.items()):
                try:
                    pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    self.skipped.append(path)
                    continue
                try:
                    is_dir = os.path.isdir(path)
                    allowed = rights & handled
                    if not is_dir:
                        allowed &= FILE_RIGHTS
                    rule = _PathBeneath(allowed, pfd)
                    try:
                        _sys.syscall("landlock_add_rule", fd, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
                    except OSError as e:
                        if e.errno != errno.EINVAL:
                            raise
                        self.skipped.append(path)
                finally:
                    os.close(pfd)
            _sys.prctl(_sys.PR_SET_NO_NEW_PRIVS, 1)
            threads = "calling thread and its later threads"
            if all_threads and self.abi >= 8:
                try:
                    _sys.syscall("landlock_restrict_self", fd, ctypes.c_uint32(RESTRICT_SELF_TSYNC))
                    threads = "all"
                except OSError as e:
                    if e.errno != errno.EINVAL:
                        raise
            if threads != "all":
                _sys.syscall("landlock_restrict_self", fd, ctypes.c_uint32(0))
        finally:
            os.close(fd)
        return {
            "abi": self.abi, "tcp_denied": bool(attr.handled_access_net), "scoped": bool(attr.scoped),
            "rules": len(self.rules), "threads": threads,
        }


def ruleset() -> Ruleset:
    return Ruleset(abi_version())


def describe_rules(rs: Ruleset) -> Dict[str, List[str]]:
    """{"write": [...], "read": [...]} for the record."""
    out: Dict[str, List[str]] = {"write": [], "read": []}
    for p, r in sorted(rs.rules.items()):
        out["write" if r & (WRITE_FILE | MAKE_REG) else "read"].append(p)
    return out


def existing(paths: Iterable[object]) -> List[Path]:
    return [Path(p) for p in paths if os.path.exists(str(p))]
