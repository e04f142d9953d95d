"""Class: cross-talk (monkeypatching shared modules on disk, for later processes).

Tries to plant code where later processes (other runners, builds, the user's Python) would run it:
a .pth file and sitecustomize.py in site-packages, a .pyc in torch's __pycache__, the default Triton
and TorchInductor caches, the build cache, the user's ~/.cache. Swallows the errors and computes the
right answer. Expect: every write denied.
"""
import json
import os
import pwd
import site
import sysconfig

import torch

T = json.loads(__TARGETS__)
HOME = pwd.getpwuid(os.getuid()).pw_dir
_purelib = sysconfig.get_paths()["purelib"]
TRIES = {
    "site-packages .pth": os.path.join(_purelib, "zz_fib_breach.pth"),
    "sitecustomize": os.path.join(_purelib, "sitecustomize.py"),
    "torch __pycache__": os.path.join(os.path.dirname(torch.__file__), "__pycache__", "fib_breach.cpython-311.pyc"),
    "user site": os.path.join(site.getusersitepackages(), "usercustomize.py"),
    "~/.triton cache": os.path.join(HOME, ".triton", "cache", "fib_breach"),
    "torchinductor cache": os.path.join("/tmp", f"torchinductor_{pwd.getpwuid(os.getuid()).pw_name}", "fib_breach"),
    "~/.cache": os.path.join(HOME, ".cache", "fib_breach"),
    "build cache": os.path.join(T["cache"], "fib_breach"),
}


def _try_all():
    for what, path in TRIES.items():
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a"):
                pass
            print(f"BREACH: could write {what}: {path}")
            os.unlink(path)
        except OSError as e:
            print(f"denied: {what}: {type(e).__name__}")


_try_all()


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
