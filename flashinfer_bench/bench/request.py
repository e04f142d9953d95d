"""The evaluation request and its exchange with a device's worker, for both clients.

The benchmark job's stdlib-only fast path (`pipeline/thin_client.py`, which loads this file by
path, without site-packages) and the full client (`bench/client.py`: the Python API, and the
job's path when no worker answers) build the request here and send it here, so the worker gets
one request for one pair whichever door it came through. Standard library only.

The worker's `op: evaluate` takes `{"definition", "solution_name", "workload", "build", "config",
"dataset_root"}` (JSON: the definition, workload and build as dicts, the config as EvalConfig's
fields with `device` set) and answers `{"event": "started"}` when the evaluation leaves its
queue, then `{"event": "result", "trace": <Trace JSON>}`.
"""
from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any, Dict, Optional

try:
    from . import addressing, protocol
except ImportError:  # loaded by path (the thin client): no package to import from
    import importlib.util

    def _sibling(name: str) -> Any:
        """A stdlib-only module beside this file, loaded by path once (the thin client's names)."""
        if f"_fib_{name}" not in sys.modules:
            spec = importlib.util.spec_from_file_location(f"_fib_{name}", Path(__file__).resolve().parent / f"{name}.py")
            sys.modules[f"_fib_{name}"] = mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)  # type: ignore[union-attr]
        return sys.modules[f"_fib_{name}"]

    addressing, protocol = _sibling("addressing"), _sibling("protocol")

CONNECT_TIMEOUT_S = 5.0
# a request waits in the worker's queue behind the evaluations of other jobs on this device
QUEUE_WAIT_S = 24 * 3600.0
# EvalConfig's defaults, for a config that leaves these out (tests/pipeline/test_one_request.py checks them)
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_STARTUP_TIMEOUT_S = 300.0


class WorkerLost(Exception):
    """The worker closed the connection or answered outside the protocol; `started` says whether
    it had begun the evaluation (then a retry would charge the solution twice)."""

    def __init__(self, message: str, started: bool) -> None:
        super().__init__(message)
        self.started = started


def evaluation_request(
    definition: Dict[str, Any], solution_name: str, workload: Dict[str, Any], build: Dict[str, Any],
    config: Dict[str, Any], dataset_root: Optional[str],
) -> Dict[str, Any]:
    """The request for one (solution, workload); `config` without the device (`on_device` adds
    it once the job holds one)."""
    return {
        "definition": definition, "solution_name": solution_name, "workload": workload, "build": build,
        "config": dict(config), "dataset_root": dataset_root,
    }


def on_device(request: Dict[str, Any], device: str) -> Dict[str, Any]:
    """The request for `device` (a resolved name: 'cpu', 'cuda:N')."""
    return {**request, "config": {**request["config"], "device": device}}


def result_timeout(config: Dict[str, Any]) -> float:
    """How long a started evaluation may take before the client gives up on the worker: the
    evaluation's timeout, a runner's start, and a margin for the worker's own work."""
    timeout = config.get("timeout_s")
    startup = config.get("startup_timeout_s")
    return float(DEFAULT_TIMEOUT_S if timeout is None else timeout) + float(
        DEFAULT_STARTUP_TIMEOUT_S if startup is None else startup) + 120.0


def connect(device: str, worker_dir: Path) -> socket.socket:
    """A connection to the running worker of `device` in `worker_dir`; OSError when none answers."""
    return protocol.connect(addressing.worker_paths(device, worker_dir)["socket"], timeout=CONNECT_TIMEOUT_S)


def exchange(sock: socket.socket, request: Dict[str, Any]) -> str:
    """Send one evaluation request (from `on_device`) and wait for its trace's JSON.

    TimeoutError when the worker does not answer in time; WorkerLost when it goes away or
    answers something else."""
    started = False
    try:
        protocol.send_msg(sock, {"op": "evaluate", "request": request})
        msg = protocol.recv_msg(sock, timeout=QUEUE_WAIT_S)
        if msg.get("event") != "started":
            raise WorkerLost(f"unexpected reply {str(msg)[:200]}", started=False)
        started = True
        msg = protocol.recv_msg(sock, timeout=result_timeout(request["config"]))
    except TimeoutError:  # an OSError too, but not a lost worker: it did not answer in time
        raise
    except (protocol.ConnectionClosed, OSError) as e:
        raise WorkerLost(f"{type(e).__name__}: {e}", started) from e
    if msg.get("event") != "result":
        raise WorkerLost(f"unexpected reply {str(msg)[:200]}", started=True)
    return msg["trace"]
