# Class: leaks and gaps (a process started at build time that outlives the build).
# Tries: the entry module's body (run when the build imports it) double-forks a daemon into a
# session of its own, writes its pid where the test can read it (the build log), then hangs
# until the build times out. A timed-out build was ended by killing its process group: the
# daemon, in another session and handed to the build child as its subreaper, was not in it and
# lived on after the build child died (reparented to init), free to burn CPU or write later.
# Expect: COMPILE_ERROR (timed out); no process of the build left.
import os
import time

pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        os.setsid()
        print(f"DAEMON PID {os.getpid()}", flush=True)
        n = 0
        end = time.monotonic() + 120
        while time.monotonic() < end:
            n = (n * 31 + 7) % 1000003
        os._exit(0)
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(600)  # past the build's timeout


def run(x, weight, eps):
    return x
