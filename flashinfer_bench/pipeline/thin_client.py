"""The benchmark job: hand one (solution, workload) to the device's warm worker, write its trace.

Loaded by path from the rule's entry, `scripts/benchmark.py` (run as `python -S`), not imported as
a module of the package, and without site-packages until the full client needs them (`-S`: the
site module and editable-install finders cost 20-30 ms a job): importing `flashinfer_bench` pulls
in pydantic, and Snakemake's `script:` wrapper imports snakemake; together about 0.8 s a job, more
than most measurements take. This file needs only the standard library and stdlib-only modules of
ours, loaded by path: the worker's address (`bench/addressing.py`), its wire format
(`bench/protocol.py`), the GPU slot lock (`pipeline/gpu_slots.py`), the progress line's units
(`report/units.py`) and the atomic write (`atomic.py`); the worker validates the request and
assembles the trace. Anything off the fast path (no worker running yet, a failed build, a worker
that does not answer) goes to the full client, `pipeline.jobs.benchmark_job`, which starts the
worker and turns every failure into a trace.
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


def prepare(a: SimpleNamespace, dataset: Path) -> Optional[dict]:
    """Everything the request needs, read before the job waits for its GPU; None when the build
    failed (the full path records that)."""
    build = json.loads(Path(a.build).read_text())
    if build.get("status") != "OK":
        return None
    evaluation = json.loads(a.evaluation)
    config = {**evaluation, "worker_dir": str(evaluation.get("worker_dir") or a.worker_dir)}
    if a.cache_dir:
        config.setdefault("cache_dir", a.cache_dir)
    return {
        "definition": json.loads((dataset / a.definition_file).read_text()),
        "solution_name": json.loads((dataset / a.solution_file).read_text())["name"],
        "workload": json.loads(a.workload),
        "build": build,
        "config": config,
        "dataset_root": str(dataset),
    }


def fast_path(req: dict, device: str) -> Optional[dict]:
    """The trace dict from the device's running worker, or None to take the full path."""
    addressing = sys.modules.get("_fib_addressing") or _load("_fib_addressing", _PKG / "bench" / "addressing.py")
    protocol = _load("_fib_protocol", _PKG / "bench" / "protocol.py")
    config = {**req["config"], "device": device}
    sock_path = addressing.worker_paths(device, Path(config["worker_dir"]))["socket"]
    try:
        s = protocol.connect(sock_path, timeout=5.0)
    except OSError:
        return None
    try:
        protocol.send_msg(s, {"op": "evaluate", "request": {**req, "config": config}})
        msg = protocol.recv_msg(s, timeout=24 * 3600)
        if msg.get("event") != "started":
            return None
        msg = protocol.recv_msg(s, timeout=float(config.get("timeout_s", 300)) + 420)
    except (OSError, protocol.ConnectionClosed, TimeoutError):
        return None  # the full path re-asks a fresh worker and records what happened
    finally:
        s.close()
    if msg.get("event") != "result":
        return None
    return json.loads(msg["trace"])


def main() -> int:
    a = _parse_args(sys.argv[1:])
    t0 = time.perf_counter()
    dataset = Path(a.dataset).resolve()
    if not a.worker_dir:  # the one rule for both doors (the Python API's too)
        a.worker_dir = str(_load("_fib_addressing", _PKG / "bench" / "addressing.py").default_worker_dir())
    req = prepare(a, dataset)
    trace = None
    if req is not None and a.device.startswith("cuda"):
        slots = _load("_fib_gpu_slots", _PKG / "pipeline" / "gpu_slots.py")
        with slots.gpu_slot() as dev:
            t0 = time.perf_counter()  # the progress line's time leaves out the wait for the GPU
            trace = fast_path(req, dev)
    elif req is not None:
        trace = fast_path(req, "cpu")
    if trace is None:  # the full client: starts the worker, turns every failure into a trace
        if sys.flags.no_site:  # started with -S (the rule does, for a fast start): site-packages now
            import site

            site.main()
        sys.path.insert(0, str(_PKG.parent))
        from flashinfer_bench.pipeline.jobs import benchmark_job

        evaluation = json.loads(a.evaluation)
        evaluation.setdefault("worker_dir", a.worker_dir)
        benchmark_job(
            build_json=a.build, out=a.out, definition_file=str(dataset / a.definition_file),
            solution_file=str(dataset / a.solution_file), workload_json=a.workload,
            evaluation_json=json.dumps(evaluation), device=a.device, dataset=str(dataset),
            cache_dir=a.cache_dir or None, log=a.log,
        )
        return 0
    _load("_fib_atomic", _PKG / "atomic.py").atomic_write_text(a.out, json.dumps(trace) + "\n")
    line = _progress(trace, time.perf_counter() - t0)
    Path(a.log).parent.mkdir(parents=True, exist_ok=True)
    Path(a.log).write_text(line + "\n")
    print(f"[flashinfer-bench] {line}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
