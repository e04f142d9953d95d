"""Class: build-time code (the entry module's body at build) / leaks and gaps (metadata changes).

Tries, while the build imports the module: utime, chmod, setxattr and chown on files outside its
build directory (the dataset's trace file, another solution's JSON, another solution's built
artifact). Landlock governs opening files, not their metadata, so these went through.
Expect: every change denied, the files' metadata unchanged.
"""
import json
import os

T = json.loads(__TARGETS__)
_report = []
_FILES = {"dataset trace": T["trace_file"], "other solution": T["other_solution_json"], "other artifact": T["other_artifact_file"]}
for _what, _p in _FILES.items():
    for _op, _fn in (
        ("utime", lambda p: os.utime(p, (1, 1))),
        ("chmod", lambda p: os.chmod(p, 0o777)),
        ("setxattr", lambda p: os.setxattr(p, "user.fib_breach", b"1")),
        ("chown", lambda p: os.chown(p, os.getuid(), os.getgid())),
    ):
        try:
            _fn(_p)
            _report.append(f"BREACH {_op} {_what}")
        except OSError as e:
            _report.append(f"denied: {_op} {_what}: {type(e).__name__}")
print("METADATA REPORT " + "; ".join(_report), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
