# expect: RUNTIME_ERROR "host memory limit exceeded": each child stays under the per-process data
# limit, together they pass the runner's resident-memory limit (the supervisor's watchdog)
import os
import time


def run(x, weight, eps):
    for _ in range(__N__):
        if os.fork() == 0:
            block = bytearray(b"x") * (__EACH__)  # touched, so resident
            time.sleep(60 + 0 * len(block))
            os._exit(0)
    time.sleep(60)
    raise RuntimeError("the watchdog should have stopped this")
