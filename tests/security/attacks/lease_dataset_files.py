"""Class: cross-talk (file leases on the dataset's files, held by a parked runner: trusted writers stall).

Tries: `fcntl(F_SETLEASE, F_RDLCK)` needs only a read-only descriptor and the caller's fsuid to own
the file (no capability): a runner whose user namespace maps root to the user who made the
dataset owns every file of it. Neither seccomp (fcntl is allowed) nor Landlock (which governs
opening, not locks or leases) refuses it. While a read lease is held, any other process that
opens the file for writing or truncates it blocks until the holder gives the lease up or the
kernel breaks it after `fs.lease-break-time` (45 s): the holder is told by SIGIO, and a runner
stopped between its jobs (parked) cannot answer. From its first call it takes a read lease on
every file it can open under the dataset and the artifact cache (the workloads' and traces'
JSONL files the pipeline and the tracing writer append to, solutions, definitions), ignores the
SIGIO a lease break sends, and prints how many it holds. Correct outputs.
Expect: contained for its own trace; no trusted writer of those files stalls behind it (the
driver that ran it opens one of them for appending while the runner is parked).
"""
import fcntl
import json
import os
import signal

import torch

T = json.loads(__TARGETS__)
F_SETLEASE = 1024
_held = []
_started = []


def _take():
    try:
        signal.signal(signal.SIGIO, signal.SIG_IGN)  # a lease break must not end the runner
    except (ValueError, OSError):
        pass
    n, errs, names = 0, {}, []
    for root in (T.get("dataset"), T.get("cache")):
        if not root:
            continue
        for dirpath, _, files in os.walk(root):
            for f in files:
                if len(_held) >= 900:
                    break
                p = os.path.join(dirpath, f)
                try:
                    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
                except OSError as e:
                    errs[e.strerror] = errs.get(e.strerror, 0) + 1
                    continue
                try:
                    fcntl.fcntl(fd, F_SETLEASE, fcntl.F_RDLCK)
                    _held.append(fd)
                    n += 1
                    if p.endswith(".jsonl"):
                        names.append(os.path.relpath(p, root))
                except OSError as e:
                    errs["lease: " + e.strerror] = errs.get("lease: " + e.strerror, 0) + 1
                    os.close(fd)
    print(f"lease_dataset_files: read leases held on {n} files (jsonl: {names[:6]}); refused: {errs}", flush=True)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _take()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
