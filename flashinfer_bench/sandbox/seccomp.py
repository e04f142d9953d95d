"""A seccomp-BPF filter for the runner: no new sockets, no ways around the other layers.

Installed with SECCOMP_FILTER_FLAG_TSYNC, so it binds every thread of the process (also those that
torch and CUDA started before) and everything they start. Denied calls fail with an errno rather
than killing the process, so a solution that tries sees a Python exception in its own log.

Denied: socket() of any family (no network, no connection to the worker's unix socket) and
socketpair() (no descriptors parked in flight), ptrace and cross-process memory access, namespaces (unshare/setns, clone with
CLONE_NEW*; clone3 answers ENOSYS so libc falls back to clone, whose flags we can see), mounts,
kernel modules, kexec, bpf, perf events, keyrings, userfaultfd, io_uring (its requests would bypass
this filter), open_by_handle_at, reboot, swap, clock setting, a file's metadata (mode, owner,
times, extended attributes: by path, descriptor or *at call; Landlock does not govern metadata),
memfd_secret (memory no one else can see), System V IPC and POSIX message queues (they outlive the
process, mapped by nobody), inotify and the fcntl commands that hold other processes up or use up
what the host's user shares (leases, directory notifications, pipe sizes: `FCNTL_DENIED`),
unsetting the orphans' reaper (`PRCTL_DENIED`), and any call that acts on another process by its
id (its priority, CPU affinity, scheduling class, NUMA pages, resource limits: `SELF_ONLY`). Any
non-x86_64 syscall ABI (i386 via int 0x80, x32) is denied as a whole.

`install(deny_memfd=True)` also denies memfd_create: an anonymous file's pages are shared memory
that no process's resident set shows, so a CPU runner (which has no use for it) may not make one;
CUDA runners keep it and the supervisor counts the memory such files hold (`supervise.MemoryWatch`).
"""
from __future__ import annotations

import ctypes
import errno
from typing import Dict, List, Tuple

from . import _sys

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
_SET_MODE_FILTER = 1
_FLAG_TSYNC = 1
_NS_FLAGS = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME

