"""A build zygote: a process that has imported torch once and forks a fresh build child per build.

Every build runs its solution's import and warm-up in a child process (`compile/child.py`), and
most of a child's wall time was Python importing torch (about 5 s on the H100 machine, a Triton
build 6-8 s in all). The zygote imports torch (and nothing that touches CUDA) once; each build is
then a `fork()` whose child starts with torch in memory, initialises CUDA itself if it needs it,
and runs `child.main` exactly as a spawned child would: own session, own working directory,
environment and log file. The zygote waits for it and sends the exit status back; if the
requesting process disappears first, the zygote kills the child's process group.

This module forks builds only. `serve` takes further request kinds from its caller: the
workflow's job server (`pipeline/job_server.py`) is this zygote plus the workflow's own jobs.

Opt-in: `FIB_BUILD_ZYGOTE=1` (the pipeline sets it and starts its job server with the workflow,
so its import overlaps Snakemake's own start-up). A build uses a zygote that answers, or waits
for one that is starting; otherwise it spawns its child as before (a build never starts a
zygote). The zygote exits after `IDLE_S` without a request. One zygote per interpreter, search
path and package code (the socket's name hashes them), so an edited package never serves builds
with stale code.

    python -m flashinfer_bench.compile.zygote --socket PATH      # builds only (`ensure_started`)
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

IDLE_S = 600.0
START_WAIT_S = 30.0
_PKG = Path(__file__).resolve().parent.parent
_HDR = struct.Struct("!I")

try:
    from ..fingerprint import code_fingerprint
except ImportError:  # loaded by path (scripts/_job.py, before site-packages): no package to import from
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_fib_fingerprint", _PKG / "fingerprint.py")
    _fp = sys.modules["_fib_fingerprint"] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_fp)  # type: ignore[union-attr]
    code_fingerprint = _fp.code_fingerprint


def enabled() -> bool:
    return os.environ.get("FIB_BUILD_ZYGOTE", "").strip().lower() in ("1", "true", "yes") and hasattr(os, "fork")


def socket_path() -> Path:
    """Named after the whole package (its forks run job scripts of every layer), the interpreter
    and PYTHONPATH: a zygote of other code never serves a job."""
    digest = code_fingerprint((), f"{sys.executable}\0{os.environ.get('PYTHONPATH', '')}")
    base = Path(os.environ.get("FIB_ZYGOTE_DIR") or f"/tmp/fib-build-zygote-{os.getuid()}")
    return base / f"{digest[:16]}.sock"


def send_fds(sock: socket.socket, fds: list) -> None:
    """Every request starts with one byte carrying the client's stdio fds (none for a build)."""
    socket.send_fds(sock, [b"F"], fds)


def send(sock: socket.socket, obj: Dict) -> None:
    data = json.dumps(obj).encode()
    sock.sendall(_HDR.pack(len(data)) + data)


def recv(sock: socket.socket) -> Optional[Dict]:
    head = b""
    while len(head) < _HDR.size:
        chunk = sock.recv(_HDR.size - len(head))
        if not chunk:
            return None
        head += chunk
    (n,) = _HDR.unpack(head)
    body = b""
    while len(body) < n:
        chunk = sock.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)


