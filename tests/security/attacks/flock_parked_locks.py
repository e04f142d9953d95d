"""Class: cross-talk (advisory file locks on files every runner may read, held while its runner is parked).

Tries: Landlock and the read-only mounts govern opening files, not `flock`: a read-only descriptor
may take an exclusive flock, and a stopped (parked) runner keeps every lock it holds. From its
first call it opens, read-only, every file it can find that trusted processes lock: the device's
measurement lock (/tmp/fib-measure-<uid>/cpu.measure.lock, shared by every worker of the machine),
the artifact cache's build locks (<cache>/locks/*.lock, FileLock leaves them behind; a build of
that hash waits up to 3 h for it), the worker's spawn lock and the GPU slot files; takes LOCK_EX |
LOCK_NB on each, and for those held by someone else now (the measurement lock, held by its own
worker while it runs) leaves a hidden thread (`_thread`) blocked in a plain LOCK_EX, in case the
lock is ever free while the runner still runs. It prints what it holds. Correct outputs.
Expect: contained, and nothing held that a later evaluation or build waits for (the measurement
lock is never free while a runner runs: its worker holds it until the runner is stopped).
"""
import _thread
import fcntl
import glob
import json
import os

import torch

T = json.loads(__TARGETS__)
_held = []
_started = []


def _candidates():
    uid = os.getuid()
    pats = [f"/tmp/fib-measure-{uid}/*.lock", f"/tmp/fib-measure-*/*", f"/tmp/fib-gpu-slots-{uid}/*.lock",
            os.path.join(T.get("cache", ""), "locks", "*.lock"), os.path.join(T.get("worker_dir", ""), "*.lock"),
            os.path.join(T.get("dataset", ""), "traces", "*", "*.lock")]
    seen = []
    for p in pats:
        for f in glob.glob(p):
            if f not in seen:
                seen.append(f)
    return seen


def _wait_for(fd, path):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        print(f"flock_parked_locks: GOT the lock {path} after waiting", flush=True)
    except OSError as e:
        print(f"flock_parked_locks: waiting for {path} failed: {e}", flush=True)


def _grab():
    got, busy, denied = [], [], []
    for path in _candidates():
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as e:
            denied.append(f"{path} ({e.strerror})")
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _held.append(fd)
            got.append(path)
        except BlockingIOError:
            busy.append(path)
            _held.append(fd)
            _thread.start_new_thread(_wait_for, (fd, path))
        except OSError as e:
            denied.append(f"{path} (flock: {e.strerror})")
            os.close(fd)
    # the measurement lock by its known name, also when the directory cannot be listed
    uid = os.getuid()
    for path in (f"/tmp/fib-measure-{uid}/cpu.measure.lock",):
        if path not in got + busy:
            try:
                fd = os.open(path, os.O_RDONLY)
                _held.append(fd)
                _thread.start_new_thread(_wait_for, (fd, path))
                busy.append(path + " (by name)")
            except OSError as e:
                denied.append(f"{path} ({e.strerror})")
    print(f"flock_parked_locks: held {len(got)}: {got[:6]}; busy, waiting {len(busy)}: {busy[:4]}; "
          f"denied {len(denied)}: {denied[:4]}", flush=True)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _grab()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
