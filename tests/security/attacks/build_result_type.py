"""Class: build-time code / the trusted parent parsing what the build child wrote.

Tries, while the build imports the module: write the child's report (`_build/child_result.json`)
itself, as valid JSON of the wrong shape (a list, or `__PAYLOAD__`), and exit before the child
writes its own. The trusted parent (`compile/build.py:_child_result`) indexes it as a dict:
`res["status"]` raises TypeError out of `build()` (documented "never raises for a bad
solution"): the pipeline's compile job dies with a traceback, no build result is written, and
every benchmark of the solution, the aggregation of its whole definition (all solutions) and the
report wait on it. Expect: COMPILE_ERROR for this solution, nothing else affected.
"""
import os

with open(os.path.join(os.getcwd(), "_build", "child_result.json"), "w") as f:
    f.write(__PAYLOAD__)
os._exit(0)


def run(x, weight, eps):
    return x
