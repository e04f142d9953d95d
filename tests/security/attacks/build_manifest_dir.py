"""Class: build-time code / what the trusted parent writes into the build directory.

Tries, while the build imports the module: create `manifest.json` in its build directory as a
directory (with a file in it), not a symlink or special file: `sanitize_build_dir` removes links,
FIFOs, sockets and devices, and keeps directories. Publishing then opens `manifest.json` for
writing (`cache.publish` -> `write_json_durably`): IsADirectoryError out of `build()`, which is
documented never to raise for a bad solution (as `build_result_type` did: the pipeline's compile
job dies, its definition's aggregation and report wait). Root in the parent changes nothing here.
Expect: COMPILE_ERROR for this solution, no exception out of `build()`.
"""
import os

wd = os.getcwd()
os.makedirs(os.path.join(wd, "manifest.json", "x"), exist_ok=True)
open(os.path.join(wd, "manifest.json", "x", "keep"), "w").close()
print("planted manifest.json as a directory", flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
