"""What /proc says of a task, read the one way every caller needs it."""
from __future__ import annotations

from typing import List, Optional, Union


def _fields(tid: Union[int, str]) -> List[bytes]:
    """The fields of /proc/<tid>/stat after the command name (state first), or [] where it
    cannot be read (gone, or not visible from here). The command name is in parentheses and may
    hold anything, spaces and ')' included, so the fields start after the last ')'."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return []
    at = stat.rfind(b")")
    return stat[at + 1:].split() if at >= 0 else []


def task_state(tid: Union[int, str]) -> Optional[str]:
    """The state letter of task `tid` (R running or runnable, S, D, Z, T stopped, ...); None
    where it cannot be read."""
    f = _fields(tid)
    return f[0].decode("ascii", "replace") if f else None


def parent_pid(pid: Union[int, str]) -> Optional[int]:
    """The parent of process `pid`; None where it cannot be read."""
    f = _fields(pid)
    return int(f[1]) if len(f) > 1 else None


def start_time(pid: Union[int, str]) -> Optional[int]:
    """When process `pid` started, in clock ticks since boot (with the pid, it names one process:
    pids are recycled); None where it cannot be read."""
    f = _fields(pid)
    return int(f[19]) if len(f) > 19 else None
