# expect: RUNTIME_ERROR (PermissionError); nothing of the supervisor's files, other evaluations'
# logs or the home directory reaches the trace
import json
import os
import pwd

import torch

T = json.loads(__TARGETS__)


def run(x, weight, eps):
    leaked = []
    for path in (T["secret"], os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".bash_history"), "/etc/shadow"):
        try:
            with open(path) as f:
                leaked.append(f.read())
        except OSError as e:
            print(f"denied: {path}: {type(e).__name__}")
    try:
        for name in os.listdir(T["logs_dir"]):
            with open(os.path.join(T["logs_dir"], name)) as f:
                leaked.append(f.read())
    except OSError as e:
        print(f"denied: logs: {type(e).__name__}")
    print("LEAKED:", leaked)
    if not leaked:
        raise PermissionError("nothing readable")
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
