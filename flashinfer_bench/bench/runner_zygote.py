"""A fork server for runners: torch and the evaluator imported once, each runner forked from it.

Every solution gets a fresh runner (issue 15), and a runner spent 2-6 s importing torch and our
evaluator before its first evaluation: on the H100 a cold run of 3 solutions spent ~25 s of its
69 s there (issue 19). The zygote imports them once and never does anything else: it never
initialises CUDA, never loads a solution or a reference, holds no secret. A runner forked from it
is a fresh process that confines itself exactly as a runner started from scratch does
(`runner.main` -> `confine.prepare` while single-threaded: a forked child has one thread).

    python -m flashinfer_bench.bench.runner_zygote --control FD --events FD

Control (SOCK_SEQPACKET, one JSON message a packet): the supervisor sends
`{"op": "fork", "argv": [...], "log": PATH, "cwd": DIR}` with the runner's socket end attached
(SCM_RIGHTS) and gets `{"pid": N}` or `{"error": "..."}`. Events (SOCK_SEQPACKET): the zygote
reports each runner's end, `{"exit": N, "status": WAITSTATUS}`, as it reaps it.
"""
from __future__ import annotations

import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from typing import Any, Dict, List, Optional

# what a runner imports before its first evaluation (not torch.cuda's initialisation)
PRELOAD = ("torch", "flashinfer_bench.bench.evaluate", "flashinfer_bench.bench.runner")
MAX_PACKET = 1 << 20


def _fork_runner(msg: Dict[str, Any], fd: int, control: socket.socket, events: socket.socket, wake_r: int) -> int:
    """Fork one runner; returns its pid (in the zygote)."""
    pid = os.fork()
    if pid:
        return pid
    # the runner-to-be: nothing of the zygote's channels, its own session (the supervisor kills
    # the process group), the log as stdout/stderr, the default signal handlers
    code = 3
    try:
        control.close()
        events.close()
        os.close(wake_r)
        wake_w = signal.set_wakeup_fd(-1)  # the zygote's write end: a runner must hold nothing of it
        if wake_w >= 0:
            os.close(wake_w)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        log = os.open(msg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.chdir(msg["cwd"])
        import tempfile

        tempfile.tempdir = None  # the runner's TMPDIR (set by its confinement), not the zygote's
        argv: List[str] = list(msg["argv"])
        argv[argv.index("--fd") + 1] = str(fd)
        os.set_inheritable(fd, False)
        from flashinfer_bench.bench import runner

        code = runner.main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - the runner's start failed: say why in its log
        # (opened again: the sandbox's shim may have pointed fds 0-2 at /dev/null by now)
        with open(msg["log"], "a") as f:
            traceback.print_exc(file=f)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def serve(control: socket.socket, events: socket.socket) -> int:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    alive: set = set()  # the runners forked and not yet reaped
    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                alive.discard(pid)
                events.send(json.dumps({"exit": pid, "status": status}).encode())
        if control in ready:
            try:
                data, fds, _, _ = socket.recv_fds(control, MAX_PACKET, 1)
            except InterruptedError:
                continue
            if not data:
                # the supervisor is gone: so are we, and so are its runners, also one it had
                # stopped (SIGSTOP while another evaluation ran), which would never see its
                # channel close and exit
                for pid in alive:
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except OSError:
                        continue
                return 0
            msg = json.loads(data)
            if msg.get("op") != "fork" or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                control.send(json.dumps({"error": f"bad request {msg.get('op')!r} with {len(fds)} fd(s)"}).encode())
                continue
            try:
                pid = _fork_runner(msg, fds[0], control, events, wake_r)
                alive.add(pid)
                control.send(json.dumps({"pid": pid}).encode())
            except OSError as e:
                control.send(json.dumps({"error": f"fork failed: {e}"}).encode())
            finally:
                os.close(fds[0])


class ForkedRunner:
    """A runner forked by the zygote, seen from the supervisor like a `subprocess.Popen`: `pid`,
    `returncode`, `poll()`, `wait(timeout)` (its exit status comes from the zygote, its parent)."""

    def __init__(self, pid: int, zygote: "ZygoteClient") -> None:
        self.pid = pid
        self.returncode: Optional[int] = None
        self._zygote = zygote

    def poll(self) -> Optional[int]:
        if self.returncode is None:
            status = self._zygote.exit_status(self.pid)
            if status is not None:
                self.returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired(f"runner {self.pid}", timeout or 0)
            time.sleep(0.005)
        assert self.returncode is not None
        return self.returncode


class ZygoteClient:
    """The supervisor's side: starts the zygote (with the runners' environment) and forks runners."""

    def __init__(self, env: Dict[str, str], log_path: str, cwd: str, startup_timeout: float) -> None:
        self._control, zc = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._events, ze = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with open(log_path, "ab") as lf:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "flashinfer_bench.bench.runner_zygote", "--control", str(zc.fileno()),
                 "--events", str(ze.fileno())],
                pass_fds=(zc.fileno(), ze.fileno()), stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                env=env, start_new_session=True, cwd=cwd,
            )
        zc.close()
        ze.close()
        self._lock = threading.Lock()  # the exit statuses
        self._fork_lock = threading.Lock()  # one request on the control socket at a time
        self._exits: Dict[int, int] = {}
        self._control.settimeout(startup_timeout)
        data = self._control.recv(MAX_PACKET)  # {"ready": pid}; empty when the zygote died
        if not data:
            self.close()
            raise OSError(f"the runner zygote exited during start-up (see {log_path})")
        self._control.settimeout(60)
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        while True:
            try:
                data = self._events.recv(MAX_PACKET)
            except OSError:
                return
            if not data:
                return
            msg = json.loads(data)
            with self._lock:
                self._exits[int(msg["exit"])] = int(msg["status"])

    def exit_status(self, pid: int) -> Optional[int]:
        with self._lock:
            status = self._exits.get(pid)
        if status is None and self.proc.poll() is not None:
            # the zygote is gone, nobody reaps this runner any more: alive or killed, as far as we know
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return signal.SIGKILL
        return status

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, argv: List[str], sock_fd: int, log_path: str, cwd: str) -> ForkedRunner:
        msg = json.dumps({"op": "fork", "argv": argv, "log": log_path, "cwd": cwd}).encode()
        with self._fork_lock:
            socket.send_fds(self._control, [msg], [sock_fd])
            data = self._control.recv(MAX_PACKET)
        reply = json.loads(data) if data else {"error": "the runner zygote exited"}
        if "pid" not in reply:
            raise OSError(reply.get("error", "no pid"))
        return ForkedRunner(int(reply["pid"]), self)

    def close(self) -> None:
        for s in (self._control, self._events):
            try:
                s.close()
            except OSError:
                pass
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--control", type=int, required=True)
    ap.add_argument("--events", type=int, required=True)
    args = ap.parse_args(argv)
    control = socket.socket(fileno=args.control)
    events = socket.socket(fileno=args.events)
    os.set_inheritable(args.control, False)
    os.set_inheritable(args.events, False)
    # no PR_SET_PDEATHSIG: it fires when the supervisor's *thread* that started us ends. The
    # zygote ends when its control socket closes, i.e. with its worker (serve's empty read).
    # `-m` put our working directory first on sys.path, and a runner's Landlock policy may read
    # every sys.path entry: none of ours (an exec'd runner's is its own scratch)
    here = os.getcwd()
    sys.path[:] = [p for p in sys.path if p not in ("", here)]
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    control.send(json.dumps({"ready": os.getpid()}).encode())
    return serve(control, events)


if __name__ == "__main__":
    sys.exit(main())
