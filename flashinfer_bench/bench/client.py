"""The thin client: ask the device's worker for one evaluation, starting the worker on first use.

Torch-free, so a benchmark job costs a Python start and a socket round trip. The worker for a
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
from .assemble import assemble_trace, environment
from .addressing import (  # noqa: F401
    WorkerUnavailable, code_fingerprint, default_worker_dir, device_slug, physical_gpu, resolve_device, worker_paths,
)
from .config import EvalConfig
from .loader import build_to_dict
from .protocol import ConnectionClosed, connect, recv_msg, send_msg

_PKG = Path(__file__).resolve().parent.parent


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
        return connect(paths["socket"], timeout=5.0)
    except OSError:
        if not spawn:
            raise
    with _flock(paths["lock"]):
        try:
            return connect(paths["socket"], timeout=5.0)
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
                return connect(paths["socket"], timeout=5.0)
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


def _failure(definition: str, solution: str, workload: Dict[str, Any], device: str, status: str, message: str) -> Trace:
    return assemble_trace(
        definition=definition, solution=solution, workload=workload, status=status, message=message,
        env=environment(None, None, device),
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
    dev = resolve_device(device or config.device)
    wl = workload.workload if isinstance(workload, Trace) else workload
    wl_json = wl.model_dump(mode="json")
    sol_name = solution if isinstance(solution, str) else solution.name
    req = {
        "definition": definition.model_dump(mode="json"),
        "solution_name": sol_name,
        "workload": wl_json,
        "build": build_to_dict(build),
        "config": config.model_copy(update={"device": dev}).model_dump(mode="json"),
        "dataset_root": str(Path(dataset_root).resolve()) if dataset_root else None,
    }
    last_error = ""
    for attempt in range(3):
        try:
            s = connect_worker(dev, config)
        except WorkerUnavailable as e:
            return _failure(definition.name, sol_name, wl_json, dev, "RUNTIME_ERROR", str(e))
        except OSError as e:
            last_error = f"{type(e).__name__}: {e}"
            time.sleep(0.2 * (attempt + 1))
            continue
        started = False
        try:
            send_msg(s, {"op": "evaluate", "request": req})
            msg = recv_msg(s, timeout=24 * 3600)  # queued behind other evaluations of this device
            started = msg.get("event") == "started"
            msg = recv_msg(s, timeout=config.timeout_s + config.startup_timeout_s + 120)
            if msg.get("event") != "result":
                raise ConnectionClosed(f"unexpected reply {str(msg)[:200]}")
            return Trace.model_validate_json(msg["trace"])
        except TimeoutError:
            return _failure(definition.name, sol_name, wl_json, dev, "TIMEOUT", "the worker did not answer in time")
        except (ConnectionClosed, OSError) as e:
            last_error = f"{type(e).__name__}: {e}"
            if started:
                return _failure(
                    definition.name, sol_name, wl_json, dev, "RUNTIME_ERROR",
                    f"the worker died during the evaluation: {last_error}",
                )
            time.sleep(0.2 * (attempt + 1))
        finally:
            s.close()
    return _failure(definition.name, sol_name, wl_json, dev, "RUNTIME_ERROR", f"could not reach the worker: {last_error}")
