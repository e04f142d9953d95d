"""Class: leaks and gaps (memory held by parked runners: the limit is per runner, the pool has no total).

Tries: a runner may hold up to FIB_SANDBOX_HOST_MEM_GB (by default half the machine's memory) of
resident memory, tmpfs scratch and shared memory while it is evaluated (`supervise.MemoryWatch`,
which watches only during the evaluation and its witness). A runner that ran a solution is then
stopped and parked for that solution's next job, up to FIB_RUNNER_POOL of them (6 on a CPU, 3 on a
GPU), and keeps all it holds: nothing adds up what the parked runners hold together. Six
solutions each just under the limit hold three times the machine's memory (no swap here): the
kernel reclaims the page cache (the mapped text of torch every runner executes), then the OOM
killer picks by resident set, which does not count tmpfs files no process maps (a runner's
scratch), so it may kill the worker, the reference runner or an honest runner rather than a
parked one. Its first call fills __FRACTION__ (default 0.6) of its limit (read from the
FIB_SANDBOX_ environment every runner sees) with resident anonymous memory, keeps it, and prints
how much. Correct outputs. Run as several solutions (tests/security/test_attacks.py runs three).
Expect (the defence should make it so): what the parked runners of a worker hold together stays
within one runner's limit (a runner over a parking budget is discarded instead of parked).
"""
import os

import torch

try:
    _FRACTION = float("__FRACTION__")
except ValueError:
    _FRACTION = 0.6
_held = []


def _limit():
    gb = float(os.environ.get("FIB_SANDBOX_HOST_MEM_GB", "0") or 0)
    if gb > 0:
        return int(gb * (1 << 30))
    with open("/proc/meminfo") as f:
        total_kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
    return total_kb * 1024 // 2


def run(x, weight, eps):
    if not _held:
        n = int(_limit() * _FRACTION)
        _held.append(torch.ones(n, dtype=torch.uint8))  # every page written: resident
        with open("/proc/self/status") as f:
            rss = next(line for line in f if line.startswith("VmRSS")).split()[1]
        print(f"PARKED MEMORY REPORT holding {n >> 20} MiB ({_FRACTION:g} of the {_limit() >> 20} MiB limit); "
              f"resident {int(rss) >> 10} MiB", flush=True)
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
