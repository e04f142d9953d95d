"""The full client of the device's worker: starts it on first use, retries, turns every failure
into a trace; the Python API's door (`Benchmark`, `evaluate_via_worker`) and the benchmark job's
when its stdlib fast path (`pipeline/thin_client.py`) finds no worker.

Torch-free. Both doors build and send the request with `bench/request.py`. The worker for a
device is found by a socket under `<worker_dir>/` named after the device and a fingerprint of
our code (an edited evaluator never talks to a stale worker). Concurrent clients start one
worker: the start is done under a file lock.
"""
from __future__ import annotations

import fcntl
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union

from ..data import Definition, Solution, Trace, Workload
from ..env import cache_path
from .assemble import assemble_trace, environment, solution_hash_of
from .addressing import (  # noqa: F401  (device_slug, physical_gpu: re-exported for tests)
    WorkerUnavailable, default_worker_dir, device_slug, physical_gpu, resolve_device, worker_paths,
)
from .config import EvalConfig
from .loader import build_to_dict
from .protocol import ConnectionClosed, connect, recv_msg, send_msg
from .request import CONNECT_TIMEOUT_S, WorkerLost, evaluation_request, exchange, on_device


def worker_dir(config: EvalConfig) -> Path:
    return Path(config.worker_dir) if config.worker_dir else default_worker_dir()


@contextmanager
def _flock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def connect_worker(device: str, config: EvalConfig, spawn: bool = True) -> socket.socket:
    """A connection to the device's worker, started (detached) if none answers."""
    wdir = worker_dir(config)
    paths = worker_paths(device, wdir)
    try:
        return connect(paths["socket"], timeout=CONNECT_TIMEOUT_S)
    except OSError:
        if not spawn:
            raise
    with _flock(paths["lock"]):
        try:
            return connect(paths["socket"], timeout=CONNECT_TIMEOUT_S)
        except OSError:
            pass
        cache_dir = Path(config.cache_dir) if config.cache_dir else cache_path()
        wdir.mkdir(parents=True, exist_ok=True)
        where = ["--visible", ""] if device == "cpu" else ["--visible", physical_gpu(device)[0], "--physical-index", str(physical_gpu(device)[1])]
        with open(paths["log"], "ab") as lf:
            proc = subprocess.Popen(
                [
                    sys.executable, "-m", "flashinfer_bench.bench.worker", "--socket", str(paths["socket"]),
                    "--device", device, *where, "--worker-dir", str(wdir), "--cache-dir", str(cache_dir),
                    "--measure-lock", str(paths["measure_lock"]),
                    "--idle-timeout", str(config.idle_timeout_s), "--startup-timeout", str(config.startup_timeout_s),
                ],
                stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True,
                cwd=str(wdir), close_fds=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                return connect(paths["socket"], timeout=CONNECT_TIMEOUT_S)
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        tail = ""
        try:
            tail = paths["log"].read_text(errors="replace")[-4000:]
        except OSError:
            pass
        raise WorkerUnavailable(f"the worker for {device} did not start ({'exit ' + str(proc.poll()) if proc.poll() is not None else 'no socket'}):\n{tail}")


def ping_worker(device: str, config: EvalConfig, spawn: bool = False) -> Optional[Dict[str, Any]]:
    try:
        s = connect_worker(resolve_device(device), config, spawn=spawn)
    except (OSError, WorkerUnavailable):
        return None
    try:
        send_msg(s, {"op": "ping"})
        return recv_msg(s, timeout=30)
    except (ConnectionClosed, TimeoutError, OSError):
        return None
    finally:
        s.close()


def warm_worker(device: str, config: EvalConfig) -> Optional[Dict[str, Any]]:
    """Start the device's worker and its runner; returns the runner's description (env, peaks,
    timing calibration) or None when it cannot start."""
    dev = resolve_device(device)
    try:
        s = connect_worker(dev, config, spawn=True)
    except (OSError, WorkerUnavailable):
        return None
    try:
        send_msg(s, {"op": "warm"})
        r = recv_msg(s, timeout=config.startup_timeout_s + 30)
        return r if r.get("ok") else None
    except (ConnectionClosed, TimeoutError, OSError):
        return None
    finally:
        s.close()


def shutdown_worker(device: str, config: EvalConfig) -> bool:
    """Ask the device's worker (this code version) to exit; False when none was running."""
    try:
        s = connect_worker(resolve_device(device), config, spawn=False)
    except (OSError, WorkerUnavailable):
        return False
    try:
        send_msg(s, {"op": "shutdown"})
        recv_msg(s, timeout=10)
        return True
    except (ConnectionClosed, TimeoutError, OSError):
        return False
    finally:
        s.close()


def _failure(request: Dict[str, Any], device: str, status: str, message: str) -> Trace:
    return assemble_trace(
        definition=request["definition"]["name"], solution=request["solution_name"], workload=request["workload"],
        status=status, message=message, env=environment(None, None, device, own=solution_hash_of(request.get("build"))),
    )


def evaluate_via_worker(
    definition: Definition,
    solution: Union[Solution, str],
    workload: Union[Workload, Trace],
    build: Any,
    config: Optional[EvalConfig] = None,
    dataset_root: Optional[Union[str, Path]] = None,
    device: Optional[str] = None,
) -> Trace:
    """Evaluate one (solution, workload) on `device` through its worker; a bad solution is a trace."""
    config = config or EvalConfig()
    request = request_for(definition, solution, workload, build, config, dataset_root)
    return send_request(request, resolve_device(device or config.device))


def request_for(
    definition: Definition, solution: Union[Solution, str], workload: Union[Workload, Trace], build: Any,
    config: EvalConfig, dataset_root: Optional[Union[str, Path]] = None,
) -> Dict[str, Any]:
    """The worker's request for one pair given as the Python API holds it (models); the benchmark
    job builds the same one from the dataset's files (`pipeline/thin_client.prepare`)."""
    wl = workload.workload if isinstance(workload, Trace) else workload
    return evaluation_request(
        definition.model_dump(mode="json"), solution if isinstance(solution, str) else solution.name,
        wl.model_dump(mode="json"), build_to_dict(build), config.model_dump(mode="json"),
        str(Path(dataset_root).resolve()) if dataset_root else None,
    )


def send_request(request: Dict[str, Any], device: str) -> Trace:
    """The full path: `request` (bench/request.evaluation_request) to the worker of `device` (a
    resolved name), started when none runs, asked again when it went away before the evaluation
    started; every failure comes back as a trace."""
    config = EvalConfig.model_validate(request["config"])
    request = on_device(request, device)
    last_error = ""
    for attempt in range(3):
        try:
            s = connect_worker(device, config)
        except WorkerUnavailable as e:
            return _failure(request, device, "RUNTIME_ERROR", str(e))
        except OSError as e:
            last_error = f"{type(e).__name__}: {e}"
            time.sleep(0.2 * (attempt + 1))
            continue
        try:
            return Trace.model_validate_json(exchange(s, request))
        except TimeoutError:
            return _failure(request, device, "TIMEOUT", "the worker did not answer in time")
        except WorkerLost as e:
            if e.started:
                return _failure(request, device, "RUNTIME_ERROR", f"the worker died during the evaluation: {e}")
            last_error = str(e)
            time.sleep(0.2 * (attempt + 1))
        finally:
            s.close()
    return _failure(request, device, "RUNTIME_ERROR", f"could not reach the worker: {last_error}")