# ---------------------------------------------------------------------------------- client side
def ensure_started(server: str = "flashinfer_bench.compile.zygote") -> None:
    """Start a zygote in the background when none answers (returns at once): `python -m server
    --socket PATH`, this module (builds only) or one that serves more (`pipeline/job_server.py`)."""
    if not enabled():
        return
    path = socket_path()
    answering = connect(path, timeout=0.5)
    if answering is not None:
        answering.close()
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = path.with_suffix(".starting")
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        if time.time() - lock.stat().st_mtime < 120:
            return  # another process is starting it
        lock.unlink(missing_ok=True)
        return
    os.close(fd)
    subprocess.Popen(
        [sys.executable, "-m", server, "--socket", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=open(path.with_suffix(".log"), "ab"),
        start_new_session=True, cwd="/",
    )


def connect(path: Path, timeout: float) -> Optional[socket.socket]:
    """A connection to the zygote at `path`, None when none answers.

    Not bench.protocol.connect: the workflow's jobs load this module by path (pipeline/job_main.py),
    where it cannot import the package; and the timeout stays on for the zygote's replies."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(str(path))
    except OSError:
        s.close()
        return None
    return s


def _wait_for_zygote(path: Path) -> Optional[socket.socket]:
    """A connection to the zygote, waiting for one that is starting (its start costs what a
    spawned child's torch import would); None when none is starting or it does not come up in
    START_WAIT_S."""
    deadline = time.monotonic() + START_WAIT_S
    while True:
        s = connect(path, timeout=1.0)
        if s is not None:
            return s
        if not path.with_suffix(".starting").exists() or time.monotonic() > deadline:
            return None  # none is starting, or its start failed (its log: <socket>.log)
        time.sleep(0.1)


def ask(s: socket.socket, kind: str, body: Dict, fds: List[int], timeout_s: Optional[float]) -> Tuple[str, Optional[int]]:
    """Have the zygote fork a child for request `kind` and wait for it: ("done", exit status);
    ("refused", None) when no child was started (an unknown kind, a zygote going away);
    ("lost", None) when the connection ended after the child started; ("timeout", None) after
    `timeout_s` (closing the connection then makes the zygote kill the child). Raises
    ForgedReply when the answer is not the zygote's: a build child keeps the connection."""
    started: Optional[Dict] = None
    try:
        s.settimeout(10.0)
        send_fds(s, fds)
        send(s, {**body, "kind": kind})
        started = recv(s)
        if not isinstance(started, dict) or type(started.get("pid")) is not int or started["pid"] <= 0:
            return "refused", None  # the zygote sends the pid before the child may run
        s.settimeout(timeout_s)
        done = recv(s)
    except socket.timeout:
        return ("timeout", None) if started else ("refused", None)
    except OSError:
        return ("lost", None) if started else ("refused", None)
    except (ValueError, RecursionError):  # not JSON: not the zygote's (a build child keeps the connection)
        if not started:
            return "refused", None
        raise ForgedReply(started["pid"]) from None
    if not done or "rc" not in done:
        return "lost", None
    if type(done.get("rc")) is not int or _alive(started["pid"]):
        # the zygote answers once it has reaped the child: a child still alive, or an answer of
        # another shape, is the child's own forgery on the connection it keeps
        # (`build_zygote_reply`, `build_zygote_race`)
        raise ForgedReply(started["pid"])
    return "done", done["rc"]


class ForgedReply(Exception):
    """A build child answered on the zygote's connection for the zygote."""


def _alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie does not). Its own reading of /proc, not
    sandbox.procfs: the workflow's jobs load this module by path, stdlib only (scripts/_job.py)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _wait_gone(pid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def run_build_child(job_path: Path, cwd: Path, env: Dict[str, str], log_path: Path, timeout_s: float) -> Optional[Tuple[int, bool]]:
    """(return code, timed out) of a build child forked by the zygote; None when no zygote answers.

    The child runs `child.main([.., job_path])` in `cwd` with exactly `env`, its output in
    `log_path`. On a timeout the zygote kills the child's process group.
    """
    if not enabled():
        return None
    s = _wait_for_zygote(socket_path())
    if s is None:
        return None
    try:
        how, rc = ask(s, "build", {"job": str(job_path), "cwd": str(cwd), "env": env, "log": str(log_path)}, [], timeout_s)
    except ForgedReply as e:
        s.close()  # the zygote kills the child's tree when its connection ends
        _wait_gone(e.args[0], 10.0)
        raise
    finally:
        s.close()
    if how == "timeout":
        return -signal.SIGKILL, True
    if how != "done" or rc is None:
        return None  # refused, or lost: the build child (if any) has exited, so a spawned one may run
    return rc, False


# ---------------------------------------------------------------------------------- zygote side
# A request kind -> what its forked child runs: f(request, the client's fds) -> exit status.
Handler = Callable[[Dict, List[int]], int]


def _exit_with(run: Callable[[], int], inherited: list) -> None:
    """In a forked child: leave the zygote's sockets and session, run, and exit with run's status
    (or 1 and the traceback on its stderr); never returns."""
    rc = 1
    try:
        for s in inherited:  # the zygote's listening socket and other requests' connections
            s.close()
        os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        rc = run()
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - the child's own failure: its log/stderr says why
        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc)


