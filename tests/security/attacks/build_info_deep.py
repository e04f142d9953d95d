"""Class: build-time code / the trusted parent writing what the build child reported (`info`).

Tries, while the build imports the module: write the child's report (`_build/child_result.json`)
itself, a well-formed build report (status OK, message and details strings, `info` a dict) whose
`info` holds an allowed key (`note`) with a list nested `__DEPTH__` deep, and exit before the
child writes its own. `compile/confine.child_info` keeps allowed keys whatever their values, so
the nesting goes into the manifest; the parent parses the report with the C decoder (one
recursion level a nesting) but writes the manifest with `json.dump(indent=2)` (the pure-Python
encoder, more frames a nesting): at a depth just under the parser's limit the parse succeeds and
the write raises RecursionError out of `cache.publish`, out of `build()` ("never raises for a bad
solution"): the pipeline's compile job dies with a traceback, as `build_result_type` did before
session 19. The depth that hits the window depends on the caller's stack; an attacker submits a
handful of copies at neighbouring depths.
Expect: COMPILE_ERROR (or OK) for this solution; no exception out of `build()`.
"""
import os

_d = __DEPTH__
_body = '{"status": "OK", "message": "", "details": "", "info": {"note": ' + "[" * _d + "]" * _d + "}}"
with open(os.path.join(os.getcwd(), "_build", "child_result.json"), "w") as f:
    f.write(_body)
os._exit(0)


def run(x, weight, eps):
    return x
