"""Class: build-time code / leaks (reading files through the trusted parent).

Tries, while the build imports the module: replace its build log with a symlink to a file it may
not read (the worker's secret), then fail the build on purpose. The trusted parent reads the build
log into the COMPILE_ERROR message: if it follows the link, the secret lands in the build result
and in every trace of this solution. Expect: the secret appears nowhere.
"""
import json
import os

T = json.loads(__TARGETS__)
_log = os.path.join(os.getcwd(), "_build", "build.log")
try:
    os.unlink(_log)
    os.symlink(T["secret"], _log)
    print("planted build.log ->", T["secret"])
except OSError as e:
    print(f"denied: {type(e).__name__}: {e}")
raise RuntimeError("failing on purpose so that the parent reads the log")


def run(x, weight, eps):
    return x
