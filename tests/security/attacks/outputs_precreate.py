"""Class: leaks and gaps (files the supervisor makes in the runner's scratch): the round's
pre-made outputs file, raced (session 20).

Tries: correct outputs; a hidden thread polls the scratch for the supervisor's fresh
`fib-witness-*` folders and, in each, (1) makes `outputs.bin` itself before the supervisor's
`make_room` (O_EXCL) can, (2) where it lost, replaces the supervisor's file by a hard link to the
round's `inputs.bin` (the runner then writes its outputs over its inputs, and a stepped round's
writer opens another inode than the one the supervisor reads). Expect: not PASSED unwitnessed (a failed witness is RUNTIME_ERROR), no
crash of the worker, the honest solution after it unharmed.
"""
import _thread
import os
import time

import torch

_started = []
_seen = set()
_log = []


def _scratch():
    return os.environ.get("FIB_SANDBOX_SCRATCH") or os.getcwd()


def _race():
    base = _scratch()
    while True:
        try:
            names = [n for n in os.listdir(base) if n.startswith("fib-witness-") and n not in _seen]
        except OSError:
            time.sleep(0.001)
            continue
        for n in names:
            _seen.add(n)
            d = os.path.join(base, n)
            out, inp = os.path.join(d, "outputs.bin"), os.path.join(d, "inputs.bin")
            try:
                fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                os.ftruncate(fd, 15 << 20)
                os.close(fd)
                _log.append("won")
                continue
            except OSError as e:
                _log.append(f"lost {e.errno}")
            for _ in range(200):  # the inputs arrive after the outputs file is made
                if os.path.exists(inp):
                    break
                time.sleep(0.0002)
            try:
                os.unlink(out)
                os.link(inp, out)
                _log.append("linked")
            except OSError as e:
                _log.append(f"link {e.errno}")
        if not names:
            time.sleep(0.0002)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _thread.start_new_thread(_race, ())
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
