"""The benchmark job: hand one (solution, workload) to the device's warm worker, write its trace.

Loaded by path from the rule's entry, `scripts/benchmark.py` (run as `python -S`), not imported as
a module of the package, and without site-packages until the full client needs them (`-S`: the
site module and editable-install finders cost 20-30 ms a job): importing `flashinfer_bench` pulls
in pydantic, and Snakemake's `script:` wrapper imports snakemake; together about 0.8 s a job, more
than most measurements take. This file needs only the standard library and stdlib-only modules of
ours, loaded by path: the request and its exchange with the worker (`bench/request.py`, which the
full client uses too, with the worker's address and wire format), the GPU slot lock
(`pipeline/gpu_slots.py`), the progress line's units (`report/units.py`) and the atomic write
(`atomic.py`); the worker validates the request and assembles the trace. When no worker answers
(none runs yet, or it went away) the same request goes to the full client,
`bench.client.send_request`, which starts the worker and turns every failure into a trace.
"""
from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

_PKG = Path(__file__).resolve().parent.parent


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


_REQUIRED = ("build", "out", "definition-file", "solution-file", "workload", "evaluation", "device", "dataset", "log")


def _parse_args(argv: list) -> SimpleNamespace:
    """`--name value` pairs (argparse's import and parser cost ~10 ms a job)."""
    vals = {"cache-dir": "", "worker-dir": ""}
    it = iter(argv)
    for flag in it:
        name = flag[2:] if flag.startswith("--") else ""
        if "=" in name:
            name, value = name.split("=", 1)
        else:
            value = next(it, None)
        if name not in (*_REQUIRED, "cache-dir", "worker-dir") or value is None:
            sys.exit(f"thin_client.py: bad argument {flag!r} (expects --NAME VALUE for {', '.join(_REQUIRED)})")
        vals[name] = value
    missing = [n for n in _REQUIRED if n not in vals]
    if missing:
        sys.exit(f"thin_client.py: missing --{', --'.join(missing)}")
    return SimpleNamespace(**{k.replace("-", "_"): v for k, v in vals.items()})


def _progress(trace: dict, wall: float) -> str:
    """One line per evaluated pair, in the units and names of the report (report/units.py,
    loaded by path: stdlib only)."""
    u = sys.modules.get("_fib_units") or _load("_fib_units", _PKG / "report" / "units.py")
    ev = trace.get("evaluation") or {}
    wl = trace.get("workload") or {}
    what = f"{trace.get('solution')} x {u.workload_label(wl.get('axes') or {}, wl.get('uuid') or '')}"
    perf = ev.get("performance")
    if ev.get("status") == "PASSED" and perf:
        return (f"{what}: PASSED {u.fmt_latency(perf.get('latency_ms'))} (reference {u.fmt_latency(perf.get('reference_latency_ms'))}, "
                f"{u.fmt_speedup(perf.get('speedup_factor'))}) [{wall:.2f} s]")
    last = (ev.get("log") or "").strip().splitlines()
    return f"{what}: {ev.get('status')}{': ' + last[-1][:160] if last else ''} [{wall:.2f} s]"


def _request():
    """bench/request.py: the request and its exchange, shared with the full client."""
    return sys.modules.get("_fib_request") or _load("_fib_request", _PKG / "bench" / "request.py")


def prepare(a: SimpleNamespace, dataset: Path) -> dict:
    """The job's request (without its device), read before the job waits for its GPU."""
    evaluation = json.loads(a.evaluation)
    config = {**evaluation, "worker_dir": str(evaluation.get("worker_dir") or a.worker_dir)}
    if a.cache_dir:
        config.setdefault("cache_dir", a.cache_dir)
    return _request().evaluation_request(
        json.loads((dataset / a.definition_file).read_text()),
        json.loads((dataset / a.solution_file).read_text())["name"],
        json.loads(a.workload),
        json.loads(Path(a.build).read_text()),
        config,
        str(dataset),
    )


def fast_path(req: dict, device: str) -> Optional[dict]:
    """The trace dict from the device's running worker, or None to take the full path."""
    r = _request()
    try:
        s = r.connect(device, Path(req["config"]["worker_dir"]))
    except OSError:
        return None  # no worker runs: the full path starts one
    try:
        return json.loads(r.exchange(s, r.on_device(req, device)))
    except (r.WorkerLost, TimeoutError):
        return None  # the full path re-asks a fresh worker and records what happened
    finally:
        s.close()


def full_path(req: dict, device: str) -> dict:
    """The trace dict from the full client (`bench.client.send_request`, the Python API's): it
    starts the worker and turns every failure into a trace; costs the package's import."""
    if sys.flags.no_site:  # started with -S (the rule does, for a fast start): site-packages now
        import site

        site.main()
    if str(_PKG.parent) not in sys.path:
        sys.path.insert(0, str(_PKG.parent))
    from flashinfer_bench.bench.client import send_request

    return json.loads(send_request(req, device).model_dump_json())


def main() -> int:
    a = _parse_args(sys.argv[1:])
    t0 = time.perf_counter()
    dataset = Path(a.dataset).resolve()
    if not a.worker_dir:  # the one rule for both doors (the Python API's too)
        a.worker_dir = str(_load("_fib_addressing", _PKG / "bench" / "addressing.py").default_worker_dir())
    req = prepare(a, dataset)
    if a.device.startswith("cuda"):
        slots = _load("_fib_gpu_slots", _PKG / "pipeline" / "gpu_slots.py")
        with slots.gpu_slot() as dev:
            t0 = time.perf_counter()  # the progress line's time leaves out the wait for the GPU
            trace = fast_path(req, dev) or full_path(req, dev)
    else:
        trace = fast_path(req, "cpu") or full_path(req, "cpu")
    _load("_fib_atomic", _PKG / "atomic.py").atomic_write_text(a.out, json.dumps(trace) + "\n")
    line = _progress(trace, time.perf_counter() - t0)
    Path(a.log).parent.mkdir(parents=True, exist_ok=True)
    Path(a.log).write_text(line + "\n")
    print(f"[flashinfer-bench] {line}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
