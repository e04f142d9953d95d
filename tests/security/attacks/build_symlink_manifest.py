"""Class: build-time code (editing other solutions' files through the trusted parent).

Tries, while the build imports the module: plant `manifest.json` in its build directory as a
symlink to another solution's built source file. The trusted parent (unconfined) writes the
artifact's manifest into the build directory before publishing it: if it follows the link, the
other solution's code is replaced by this manifest. Expect: the other artifact unchanged.
"""
import json
import os

T = json.loads(__TARGETS__)
try:
    os.symlink(T["other_artifact_file"], os.path.join(os.getcwd(), "manifest.json"))
    print("planted manifest.json ->", T["other_artifact_file"])
except OSError as e:
    print(f"denied: symlink: {type(e).__name__}: {e}")


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
