# expect: PASSED like any correct solution, and nothing written: tries every place it must not write,
# swallows the errors, prints BREACH for each write that worked
import json
import os
import pwd

import torch

T = json.loads(__TARGETS__)
HOME = pwd.getpwuid(os.getuid()).pw_dir
TRIES = {
    "dataset trace": (os.path.join(T["dataset"], "traces", "rmsnorm", "rmsnorm_h256.jsonl"), "a"),
    "dataset new trace": (os.path.join(T["dataset"], "traces", "forged.jsonl"), "w"),
    "other solution": (T["other_solution_json"], "a"),
    "other workload": (os.path.join(T["dataset"], "workloads", "rmsnorm", "rmsnorm_h256.jsonl"), "a"),
    "other artifact": (os.path.join(T["other_artifact"], "main.py"), "a"),
    "cache": (os.path.join(T["cache"], "forged.txt"), "w"),
    "project file": (os.path.join(T["project"], "flashinfer_bench", "bench", "timing.py"), "a"),
    "project new file": (os.path.join(T["project"], T["marker"]), "w"),
    "home": (os.path.join(HOME, T["marker"]), "w"),
    "worker dir": (os.path.join(T["worker_dir"], T["marker"]), "w"),
    "/tmp": (os.path.join("/tmp", T["marker"]), "w"),
}


def _try_all():
    for what, (path, mode) in TRIES.items():
        try:
            with open(path, mode):
                pass  # opening for writing is the breach; nothing is written into existing files
            print(f"BREACH: could open {what} for writing: {path}")
        except OSError as e:
            print(f"denied: {what}: {type(e).__name__}")


_try_all()


def run(x, weight, eps):
    _try_all()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
