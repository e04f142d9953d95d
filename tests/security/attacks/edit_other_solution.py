# expect: RUNTIME_ERROR (PermissionError); the other solution's JSON and built artifact unchanged.
# Makes a competitor slow by editing its source in the dataset and in the build cache.
import json
import os

import torch

T = json.loads(__TARGETS__)
SLOW = "\nimport time\n_real_run = run\ndef run(*a):\n    time.sleep(0.01)\n    return _real_run(*a)\n"


def run(x, weight, eps):
    with open(os.path.join(T["other_artifact"], "main.py"), "a") as f:
        f.write(SLOW)
    with open(T["other_solution_json"], "r+") as f:
        sol = json.load(f)
        sol["sources"][0]["content"] += SLOW
        f.seek(0)
        json.dump(sol, f)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
