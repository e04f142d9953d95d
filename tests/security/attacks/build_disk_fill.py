"""Class: build-time code / resources (disk) of the artifact cache.

Tries, while the build imports the module: write __MB__ MiB of real data and a sparse file of
1 TiB apparent size into its build directory, then build normally. Nothing bounds a build
directory (no RLIMIT_FSIZE in the build child, no quota, no size check at publish): the parent
publishes it as the artifact, where it stays in the cache for good; at disk speed a build fills
the cache's file system within its 900 s timeout. Reports the child's RLIMIT_FSIZE.
Expect: the build refused past a byte budget, nothing published.
"""
import os
import resource

_d = os.path.join(os.getcwd(), "src", "blob")
os.makedirs(_d, exist_ok=True)
with open(os.path.join(_d, "real.bin"), "wb") as f:
    chunk = b"\x5a" * (1 << 20)
    for _ in range(__MB__):
        f.write(chunk)
with open(os.path.join(_d, "sparse.bin"), "wb") as f:
    f.truncate(1 << 40)
print("H19C RLIMIT_FSIZE", resource.getrlimit(resource.RLIMIT_FSIZE))


def run(x, weight, eps):
    import torch
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
