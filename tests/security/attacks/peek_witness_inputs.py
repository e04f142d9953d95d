"""Class: predictable inputs (the witness's): reading the witness's inputs before they are handed over.

Tries: from every call, look beside its own scratch directory for the other runners' scratch (the
reference runner makes the witness's inputs there, in a `fib-witness-*` folder, before the
supervisor copies them into this runner's scratch and starts its clock), and through /proc for
other processes' root and working directories; list what it finds and read any `inputs.bin`.
Had it seen them early, it could compute the witness's answers before the timed calls and hide a
forged latency. Its own answers are right. Expect: every look outside its scratch denied
("SNOOP REPORT" lists them), PASSED without a gain.
"""
import os

import torch

_seen = []
_denied = set()


def _look() -> None:
    own = os.path.realpath(os.environ.get("FIB_SANDBOX_SCRATCH") or os.getcwd())
    places = [os.path.dirname(own), os.path.dirname(os.path.dirname(own))]
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        pids = []
    places += [f"/proc/{p}/{w}" for p in pids for w in ("root", "cwd")]
    for place in places:
        try:
            names = os.listdir(place)
        except OSError as e:
            _denied.add(f"{place}: {type(e).__name__}")
            continue
        for name in names:
            path = os.path.join(place, name)
            if os.path.realpath(path) == own or own.startswith(os.path.realpath(path) + "/"):
                continue
            try:
                inside = os.listdir(path)
            except OSError as e:
                _denied.add(f"{path}: {type(e).__name__}")
                continue
            if inside:  # another runner's scratch (or worse) in sight
                _seen.append(f"listed {path}: {sorted(inside)[:3]}")
            for root, _dirs, files in _walk(path):
                for f in files:
                    if f == "inputs.bin" or root.split("/")[-1].startswith("fib-witness-"):
                        try:
                            with open(os.path.join(root, f), "rb") as fh:
                                _seen.append(f"{os.path.join(root, f)} ({len(fh.read(1 << 20))} bytes)")
                        except OSError as e:
                            _denied.add(f"{os.path.join(root, f)}: {type(e).__name__}")


def _walk(path: str):
    try:
        yield from os.walk(path)
    except OSError:
        return


def _answer(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()


_reported = []


def run(x, weight, eps):
    if len(_denied) + len(_seen) < 400:
        _look()
    out = _answer(x, weight, eps)
    if _seen and len(_reported) < 2:
        _reported.append(1)
        print("SNOOP REPORT BREACH read: " + "; ".join(sorted(set(_seen))[:5]), flush=True)
    elif not _reported:
        _reported.append(1)
        print(f"SNOOP REPORT nothing outside its scratch; denied {len(_denied)}: " + "; ".join(sorted(_denied)[:4]),
              flush=True)
    return out
