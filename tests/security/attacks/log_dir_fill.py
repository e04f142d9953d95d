"""Class: leaks and gaps (the worker's log directory: disk outside scratch that outlives the runner).

Tries: the runner's scratch is a tmpfs with a byte and file quota, but its Landlock rules also let
it create, write and remove regular files in the worker's log directory (WRITE_PLAIN), which is a
directory of the worker's own disk that no quota or memory watch covers and nobody cleans of
files it did not name. It finds that directory through its stdout (`/proc/self/fd/1`) and writes
40 files of 8 MiB there (each under the per-file size limit, together over the 256 MiB scratch
quota the tests set; had it kept going, the host's disk, or its memory where that directory is on
a tmpfs). Computes the right answer. Expect: the files refused (or removed with the runner), no
byte of them left after the evaluation.
"""
import os

import torch

FILES = 40
MB = 8
_report = []


def _fill():
    try:
        logs = os.path.dirname(os.readlink("/proc/self/fd/1"))
    except OSError as e:
        _report.append(f"readlink: {e}")
        return
    block = b"\xa5" * (1 << 20)
    done = 0
    for i in range(FILES):
        path = os.path.join(logs, f"h19-fill-{i}.bin")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        except OSError as e:
            _report.append(f"{path}: {e.strerror}")
            break
        try:
            for _ in range(MB):
                os.write(fd, block)
                done += 1
        except OSError as e:
            _report.append(f"write {path}: {e.strerror}")
            break
        finally:
            os.close(fd)
    _report.append(f"wrote {done} MiB into {logs}")


_fill()
print("FILL REPORT: " + "; ".join(_report[:4]), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