def _build_child(req: Dict, fds: List[int]) -> int:
    """Become the build child of `req`: its cwd, environment and log file, then `child.main`."""
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    os.environ["FIB_BUILD_PARENT_PID"] = str(os.getppid())
    fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.argv = ["flashinfer_bench.compile.child", req["job"]]
    sys.path.insert(0, req["cwd"])
    from . import child

    return child.main(sys.argv)


# A build child keeps its request's connection open: should the zygote die, the waiting build sees
# the end only once its child has exited, and never spawns a second build into the same directory.
_KEEPS_CONNECTION = {"build"}


def serve(path: Path, handlers: Optional[Dict[str, Handler]] = None, preload: Sequence[str] = ()) -> None:
    """Answer requests at `path`: builds, and the kinds in `handlers`. The modules in `preload`
    are imported once the zygote is listening and idle (builds need only torch and come first)."""
    # the point of the zygote: children start with torch imported. Not Triton: a build decides
    # per request whether Triton runs interpreted (TRITON_INTERPRET in its environment), and an
    # import made before that setting breaks interpreted kernels ("Cannot call @triton.jit'd
    # outside of the scope of a kernel"; tests/compile/test_zygote.py checks it).
    import torch  # noqa: F401

    kinds: Dict[str, Handler] = {"build": _build_child, **(handlers or {})}
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(tmp))
    srv.listen(64)
    srv.setblocking(False)  # an event that is not a client (see `_closed`) must not block the loop
    os.replace(tmp, path)
    my_inode = os.stat(path).st_ino
    path.with_suffix(".starting").unlink(missing_ok=True)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    running: Dict[int, socket.socket] = {}  # child pid -> the connection waiting for it
    keeper = None  # kills the builds whole should this zygote be killed (`_kept`)
    last = time.monotonic()
    preloaded = not preload
    try:
        while True:
            events = sel.select(timeout=0.2)
            if not events and not preloaded:
                preloaded = True
                _preload(preload)
            for key, _ in events:
                if key.fileobj is srv:
                    try:
                        conn, _ = srv.accept()
                    except BlockingIOError:  # no client after all: never wait for one here
                        continue
                    conn.settimeout(10.0)
                    try:
                        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
                        req = recv(conn)
                    except OSError:
                        req, fds = None, []
                    handler = kinds.get(str((req or {}).get("kind")))
                    if handler is None:  # nothing, or a kind this zygote does not serve
                        for fd in fds:
                            os.close(fd)
                        conn.close()
                        continue
                    kept = req["kind"] == "build"
                    if kept:
                        try:
                            keeper = keeper or _keeper()
                            req["env"] = {**req["env"], "FIB_BUILD_KEPT": "1"}  # no death signal of its own
                        except OSError as e:  # the build keeps its death signal, as before keepers
                            print(f"build zygote: no keeper ({e}); builds die with the zygote alone", file=sys.stderr)
                            kept = False
                    go_r, go_w = os.pipe()
                    pid = os.fork()
                    if pid == 0:
                        # the selector too: a build holding its epoll descriptor added fake "readable"
                        # entries named after other builds' connections, and the zygote killed those
                        # builds (`build_zygote_epoll`, red team 7)
                        inherited = [srv, sel, *running.values(), *_keeper_ends(keeper)]
                        if req["kind"] not in _KEEPS_CONNECTION:
                            inherited.append(conn)
                        _exit_with(lambda: _after(go_r, go_w) and handler(req, fds), inherited)
                    os.close(go_r)
                    try:  # the pid first, before the child may run: it keeps the connection
                        send(conn, {"pid": pid})
                    except OSError:
                        pass
                    try:
                        if kept:
                            keeper.register(pid)
                        os.write(go_w, b"1")  # registered: the child may start (it exits on EOF)
                    except OSError as e:  # unregistered, it exits at once: rc 1, said in the zygote's log
                        print(f"build zygote: build {pid} not registered with the keeper ({e})", file=sys.stderr)
                    finally:
                        os.close(go_w)
                    for fd in fds:
                        os.close(fd)
                    running[pid] = conn
                    sel.register(conn, selectors.EVENT_READ, pid)
                    last = time.monotonic()
                else:  # a waiting client closed its end (killed, or gave up on a timeout)
                    if not _closed(key.fileobj):
                        continue  # readable, not ended: nothing a client sends after its request
                    pid = key.data
                    sel.unregister(key.fileobj)
                    # the whole tree: its process group would miss what runs in a session of its own.
                    # Imported here: jobs load this module by path, stdlib only (scripts/_job.py)
                    from flashinfer_bench.sandbox.proctree import kill_tree

                    kill_tree(pid)
            for pid in list(running):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done == 0:
                    continue
                conn = running.pop(pid)
                try:
                    sel.unregister(conn)
                except (KeyError, ValueError):
                    pass
                try:
                    send(conn, {"rc": os.waitstatus_to_exitcode(status)})
                except OSError:
                    pass
                conn.close()
                last = time.monotonic()
            if not running and time.monotonic() - last > IDLE_S:
                return
            try:
                if os.stat(path).st_ino != my_inode:
                    return  # replaced by a newer zygote
            except FileNotFoundError:
                return  # removed by a cleanup
    finally:
        try:
            if os.stat(path).st_ino == my_inode:
                path.unlink()
        except OSError:
            pass
        srv.close()


