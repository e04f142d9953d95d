# expect: RUNTIME_ERROR  (ends the process from inside the call, skipping every handler)
import os


def run(x, weight, eps):
    print("about to leave", flush=True)
    os._exit(0)
