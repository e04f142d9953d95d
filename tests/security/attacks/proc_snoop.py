"""Class: leaks and gaps (the host's /proc read from the runner).

Tries: list the host's processes through /proc and read their command lines, environments,
status and open files (a token passed on a command line, another user's exported secret, what
the worker and the other runners are doing), then raise with whatever it found, so that it lands
in the trace log. Expect: nothing of another process (outside its own runner) in the trace.
"""
import json
import os

T = json.loads(__TARGETS__)


def run(x, weight, eps):
    found, n = [], {"cmdline": 0, "environ": 0, "status": 0, "fd": 0}
    me = os.getpid()
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError as e:
        raise RuntimeError(f"denied: /proc: {type(e).__name__}")
    for p in pids:
        if p == me:
            continue
        for name in ("cmdline", "environ", "status"):
            try:
                with open(f"/proc/{p}/{name}", "rb") as f:
                    data = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            n[name] += 1
            if T["marker"] in data or "SECRET" in data:
                found.append(f"/proc/{p}/{name}: {data[:400]}")
        try:
            n["fd"] += len(os.listdir(f"/proc/{p}/fd"))
        except OSError:
            pass
    raise RuntimeError(f"PROC REPORT {len(pids)} pids visible, read {n}; found: {found}")