def _closed(conn: socket.socket) -> bool:
    """Whether a waiting client's connection has ended (not merely been reported readable)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _keeper():  # noqa: ANN202 - sandbox.keeper.Keeper, imported here (module: stdlib only)
    """The keeper of this zygote's builds (`sandbox/keeper.py`): a build child carries no death
    signal (FIB_BUILD_KEPT), so that when the zygote is killed outright the keeper, seeing its pipe
    close, kills the build with everything it started, daemons in sessions of their own included
    (the death signal would end the child alone and hand those to init)."""
    from flashinfer_bench.sandbox.keeper import Keeper

    k = Keeper()
    k.start()
    return k


def _keeper_ends(keeper) -> list:  # noqa: ANN001
    """What a forked child closes of the keeper: the pipe's write end (held by a child, the pipe
    would not close when the zygote dies)."""
    proc = getattr(keeper, "_proc", None)
    return [proc.stdin] if proc is not None and proc.stdin is not None else []


def _after(go_r: int, go_w: int) -> bool:
    """In a forked child: wait until the zygote has registered it with the keeper; exit if the
    zygote died first (the pipe reads EOF), as no one would then kill this build."""
    os.close(go_w)
    ok = os.read(go_r, 1) == b"1"
    os.close(go_r)
    if not ok:
        os._exit(1)
    return True


def _preload(names: Sequence[str]) -> None:
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # optional parts (the report's pandas): the child imports what it can
            pass


def main(argv: Optional[list] = None, handlers: Optional[Dict[str, Handler]] = None, preload: Sequence[str] = ()) -> int:
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(Path(a.socket), handlers, preload)
    finally:
        Path(a.socket).with_suffix(".starting").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