DENIED: Dict[str, Tuple[int, int]] = {
    # name: (x86_64 number, errno)
    "socket": (41, errno.EACCES),
    # a socketpair of its own carries descriptors in flight (SCM_RIGHTS, never received): they
    # count against the host user's `unix_inflight`, not the runner's table, and a parked runner
    # held ~1200 pipes that way, the user's whole allowance (`pipe_pages_parked`: a process of that
    # user without capabilities could pass no descriptor; the worker hands each evaluation its log so)
    "socketpair": (53, errno.EACCES),
    "ptrace": (101, errno.EPERM),
    "process_vm_readv": (310, errno.EPERM),
    "process_vm_writev": (311, errno.EPERM),
    "pidfd_getfd": (438, errno.EPERM),
    "kcmp": (312, errno.EPERM),
    "unshare": (272, errno.EPERM),
    "setns": (308, errno.EPERM),
    "clone3": (435, errno.ENOSYS),
    "mount": (165, errno.EPERM),
    "umount2": (166, errno.EPERM),
    "pivot_root": (155, errno.EPERM),
    "chroot": (161, errno.EPERM),
    "open_tree": (428, errno.EPERM),
    "move_mount": (429, errno.EPERM),
    "fsopen": (430, errno.EPERM),
    "fsconfig": (431, errno.EPERM),
    "fsmount": (432, errno.EPERM),
    "fspick": (433, errno.EPERM),
    "mount_setattr": (442, errno.EPERM),
    "init_module": (175, errno.EPERM),
    "finit_module": (313, errno.EPERM),
    "delete_module": (176, errno.EPERM),
    "kexec_load": (246, errno.EPERM),
    "kexec_file_load": (320, errno.EPERM),
    "bpf": (321, errno.EPERM),
    "perf_event_open": (298, errno.EPERM),
    "add_key": (248, errno.EPERM),
    "request_key": (249, errno.EPERM),
    "keyctl": (250, errno.EPERM),
    "userfaultfd": (323, errno.EPERM),
    "io_uring_setup": (425, errno.EPERM),
    "io_uring_enter": (426, errno.EPERM),
    "io_uring_register": (427, errno.EPERM),
    "open_by_handle_at": (304, errno.EPERM),
    "name_to_handle_at": (303, errno.EPERM),
    "reboot": (169, errno.EPERM),
    "swapon": (167, errno.EPERM),
    "swapoff": (168, errno.EPERM),
    "acct": (163, errno.EPERM),
    "syslog": (103, errno.EPERM),
    "settimeofday": (164, errno.EPERM),
    "clock_settime": (227, errno.EPERM),
    "adjtimex": (159, errno.EPERM),
    "clock_adjtime": (305, errno.EPERM),
    "quotactl": (179, errno.EPERM),
    "fanotify_init": (300, errno.EPERM),
    "iopl": (172, errno.EPERM),
    "ioperm": (173, errno.EPERM),
    "setxattr": (188, errno.EPERM),
    "lsetxattr": (189, errno.EPERM),
    "fsetxattr": (190, errno.EPERM),
    "removexattr": (197, errno.EPERM),
    "lremovexattr": (198, errno.EPERM),
    "fremovexattr": (199, errno.EPERM),
    "setxattrat": (463, errno.EPERM),
    "removexattrat": (466, errno.EPERM),
    "memfd_secret": (447, errno.EPERM),
    # a file's mode, owner and times, by path, by descriptor and by the *at calls: Landlock governs
    # opening files, not their metadata, and the read-only mount namespace that refuses these is
    # not there for CUDA runners (it broke CUDA init on the H200) nor with FIB_SANDBOX_RO_MOUNTS=0.
    # Denied everywhere, scratch included: one rule on every device (compile.load copies without
    # metadata; a linker's chmod of its output fails quietly, the output still loads)
    "chmod": (90, errno.EPERM),
    "fchmod": (91, errno.EPERM),
    "chown": (92, errno.EPERM),
    "fchown": (93, errno.EPERM),
    "lchown": (94, errno.EPERM),
    "utime": (132, errno.EPERM),
    "utimes": (235, errno.EPERM),
    "fchownat": (260, errno.EPERM),
    "futimesat": (261, errno.EPERM),
    "fchmodat": (268, errno.EPERM),
    "utimensat": (280, errno.EPERM),
    "fchmodat2": (452, errno.EPERM),
    # System V IPC and POSIX message queues: a segment detached but not removed, or a queue, lives
    # on after its runner in the host's IPC namespace, mapped by no process (no memory watch sees
    # it), and carries data from one evaluation to the next (`sysv_ipc_stash`: 64 MiB left behind)
    "shmget": (29, errno.EPERM),
    "shmat": (30, errno.EPERM),
    "shmctl": (31, errno.EPERM),
    "semget": (64, errno.EPERM),
    "semop": (65, errno.EPERM),
    "semctl": (66, errno.EPERM),
    "msgget": (68, errno.EPERM),
    "msgsnd": (69, errno.EPERM),
    "msgrcv": (70, errno.EPERM),
    "msgctl": (71, errno.EPERM),
    "semtimedop": (220, errno.EPERM),
    "mq_open": (240, errno.EPERM),
    "mq_unlink": (241, errno.EPERM),
    "mq_timedsend": (242, errno.EPERM),
    "mq_timedreceive": (243, errno.EPERM),
    "mq_notify": (244, errno.EPERM),
    "mq_getsetattr": (245, errno.EPERM),
    # another process's memory, by pidfd (its pages paged out: a slower reference)
    "process_madvise": (440, errno.EPERM),
    "process_mrelease": (448, errno.EPERM),
    # inotify instances are counted per user, and a runner's user is the host's: a parked runner
    # held all 128 of them and every other process of that user got EMFILE (`user_quota_parked`)
    "inotify_init": (253, errno.EPERM),
    "inotify_init1": (294, errno.EPERM),
}
# fcntl commands refused (x86_64 fcntl is 72; the command is argument 1): a read lease
# (F_SETLEASE) needs only a read-only descriptor of a file its user owns, and a runner's user owns
# the dataset: while a parked runner held one, a trusted writer opening that file to append
# waited 46 s (`lease_dataset_files`); F_NOTIFY is the same family (directory notifications); a
# pipe grown with F_SETPIPE_SZ counts against the user's pipe pages, over whose soft limit every
# new pipe of an unprivileged process of that user got one page (`user_quota_parked`)
FCNTL = 72
FCNTL_DENIED = {"F_SETLEASE": 1024, "F_NOTIFY": 1026, "F_SETPIPE_SZ": 1031}
# prctl options refused (x86_64 prctl is 157; the option is argument 0): the runner and the build
# make themselves their orphans' reaper before this filter, and a solution that unset it and
# double-forked left a daemon to init, out of every walk of the tree (`build_unreaped_daemon`: it
# outlived its build, rewrote the published manifest and overwrote a file through a symlink)
PRCTL = 157
PRCTL_DENIED = {"PR_SET_CHILD_SUBREAPER": 36}
# calls refused for some values of one argument: name: (number, argument index, {value name: value})
ARG_DENIED: Dict[str, Tuple[int, int, Dict[str, int]]] = {
    "fcntl": (FCNTL, 1, FCNTL_DENIED),
    "prctl": (PRCTL, 0, PRCTL_DENIED),
}
# Calls that act on a process named by an argument: allowed on the caller itself only (that
# argument 0). A GPU runner has no pid namespace (it broke CUDA init), and a process of the same
# user may lower another's priority, pin it to one CPU, give it SCHED_IDLE, page its memory to
# another NUMA node or set its resource limits (an open-file limit of 8 on the worker, a CPU-time
# limit on the reference runner): `tamper_other_processes`. name: (x86_64 number, (argument
# index, the value it must have), ...): the caller's own process, never its group or its user
SELF_ONLY: Dict[str, Tuple[int, Tuple[Tuple[int, int], ...]]] = {
    "setpriority": (141, ((0, 0), (1, 0))),  # PRIO_PROCESS, who 0 (PRIO_USER 0: every process of the user)
    "sched_setparam": (142, ((0, 0),)),
    "sched_setscheduler": (144, ((0, 0),)),
    "sched_setaffinity": (203, ((0, 0),)),
    "ioprio_set": (251, ((0, 1), (1, 0))),  # IOPRIO_WHO_PROCESS, who 0
    "migrate_pages": (256, ((0, 0),)),
    "move_pages": (279, ((0, 0),)),
    "prlimit64": (302, ((0, 0),)),
    "sched_setattr": (314, ((0, 0),)),
}
MEMFD_CREATE = ("memfd_create", 319)
_CLONE = 56
# read write poll mmap mprotect munmap ioctl sched_yield madvise nanosleep getpid gettid futex
# clock_nanosleep epoll_wait ppoll epoll_pwait
FAST_ALLOW = (0, 1, 7, 9, 10, 11, 16, 24, 28, 35, 39, 186, 202, 230, 232, 271, 281)


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Insn))]


