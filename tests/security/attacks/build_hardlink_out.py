"""Class: build-time code / hard links in the build directory that the trusted parent keeps.

Tries, while the build imports the module: hard-link files outside the build into its
directory (`link()` needs no write access to the target, and `sanitize_build_dir` removes
symlinks and special files only, never a second name of a regular file): the dataset's trace
file, another solution's artifact source, and, named `triton_cache/x/__grp__x.json`, a JSON
file with `child_paths` elsewhere (`__GRP_VICTIM__`), which the parent's
`_relocate_triton_cache` rewrites in place with `write_text` (through the link: the victim's
inode). A link that stays would also publish another owner's file as part of this artifact.
Expect: every link refused (Landlock's REFER rule / another mount: EXDEV or EACCES), nothing
outside changed.
"""
import json
import os

T = json.loads(__TARGETS__)
_report = []
W = os.getcwd()  # absolute: a relative path is resolved on the mount from before the namespace
os.makedirs(os.path.join(W, "triton_cache/x"), exist_ok=True)
for name, src in (("trace.hl", T["trace_file"]), ("main.hl", T["other_artifact_file"]),
                  ("triton_cache/x/__grp__x.json", "__GRP_VICTIM__")):
    try:
        os.link(src, os.path.join(W, name))
        _report.append(f"LINKED {name} -> {src}")
    except OSError as e:
        _report.append(f"denied: {name} ({e.strerror})")
print("HARDLINK REPORT: " + "; ".join(_report), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
