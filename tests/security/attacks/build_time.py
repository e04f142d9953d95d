# expect: the build ends (OK or COMPILE_ERROR), nothing outside the build's own directory is
# written, no socket opens, and nothing it starts outlives it. The module body runs when the
# build imports the entry file: it writes into $HOME, /tmp, the dataset (a forged PASSED trace),
# opens a socket, and leaves a double-forked daemon behind that would write later.
import json
import os
import pwd
import socket
import sys
import time

T = json.loads(__TARGETS__)
_report = []


def _try(what, fn):
    try:
        fn()
        _report.append(f"BREACH {what}")
    except OSError as e:
        _report.append(f"denied: {what}: {type(e).__name__}")


def _write(path, text="x"):
    with open(path, "a") as f:
        f.write(text)


HOME = pwd.getpwuid(os.getuid()).pw_dir  # the real one, whatever $HOME says
_try("home", lambda: _write(os.path.join(HOME, T["marker"])))
_try("tmp", lambda: _write(os.path.join("/tmp", T["marker"])))
_try("project", lambda: _write(os.path.join(T["project"], T["marker"])))
forged = {"definition": "rmsnorm_h16", "solution": "attack", "evaluation": {"status": "PASSED"}}
_try("dataset trace", lambda: _write(os.path.join(T["dataset"], "traces", "rmsnorm", "forged.jsonl"), json.dumps(forged) + "\n"))
_try("other solution", lambda: _write(T["other_solution_json"], " "))
_try("socket", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))

pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        os.setsid()
        print(f"DAEMON PID {os.getpid()}", flush=True)
        time.sleep(20)
        try:
            _write(os.path.join(HOME, T["marker"]))
        except OSError:
            pass
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(0.2)
print("BUILD-TIME REPORT " + "; ".join(_report), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
