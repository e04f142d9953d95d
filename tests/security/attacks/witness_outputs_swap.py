"""Class: leaks and gaps (the witness's outputs file between the runner's reply and the
supervisor's read).

Tries: one fused RMSNorm a call, right, and the statistics divided by 20. At its first witnessed
call it starts a thread (no guard looks after the evaluation) that waits for each round's outputs
file to be written (its size reaching the round's extent), then, in the window between the reply
and the supervisor's copy, swaps it: round 1 for a FIFO (a reader that opens it blocking would
hang the worker), round 2 for a directory, round 3 for a symlink to the inputs file, round 4 for a
hard link to a 16 MiB sparse file grown in the scratch, round 5 for the inputs file itself
(renamed over it); and it plants a subdirectory holding a file in every witness folder so that the
supervisor's `remove()` cannot empty it.
Expect: no hang, no crash of the worker, not PASSED with a gain (outputs not readable:
`witness_wrong`, or `witness_failed`).
"""
import os
import sys
import threading
import time

import torch

_done = set()
_state = {"thread": None, "round": 0, "log": []}


def _rewrite():
    f = sys._getframe(1)
    while f is not None:
        st = f.f_locals.get("stats") if f.f_code.co_name == "run" else None
        if st is not None and hasattr(st, "center_ms") and id(st) not in _done:
            for k in ("center_ms", "median_ms", "mean_ms", "min_ms", "p10_ms", "p90_ms", "iqr_ms"):
                setattr(st, k, getattr(st, k) / 20.0)
            _done.add(id(st))
            return
        f = f.f_back


def _witness_folder():
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "run" and f.f_code.co_filename.endswith("witness.py"):
            return f.f_locals.get("d")
        f = f.f_back
    return None


def _swap(d, n):
    out = os.path.join(d, "outputs.bin")
    tmp = os.path.join(d, "swap.tmp")
    try:
        if n == 0:
            os.mkfifo(tmp)
            os.rename(tmp, out)
        elif n == 1:
            os.unlink(out)
            os.mkdir(out)
        elif n == 2:
            os.symlink("inputs.bin", tmp)
            os.rename(tmp, out)
        elif n == 3:
            big = os.path.join(os.path.dirname(d), "sparse.bin")
            if not os.path.exists(big):
                with open(big, "wb") as f:
                    f.truncate(16 << 20)
            os.link(big, tmp)
            os.rename(tmp, out)
        else:
            os.rename(os.path.join(d, "inputs.bin"), out)
        _state["log"].append(f"swapped {n}")
    except OSError as e:
        _state["log"].append(f"swap {n}: {e}")
    try:
        os.makedirs(os.path.join(d, "keep", "deeper"), exist_ok=True)
        with open(os.path.join(d, "keep", "deeper", "f"), "w") as f:
            f.write("x")
    except OSError:
        pass


def _watch(scratch):
    seen = set()
    while True:
        try:
            names = [n for n in os.listdir(scratch) if n.startswith("fib-witness-") and n not in seen]
        except OSError:
            names = []
        for name in names:
            d = os.path.join(scratch, name)
            out = os.path.join(d, "outputs.bin")
            deadline = time.monotonic() + 5
            last = -1
            while time.monotonic() < deadline:
                try:
                    st = os.stat(out)
                    # the harness's save truncates the file to its extent and writes it: wait for a
                    # change of its modification time after the round started
                    if st.st_mtime_ns != last and last != -1:
                        break
                    last = st.st_mtime_ns
                except OSError:
                    pass
                time.sleep(0.0002)
            seen.add(name)
            _swap(d, _state["round"] % 5)
            _state["round"] += 1
        time.sleep(0.0005)


def run(x, weight, eps):
    _rewrite()
    if _state["thread"] is None:
        d = _witness_folder()
        if d is not None:
            t = threading.Thread(target=_watch, args=(os.path.dirname(d),), daemon=True)
            _state["thread"] = t
            t.start()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
