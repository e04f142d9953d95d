"""Which layer of the runner's mount namespace breaks CUDA? (a GPU machine; ~30 s)

    python benchmarks/gpu_mount_probe.py

On the H200 (2026-11-26) a confined CUDA runner that entered the read-only mount namespace before
CUDA init failed `cudaGetDeviceCount` with error 304 (benchmarks/measured/2026-11-26-session8.md).
Each row here is a fresh child that enters the runner's user+net namespaces, then the layers named
(cumulative, in the order `sandbox/mounts.apply` takes them), before or after CUDA init, and then
runs a kernel, allocates anew and loads a Triton kernel. One line per variant: OK or the error.
What it prints decides whether CUDA runners can have the mount namespace (after CUDA init, or
without the layer that breaks it).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYERS = ["userns", "mountns", "tmpfs_scratch", "readonly_root", "nosuid_root", "private_dirs"]

CHILD = r'''
import json, os, sys, tempfile
from pathlib import Path
sys.path.insert(0, REPO)
from flashinfer_bench.sandbox import _sys, mounts, ns
layers, when, scratch = json.loads(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
done = []

def enter():
    if "userns" in layers:
        done.append("+".join(ns.enter_namespaces(want_pid=False)) or "no namespaces")
    if "mountns" in layers:
        _sys.unshare(_sys.CLONE_NEWNS)
        mounts._mount(None, "/", None, mounts.MS_REC | mounts.MS_PRIVATE)
        done.append("mountns")
    if "tmpfs_scratch" in layers:
        mounts._mount("fib-probe", str(scratch), "tmpfs", mounts.MS_NOSUID | mounts.MS_NODEV, "size=268435456,mode=0700")
        done.append("tmpfs")
    attr = (mounts.MOUNT_ATTR_RDONLY if "readonly_root" in layers else 0) | (mounts.MOUNT_ATTR_NOSUID if "nosuid_root" in layers else 0)
    if attr:
        mounts._setattr("/", attr, 0, recursive=True)
        for w in (str(scratch), "/dev/shm"):
            mounts._setattr(w, 0, mounts.MOUNT_ATTR_RDONLY, recursive=True) if os.path.ismount(w) else None
        done.append(f"setattr {attr:#x}")
    if "writable_dev" in layers and os.path.ismount("/dev"):
        mounts._setattr("/dev", 0, mounts.MOUNT_ATTR_RDONLY, recursive=False)
        done.append("/dev writable")
    if "private_dirs" in layers:
        for k, sub in (("TMPDIR", "tmp"), ("HOME", "home"), ("CUDA_CACHE_PATH", "nv"), ("TRITON_HOME", "triton")):
            (scratch / sub).mkdir(parents=True, exist_ok=True)
            os.environ[k] = str(scratch / sub)
        tempfile.tempdir = None
        done.append("private dirs")

import torch
if when == "before":
    enter()
torch.cuda.set_device(0)
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
if when == "after":
    enter()
y = (x * 2).sum().item()
z = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # a new allocation after the layers
import triton, triton.language as tl

@triton.jit
def _add(p, n: tl.constexpr):
    o = tl.arange(0, n)
    tl.store(p + o, tl.load(p + o) + 1)

_add[(1,)](x, n=1024)
torch.cuda.synchronize()
print("PROBE " + json.dumps({"ok": True, "done": done, "sum": y}))
'''


def main() -> None:
    rows = []
    variants = [([], "before")]
    for i in range(1, len(LAYERS) + 1):
        variants.append((LAYERS[:i], "before"))
    variants += [(LAYERS, "after"), (LAYERS[:-1], "after")]
    # is it the device nodes? the read-only root but /dev left writable, before CUDA init
    variants += [(LAYERS[:4] + ["writable_dev"], "before"), (LAYERS + ["writable_dev"], "before")]
    for layers, when in variants:
        with tempfile.TemporaryDirectory(prefix="fib-mount-probe-") as tmp:
            scratch = Path(tmp) / "scratch"
            scratch.mkdir()
            child = Path(tmp) / "probe_child.py"  # Triton's @jit needs a source file
            child.write_text(CHILD.replace("REPO", repr(str(REPO))))
            p = subprocess.run([sys.executable, str(child), json.dumps(layers), when, str(scratch)],
                               capture_output=True, text=True, timeout=120)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("PROBE ")), None)
        err = next((ln.strip() for ln in reversed(p.stderr.splitlines()) if "Error" in ln), p.stderr.strip()[-200:])
        ok = line is not None and p.returncode == 0
        done = json.loads(line[6:])["done"] if ok else []
        rows.append((when, "+".join(layers) or "(none)", f"OK {done}" if ok else f"FAIL rc={p.returncode}: {err[:160]}"))
        print(f"{when:6s} {rows[-1][1]:70s} {rows[-1][2]}", flush=True)


if __name__ == "__main__":
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        sys.exit("needs a GPU")
    main()
