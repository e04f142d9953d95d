"""The keeper: kills a process's runners or build children when that process is gone, stopped ones too.

A runner that has run a solution is stopped (SIGSTOP) whenever its supervisor is not talking to
it (`worker.Supervisor`, issue 15: nothing a solution left running may share the machine with
another measurement). A stopped process never sees its channel close, so a worker killed outright
(SIGKILL, the OOM killer) would leave its runners stopped for ever, holding their memory and, on
a GPU, their CUDA context. The keeper is a small process in its own session (a signal to the
worker's process group does not reach it) that holds the read end of a pipe whose only write end
the worker holds; the worker writes `<pid> <start time>` for each runner it starts. When the pipe
reads EOF (the worker is gone, however it went), the keeper SIGKILLs every registered runner
that is still the same process (its start time matches: a recycled pid is left alone), every
process below it, and its process group, then exits.

    python -m flashinfer_bench.sandbox.keeper        (the pipe on stdin)

Torch-free and fast to start (~0.1 s); the runner zygote does the same for the runners it forks,
the keeper covers those started from scratch (the default on a GPU) and those alike. A build
started as a process of its own (`compile/build.py`) is kept the same way: killed with
everything it started should the process that runs it die mid-build (its own death signal
alone would hand what it started in a session of its own to init).
"""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
from typing import Dict, Optional

from .procfs import start_time
from .proctree import kill_tree


def kill_runner(pid: int, started: Optional[int]) -> None:
    """SIGKILL the runner `pid` (if it is still the process that started at `started`), every
    process below it and its process group. SIGKILL ends a stopped process too."""
    if started is not None and start_time(pid) != started:
        return
    kill_tree(pid)


def serve(stream) -> int:  # noqa: ANN001 - a binary file
    """Read registrations until EOF, then kill every registered runner."""
    runners: Dict[int, Optional[int]] = {}
    for line in stream:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            runners[int(parts[0])] = int(parts[1]) if parts[1].isdigit() else None
    for pid, started in runners.items():
        kill_runner(pid, started)
    return 0


class Keeper:
    """The worker's side: starts the keeper on first use and registers runners with it."""

    def __init__(self) -> None:
        self._proc: Optional[subprocess.Popen] = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the keeper now if it is not running (OSError when it cannot)."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "flashinfer_bench.sandbox.keeper"], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
            )

    def register(self, pid: int) -> None:
        """Have the keeper kill `pid` (and all below it) once this process is gone. Raises
        OSError when the keeper cannot start or is gone: a runner nobody would kill is not started."""
        line = f"{pid} {start_time(pid) or '-'}\n".encode()
        with self._lock:
            self._ensure()
            assert self._proc is not None and self._proc.stdin is not None
            self._proc.stdin.write(line)
            self._proc.stdin.flush()

    def close(self) -> None:
        """The worker's orderly end: the keeper kills what is left and exits."""
        with self._lock:
            if self._proc is None:
                return
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            self._proc = None


if __name__ == "__main__":
    # stdin's read end is the keeper's only link to the worker; ignore the signals a terminal or
    # a job manager sends the worker's session (ours is our own anyway)
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    sys.exit(serve(sys.stdin.buffer))
