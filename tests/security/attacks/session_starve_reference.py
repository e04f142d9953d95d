"""Class: cross-talk (processes in sessions of their own starving the trusted runner beside it).

Tries: honest outputs and honest statistics (no forgery), but its first call forks __BURNERS__
children (default 40) that each call `setsid()` and burn a core for __BURN_S__ s (default 4), then
exit. With autogroups on (`/proc/sys/kernel/sched_autogroup_enabled` = 1, as on this VM) the
scheduler shares the CPUs between sessions, not threads: the runner's own threads all sit in one
autogroup and can take at most about half of the machine from another session, but 40 sessions
take ~40/41 of it. Measured outside the sandbox on the 2-core VM (`setsid` burners, a victim in
another session): 60 burners slowed a single-threaded loop 26x (60 burners in the victim's own
session: 28x; in one other session: ~2x). What it counts on: the burners run while the solution
is evaluated, which is when the reference runner makes the witness's first round (`prestage`),
and on past the evaluation's reply while the supervisor waits for that round (`_take` ->
`Pending.collect`, one `timeout_s` from then) and while the reference runner checks the round's
outputs (`witness_check`, not timed, the solution's runner not stopped). A reference-runner
exchange that outlasts `timeout_s` is left unread in its channel (witness.py's `_exchange` and
`Pending.collect` do not discard the reference runner), so the next evaluation's exchanges with
it would read stale replies: `unwitnessed` PASSED traces, or (a workload whose reference is not
cached) `_reference_stats` returning None and the solution's runner timing the reference itself.
Expect: no change on the table's RMSNorm (the reference runner's exchanges cost milliseconds, 26x
of that is far under the 60 s timeout); the trace's `witness.parts_ms` shows how long the
supervisor waited on the starved reference runner; the burners are leftover processes
(background_work) and may land in its own rounds' CPU time.
"""
import os
import time

import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1
try:
    _N = int("__BURNERS__")
except ValueError:
    _N = 40
try:
    _BURN_S = float("__BURN_S__")
except ValueError:
    _BURN_S = 4.0

_started = []


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def _fork_burners():
    end = time.monotonic() + _BURN_S
    for _ in range(_N):
        try:
            pid = os.fork()
        except OSError:
            break  # the pids cap
        if pid == 0:
            try:
                os.setsid()  # a session (an autogroup) of its own
            except OSError:
                pass
            x = 0
            while time.monotonic() < end:
                x += 1
            os._exit(0)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _fork_burners()
    return _answer(x, weight, eps)
