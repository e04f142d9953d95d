"""Class: build-time code / resources of the trusted parent.

Tries, while the build imports the module: make its build log (`_build/build.log`, its own
stdout) a sparse file of __BYTES__ bytes (one truncate: no disk used, no file-size limit in the
build child), then fail. The trusted parent (`compile/build.py:_read_log`) reads the whole log
into memory, decodes it and copies it in `relativise` before capping it to 200,000 characters:
~3x the apparent size of resident memory in the compile job / job server / worker that builds.
At 64 GiB that is an OOM kill of the trusted process. Expect: the log read capped.
"""
import os

_log = os.path.join(os.getcwd(), "_build", "build.log")
try:
    os.truncate(_log, __BYTES__)
    print("truncated", _log, os.stat(_log).st_size)
except OSError as e:
    print(f"denied: {type(e).__name__}: {e}")
raise RuntimeError("failing on purpose so that the parent reads the log")


def run(x, weight, eps):
    return x
