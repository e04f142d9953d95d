"""A process and everything below it: walk, stop, resume, kill (torch-free, no privileges).

Used on runners (the supervisor stops one whenever it is not evaluating its solution, the keeper
kills them when their worker is gone) and on build children (killed whole when a build times
out): what a solution starts must not run on, or outlive its owner, however it hides (a session
of its own, a chain of processes that fork their successor and exit, issue 15).
"""
from __future__ import annotations

import os
import signal
from typing import List, Optional, Union

from .procfs import task_state

STOP_WALKS = 64  # walks of a tree while stopping it, at most (until CALM_WALKS in a row find all stopped)
# a process that hops (forks its successor and exits) can be in flight during a walk and missed by
# it: two calm walks in a row let 3 of 1000 stops miss one on a 2-core VM (session 19), three 0 of 1200
CALM_WALKS = 3
_STILL = ("T", "t", "Z", "X")  # stopped, traced, exited (unreadable, None, is not: a process being made)


def children(pid: Union[int, str]) -> List[int]:
    """The children of process `pid` ("self": this one), those of every thread of it; [] where
    it cannot be read."""
    out: List[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            continue
    return out


def tree(pid: int) -> List[int]:
    """`pid` and every process below it (`children`, recursively), `pid` first. The kernel only
    promises /proc/<p>/task/<tid>/children complete for stopped processes: `stop_tree` walks
    until its answer holds."""
    out, todo, seen = [], [pid], {pid}
    for _ in range(2):
        while todo and len(out) < 100_000:
            p = todo.pop()
            out.append(p)
            todo += [c for c in children(p) if c not in seen]
            seen.update(todo)
        # a process below that forked and exited while the walk went on left its child to the
        # subreaper, `pid`, whose children were read first: read them once more
        todo = [c for c in children(pid) if c not in seen]
        seen.update(todo)
    return out


def stop_tree(pid: int) -> List[int]:
    """Stop (SIGSTOP) `pid`, its process group and every process below it; the pids seen, `pid`
    first, for `resume`. A stopped process runs nothing: no thread, timer or signal handler.

    The tree is walked again until CALM_WALKS walks in a row find the same processes, all stopped: a
    process that forks its successor and exits between a walk and its signal leaves that
    successor to the next walk; a fork the stop catches in flight still completes, its child
    linked after the parent's list was read (once a walk has seen every process stopped, none
    can fork any more, and the next walk sees all). Judged by each process's state, not by its
    pid: such chains wrap the pid space within seconds."""
    try:
        os.killpg(pid, signal.SIGSTOP)
    except OSError:  # gone, or not a group leader: its tree below still is stopped
        pass
    pids: List[int] = [pid]
    seen = {pid}
    groups = {os.getpgrp()}  # process groups already stopped (ours is never one of them)
    still: Optional[set] = None  # the previous walks' processes, while they found all of them stopped
    calm = 0  # walks in a row that found those same processes, all stopped
    for _ in range(STOP_WALKS):
        now = tree(pid)
        for p in now:
            if p not in seen:
                seen.add(p)
                pids.append(p)
        # a hopping chain keeps its process group (a fork inherits it): stopping the group
        # stops the member no walk saw, the one between its exiting parent and the subreaper
        # (under the suite's load three calm walks still missed one in 40 stops)
        for p in now:
            try:
                g = os.getpgid(p)
            except OSError:
                continue
            if g not in groups:
                groups.add(g)
                try:
                    os.killpg(g, signal.SIGSTOP)
                except OSError:
                    pass
        moving = [p for p in now if task_state(p) not in _STILL]
        if not moving:
            calm = calm + 1 if still == set(now) else 1
            still = set(now)
            if calm >= CALM_WALKS:
                break
            continue
        still, calm = None, 0
        for p in moving:
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                continue
    return pids


def resume(pids: List[int]) -> None:
    """Undo `stop_tree`: SIGCONT to the group, to every process it saw and to every process
    below the first now (a stopped process cannot leave the tree)."""
    if not pids:
        return
    try:
        os.killpg(pids[0], signal.SIGCONT)
    except OSError:
        pass
    for p in dict.fromkeys([*pids, *tree(pids[0])]):
        try:
            os.kill(p, signal.SIGCONT)
        except OSError:
            continue


def kill_tree(pid: int) -> None:
    """SIGKILL `pid`, every process below it and its process group. Stopped whole first: killed
    one by one, a process's children would be handed to init (or the next subreaper up) as it
    died, out of this tree, before their turn came."""
    for p in stop_tree(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            continue
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