def program(deny_memfd: bool = False) -> List[Tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions."""
    p: List[Tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, 4),  # arch
        (_JEQ, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS),
        (_LD_W_ABS, 0, 0, 0),  # nr
        (_JGE, 0, 1, _X32_BIT),
        (_RET, 0, 0, _RET_ERRNO | errno.ENOSYS),
    ]
    # the calls a measurement loop makes most, allowed before the deny list is walked
    for nr in FAST_ALLOW:
        p += [(_JEQ, 0, 1, nr), (_RET, 0, 0, _RET_ALLOW)]
    denied = list(DENIED.values()) + ([(MEMFD_CREATE[1], errno.EPERM)] if deny_memfd else [])
    for nr, err in denied:
        p += [(_JEQ, 0, 1, nr), (_RET, 0, 0, _RET_ERRNO | err)]
    for nr, args in SELF_ONLY.values():
        # each argument's low 32 bits (a pid_t or int; the kernel reads no more) must hold its
        # value; the block ends in a return, so A still holds the number when the call is not this one
        block: List[Tuple[int, int, int, int]] = []
        for i, value in args:
            block += [(_LD_W_ABS, 0, 0, 16 + 8 * i), (_JEQ, 1, 0, value), (_RET, 0, 0, _RET_ERRNO | errno.EPERM)]
        block.append((_RET, 0, 0, _RET_ALLOW))
        p += [(_JEQ, 0, len(block), nr)] + block
    for nr, arg, values in ARG_DENIED.values():
        block = [(_LD_W_ABS, 0, 0, 16 + 8 * arg)]  # the argument's low 32 bits (an int: the kernel reads no more)
        for value in values.values():
            block += [(_JEQ, 0, 1, value), (_RET, 0, 0, _RET_ERRNO | errno.EPERM)]
        block.append((_RET, 0, 0, _RET_ALLOW))
        p += [(_JEQ, 0, len(block), nr)] + block
    p += [
        (_JEQ, 0, 4, _CLONE),
        (_LD_W_ABS, 0, 0, 16),  # clone flags (low 32 bits of args[0])
        (_JSET, 0, 1, _NS_FLAGS),
        (_RET, 0, 0, _RET_ERRNO | errno.EPERM),
        (_RET, 0, 0, _RET_ALLOW),
        (_RET, 0, 0, _RET_ALLOW),
    ]
    return p


def available() -> bool:
    return _sys.SYSCALLS_KNOWN


def install(deny_memfd: bool = False) -> Dict[str, object]:
    """Install the filter on every thread (sets no_new_privs). Raises OSError when refused."""
    insns = program(deny_memfd)
    arr = (_Insn * len(insns))(*[_Insn(*i) for i in insns])
    prog = _Prog(len(insns), ctypes.cast(arr, ctypes.POINTER(_Insn)))
    _sys.prctl(_sys.PR_SET_NO_NEW_PRIVS, 1)
    r = _sys.syscall("seccomp", ctypes.c_uint(_SET_MODE_FILTER), ctypes.c_uint(_FLAG_TSYNC), ctypes.byref(prog))
    if r != 0:  # TSYNC: the id of a thread that could not be synchronised
        raise OSError(errno.EBUSY, f"seccomp: thread {r} could not take the filter")
    return {"denied": sorted(DENIED) + ([MEMFD_CREATE[0]] if deny_memfd else [])
            + [f"{name} {v}" for name, (_, _, values) in ARG_DENIED.items() for v in values],
            "instructions": len(insns)}
