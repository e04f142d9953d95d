"""Class: leaks and gaps (disk outside every quota: the runner's own log, which outlives the runner).

Tries: a runner may not create files in the worker's logs folder any more (`log_dir_fill`), but it
holds two logs open for writing: the evaluation's (handed over as a descriptor, removed when the
next evaluation begins) and its own `runner-<n>-<random>.log`, its stdout and stderr from its start
(`runner.main` keeps a duplicate, `own_log`, to write to between evaluations). Nothing removes a
runner's own log: not when the runner is replaced, parked out of the pool, or its worker exits.
Each may grow to the file-size limit (`FIB_SANDBOX_FSIZE_MB`, 1024 MiB by default; 16 MiB in the
tests' lab), of real blocks on the worker's disk, so N solutions leave N GiB behind, outside the
scratch quota and the supervisor's memory watch, until the disk that holds the traces, the
dataset and the artifact cache is full. Its first call finds every descriptor of its own that
names a `.log` file other than the evaluation's (/proc/self/fd), writes to each up to the limit (incompressible bytes, so
that no filesystem keeps them small) and prints how much it left where. Correct outputs.
Expect (the defence should make it so): what a runner left in its logs does not outlive it (or is
capped far below the file-size limit): the logs folder does not grow by more than a few MiB per
solution however much it writes.
"""
import os

import torch

_started = []


def _fill():
    left = []
    seen = [os.readlink("/proc/self/fd/1")]  # the evaluation's log: removed at the next evaluation, and our report goes there
    chunk = os.urandom(1 << 20)
    for name in os.listdir("/proc/self/fd"):
        try:
            fd = int(name)
            target = os.readlink(f"/proc/self/fd/{name}")
        except (ValueError, OSError):
            continue
        if not target.endswith(".log") or target in seen:
            continue
        seen.append(target)
        n = 0
        try:
            os.lseek(fd, 0, os.SEEK_END)
            while True:
                n += os.write(fd, chunk)
        except OSError as e:  # EFBIG at the file-size limit (Python ignores SIGXFSZ)
            why = e.strerror
        left.append(f"{os.path.basename(target)} +{n >> 20} MiB ({why})")
    print(f"LOG FILL REPORT {'; '.join(left) or 'no log descriptor'}", flush=True)


def run(x, weight, eps):
    if not _started:
        _started.append(True)
        _fill()
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
