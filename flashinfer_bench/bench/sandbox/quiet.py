"""A quiet GPU before the next measurement: work a solution queued before its runner was stopped.

Stopping a runner (`worker._hold`) stops its threads, not the GPU: kernels it queued before the
stop (from a thread the runner does not list, from code run after its last reply) keep running,
time-sliced with the next evaluation's kernels (another solution's, the reference's, the
witness's), and slow them. Two contexts of one GPU do not run at once (no MPS here): while
another context has work, a kernel of ours waits for that context's time slice. So the
reference runner (no solution has ever run in it) launches a one-thread kernel a few times and
the supervisor reads how long each launch took to complete: a few tens of microseconds on a quiet
GPU, a slice (about a millisecond or more) behind another context's work.

The supervisor probes right after it stops a runner that ran a solution (`worker._quiet_gate`); found busy,
the runner is killed (its context, and the work queued in it, goes with it) and the device
probed until quiet: quiet then, the work was the solution's and its trace says so
(`background_work`, suspect); still busy, it was someone else's (another program on the GPU), and
the trace says the device was busy instead of blaming the solution.
"""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Dict, List, Optional

log = logging.getLogger(__name__)

PROBES = 3  # launches a probe: the first may fall at the end of another context's slice
SPIN_CYCLES = 2000  # the probe kernel's length (about 1 us at 1.8 GHz): its launch is what counts
BUSY_US = float(os.environ.get("FIB_QUIET_BUSY_US", "400"))  # a launch slower than this: waited for a slice
SETTLE_S = 2.0  # after the kill: how long the device may take to be quiet before it is called busy
PROBE_TIMEOUT_S = 10.0


# ------------------------------------------------------------------ the reference runner's side
def probe(state: Any, n: int) -> Dict[str, Any]:
    """Launch a tiny kernel `n` times, each waited for: the wall time of each, in microseconds."""
    import torch

    dev = state.device
    torch.cuda.synchronize(dev)  # our own work first
    walls: List[float] = []
    with torch.cuda.device(dev):
        for _ in range(max(1, n)):
            t0 = time.perf_counter_ns()
            torch.cuda._sleep(SPIN_CYCLES)
            torch.cuda.synchronize(dev)
            walls.append((time.perf_counter_ns() - t0) / 1e3)
    return {"status": "OK", "walls_us": walls}


# ------------------------------------------------------------------ the supervisor's side
def busy_us(sup: Any, timeout: float = PROBE_TIMEOUT_S) -> Optional[float]:
    """The median launch of a probe in the reference runner (us); None when it cannot be had (no
    reference runner, it did not answer: logged; the gate then lets the evaluation be)."""
    from . import witness

    rr = sup.reference_runner()
    if rr is None:
        return None
    witness.settle(sup)  # nothing else of ours in its channel
    result, _, why = witness._exchange(rr, {"type": "quiet_probe", "n": PROBES}, timeout)
    walls = (result or {}).get("walls_us")
    if not walls:
        log.warning("quiet probe: no answer from the reference runner (%s)", why or (result or {}).get("message"))
        return None
    walls = sorted(float(w) for w in walls)
    return walls[len(walls) // 2]


def is_busy(us: Optional[float]) -> bool:
    return us is not None and us > BUSY_US


def until_quiet(sup: Any, within_s: float = SETTLE_S) -> Optional[float]:
    """Probe until the device is quiet or `within_s` has passed: the last reading (us)."""
    end = time.monotonic() + within_s
    us = busy_us(sup)
    while is_busy(us) and time.monotonic() < end:
        time.sleep(0.005)
        us = busy_us(sup)
    return us


def enabled(device: str) -> bool:
    """On a GPU, unless FIB_QUIET_GATE=off (a stopped process runs nothing on a CPU)."""
    return device != "cpu" and os.environ.get("FIB_QUIET_GATE", "on").lower() not in ("0", "off", "false", "no")


def mark(result: Optional[Dict[str, Any]], first: Optional[float], after: Optional[float]) -> bool:
    """Record what the gate found in `result` (None: no trace to mark): the probe's first reading
    always; `background_work` (suspect, the runner not to be used again) when the device was busy
    and went quiet once the runner was killed (`after`), `device_busy` (noted, no blame) when it
    stayed busy. True when the work was the solution's."""
    from .witness import _flag

    if result is not None and first is not None:
        result.setdefault("extra", {})["quiet_probe_us"] = round(first, 1)
    if not is_busy(first):
        return False
    if is_busy(after):
        if result is not None:
            _flag(result, "device_busy", f"the GPU was busy after the evaluation (a probe waited {first:.0f} us, "
                  f"{after:.0f} us after its runner was killed): another program's work shares the device", suspect=False)
        return False
    if result is not None:
        result["healthy"] = False
        result["unhealthy_reason"] = "the solution left work running on the GPU"
        _flag(result, "background_work", f"GPU work the solution queued was still running after its evaluation "
              f"(a probe of the device waited {first:.0f} us); its runner was killed")
    return True
