"""What /proc says of a task, read the one way every caller needs it."""
from __future__ import annotations

from typing import Optional, Union


def task_state(tid: Union[int, str]) -> Optional[str]:
    """The state letter of task `tid` (R running or runnable, S, D, Z, ...) from /proc/<tid>/stat;
    None where it cannot be read (gone, or not visible from here). The state follows the command
    name, which is in parentheses and may hold anything, spaces and ')' included."""
    try:
        with open(f"/proc/{tid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    at = stat.rfind(b")")
    fields = stat[at + 1:].split() if at >= 0 else []
    return fields[0].decode("ascii", "replace") if fields else None
