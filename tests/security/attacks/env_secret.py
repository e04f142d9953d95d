# expect: RUNTIME_ERROR, and the secret is nowhere in the trace. Reads the user's exported
# secrets from the runner's environment and raises with them (the message lands in the trace log).
import os


def run(x, weight, eps):
    leaked = {k: v for k, v in os.environ.items() if "SECRET" in k or "TOKEN" in k or k in ("HOME", "USER")}
    raise RuntimeError(f"ENV DUMP {leaked}")
