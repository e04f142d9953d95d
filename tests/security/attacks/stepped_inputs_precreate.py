"""Class: leaks and gaps (files the supervisor makes in the runner's scratch): a stepped round's
hand-over refused after its outputs file was made (session 20).

Tries: correct outputs; a hidden thread polls the scratch for the supervisor's fresh
`fib-witness-*` folders and makes `inputs.bin` in each (never `outputs.bin`: the supervisor's
`make_room` succeeds). A stepped round (FIB_WITNESS_STEPPED=on) then fails in
`_Folder.stepped_to` (O_EXCL on inputs.bin), which closes the outputs descriptor it was handed
(`steps.close()`); `_Witness.round`'s `finally` closes `out_fd` once more since no steps were
made: a double close in the supervisor (EBADF, or, where another thread of the worker opened a
file in between, that thread's descriptor). Expect: RUNTIME_ERROR witness_failed naming the
refused inputs file, no "Bad file descriptor", no crash of the worker, honest solutions unharmed.
"""
import _thread
import os
import time

import torch

_started = []
_seen = set()


def _scratch():
    return os.environ.get("FIB_SANDBOX_SCRATCH") or os.getcwd()


def _race():
    base = _scratch()
    while True:
        try:
            names = [n for n in os.listdir(base) if n.startswith("fib-witness-") and n not in _seen]
        except OSError:
            names = []
        for n in names:
            _seen.add(n)
            try:
                os.close(os.open(os.path.join(base, n, "inputs.bin"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            except OSError:
                pass
        time.sleep(0.0002)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _thread.start_new_thread(_race, ())
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
