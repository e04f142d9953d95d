"""Class: build-time code / the trusted parent parsing what the build child wrote.

Tries, while the build imports the module (any language: TRITON_CACHE_DIR is the build's
`triton_cache/` for every build): leave a Triton group file `triton_cache/__grp__x.json` that is
valid JSON but not an object (`[]`), or whose `child_paths` holds a number. The build succeeds;
then the trusted parent (`compile/build.py:_relocate_triton_cache`) calls `data.get` on a list /
`v.replace` on an int: AttributeError out of `build()`. Expect: the file ignored (or COMPILE_ERROR).
"""
import os

_d = os.path.join(os.getcwd(), "triton_cache", "h19c")
os.makedirs(_d, exist_ok=True)
with open(os.path.join(_d, "__grp__x.json"), "w") as f:
    f.write(__PAYLOAD__)


def run(x, weight, eps):
    import torch
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, float(eps))
