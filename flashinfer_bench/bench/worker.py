"""The per-device worker: a trusted supervisor that owns the socket and writes traces.

    python -m flashinfer_bench.bench.worker --socket PATH --device cuda:0 --worker-dir DIR

It never imports torch. It keeps one runner child (`runner.py`) that holds torch, CUDA, loaded
solutions and cached reference outputs, sends it one evaluation at a time, and turns the answer
into a Trace. When the runner dies (segfault, abort, `os._exit`, illegal memory access) the
evaluation becomes RUNTIME_ERROR with the runner's captured output; when it does not answer within
the evaluation's timeout it is killed and the evaluation becomes TIMEOUT. Either way a new runner
is started at once and the next request is served. The worker exits after `--idle-timeout`
seconds without requests, or when its socket file is removed or replaced.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from pydantic import ValidationError

from .. import measure_lock
from ..compile.cache import remove_entry
from ..data import Definition, Workload
from ..data.charge import DATASET_ERROR, ENVIRONMENT_ERROR, says_out_of_memory
from .assemble import assemble_trace, environment, read_capped, solution_hash_of
from .config import EvalConfig
from .protocol import RUNNER_MAX_MESSAGE, ConnectionClosed, MessageTooLarge, MessageUnreadable, recv_msg, send_msg
from .runner_zygote import ForkedRunner, ZygoteClient
from .sandbox import quiet, supervise, witness, witness_graph
from ..sandbox.keeper import Keeper
from ..sandbox.policy import Settings
from .speedup import reusable_reference

log = logging.getLogger("flashinfer_bench.worker")


# what a runner may see of the worker's environment: the toolchain, the device, our settings.
# Nothing else (API tokens, cloud credentials, the user's HOME and name) reaches solution code.
_ENV_NAMES = {
    "PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE",
    "PYTHONPYCACHEPREFIX", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "CC", "CXX", "CUDA_HOME", "CUDA_PATH",
    "TMPDIR", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "FIB_ALLOW_UNCONFINED", "FIB_CPU_THREADS",
    "FIB_CUDA_ARCH", "FIB_CALIBRATE_CUPTI", "FIB_SANDBOX", "FIB_BUILD_TIMEOUT",
}
_ENV_PREFIXES = ("LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TVM_FFI_", "TILELANG_", "FIB_SANDBOX_", "NCCL_")


def runner_environment(env: Dict[str, str]) -> Dict[str, str]:
    """The allow-listed part of `env` (issue 15: an exported secret ended up in a trace log)."""
    return {k: v for k, v in env.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}


# how long the supervisor reuses a reference timing (same definition, workload, settings, device)
REF_CACHE_TTL_S = 600.0
# a GPU runner being parked gives its memory back first (`trim`); it has this long to answer
PARK_TIMEOUT_S = 30.0
# runners kept for other solutions (the pipeline interleaves solutions): each holds torch (~0.4 GB),
# on a GPU also a CUDA context and its input caches; FIB_RUNNER_POOL overrides


def runner_pool(device: str) -> int:
    return max(1, int(os.environ.get("FIB_RUNNER_POOL", "6" if device == "cpu" else "3")))


def _out_of_memory(trace_json: str) -> bool:
    """Did this evaluation fail for want of GPU memory (its trace's message or log says so)?"""
    t = json.loads(trace_json)
    ev = t.get("evaluation") or {}
    if ev.get("status") not in ("RUNTIME_ERROR", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL"):
        return False
    return says_out_of_memory(str(ev.get("log") or ""))


def _canonical(model: Any, obj: Any) -> Any:
    """`obj` as its model dumps it: the benchmark job sends a definition or workload as its file
    spells it, the Python API as the model dumps it (defaults filled in); one reference timing
    serves both. An object the model refuses keys as it came."""
    try:
        return model.model_validate(obj).model_dump(mode="json")
    except ValidationError:
        return obj


def _shm_entries() -> set:
    try:
        return set(os.listdir("/dev/shm"))
    except OSError:
        return set()


def _recharge(result: Dict[str, Any], ref_stats: Optional[Dict[str, Any]]) -> None:
    """A failure the solution's runner charges to the dataset or the machine (its message's
    prefix, `data/charge.py`) stands only where the supervisor cannot tell otherwise: that runner
    is the solution's process, and a solution that raised such a message (`charge_environment`:
    "environment error ... CUDA driver reset") kept its failure out of the dataset and an older
    PASSED trace in it. When the definition's reference ran on this workload in the reference
    runner, where no solution runs, the failure is the solution's."""
    message = str(result.get("message") or "")
    if result.get("status") == "PASSED" or not message.startswith((DATASET_ERROR, ENVIRONMENT_ERROR)):
        return
    if ref_stats is None or "failed" in ref_stats:
        return
    result["message"] = ("the solution's runner reported a failure that is not the solution's, but the "
                         "definition's reference ran on this workload in the reference runner, where no solution "
                         "runs: charged to the solution. Its runner said: " + message)


def _private_name(kind: str) -> str:
    """A log's or a scratch folder's name, with 64 random bits: a runner may `stat` any name it can
    spell (no Landlock right governs it) and truncate its own logs to any size, so with names from
    a counter (`eval-<i % 64>.log`, `runner-<n>.log`) `log_size_channel` read a later runner the tag
    an earlier one had left in its logs' sizes (session 22)."""
    return f"{kind}-{os.urandom(8).hex()}"


def _hand_log(sock: socket.socket, log_path: Path) -> None:
    """Make the evaluation's log file anew and hand the runner an open descriptor of it (SCM_RIGHTS
    right after the request): a runner may write its log and nothing else of the logs' folder.
    When it could create files there (its write access, until session 19), it planted read-only
    logs under the next evaluations' names, which killed every later runner
    (`log_dir_lockout`), passed data to later runners in other files' sizes (`log_dir_channel`)
    and left 320 MiB outside its scratch quota (`log_dir_fill`)."""
    try:
        log_path.unlink()
    except FileNotFoundError:
        pass
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        socket.send_fds(sock, [b"L"], [fd])
    finally:
        os.close(fd)


class RunnerStartError(RuntimeError):
    pass


@dataclass
class RunnerHandle:
    proc: Any  # subprocess.Popen, or a runner_zygote.ForkedRunner (the same calls)
    sock: socket.socket
    ready: Dict[str, Any]
    log_path: Path
    scratch: Path
    started: float = field(default_factory=time.monotonic)
    key: Optional[bytes] = None  # authenticates the runner's replies (sandbox.channel)
    seq: int = 0
    served: Optional[str] = None  # the solution (build hash) this runner has run, if any
    stopped: List[int] = field(default_factory=list)  # pids stopped while parked during an evaluation
    out_of_step: bool = False  # a reply may still come for an earlier request: never asked again (witness.out_of_step)


def reference_key(req: Dict[str, Any], cfg: EvalConfig, device: str) -> str:
    """What a reference timing is kept under: the definition and workload as their models dump
    them (a file that leaves defaults out and the API's dump are one), the timing settings, the
    inputs' settings and the device."""
    ident = json.dumps(
        [_canonical(Definition, req["definition"]), _canonical(Workload, req["workload"]), cfg.timing_key(),
         cfg.inputs, device], sort_keys=True, default=str,
    )
    return hashlib.sha256(ident.encode()).hexdigest()


def _leftovers(r: RunnerHandle, result: Dict[str, Any]) -> None:
    """Processes the solution left running after its evaluation (and the witness), seen from
    here: the runner is replaced, so none of them lives into another job (stopped between jobs,
    one that forks its successor faster than a walk of the tree could slip through a stop), and
    a PASSED trace is marked `background_work` (suspect) as the runner's own guard would have,
    had the solution not disarmed it."""
    left = supervise.leftover_processes(r.proc.pid, (r.ready or {}).get("pid"))
    if not left:
        return
    result["healthy"] = False
    result["unhealthy_reason"] = f"the solution left {len(left)} process(es) running"
    if result.get("status") == "PASSED" and "background_work" not in ((result.get("extra") or {}).get("flags") or []):
        witness._flag(result, "background_work", f"{len(left)} process(es) of the solution still running after "
                      f"its evaluation; its runner was replaced")


# what is kept of a runner's own log (its stdout and stderr) once the runner is gone: a solution
# wrote it to the file-size limit (1 GiB by default) and nothing removed it (`runner_log_fill`)
RUNNER_LOG_TAIL = 64 << 10


def _keep_tail(path: Path, limit: int) -> None:
    """Cut a runner's log to its last `limit` bytes, in place (for the diagnosis of what it
    printed last), once the runner is stopped or gone: a parked runner keeps the file open, so a
    replaced file would keep its blocks until the runner dies. Never through a link."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        size = os.fstat(fd).st_size
        if size <= limit:
            return
        tail = os.pread(fd, limit, size - limit)
        head = b"[... cut to its last %d bytes while its runner was stopped]\n" % limit
        os.pwrite(fd, head + tail, 0)
        os.ftruncate(fd, len(head) + len(tail))
    except OSError as e:
        log.warning("could not cut the runner log %s: %s", path, e)
    finally:
        os.close(fd)


def _unsolicited(sock: socket.socket) -> bool:
    """Whether a stopped runner left bytes in its socket that nobody asked for: descriptors sent
    with them (SCM_RIGHTS) stay in flight, counted against the host user's `unix_inflight`, until
    this end reads or closes (`pipe_pages_parked`); a parked runner holding them is discarded."""
    import select

    if sock.fileno() < 0:  # closed: the runner was discarded already
        return False
    try:
        ready, _, _ = select.select([sock], [], [], 0)  # (recv would wait out the socket's timeout)
        return bool(ready) and bool(sock.recv(1, socket.MSG_PEEK))
    except OSError:
        return True  # a broken connection: the runner is of no further use


def sol_key_of(req: Dict[str, Any]) -> str:
    """What a runner serves: the solution's build hash (its name when there is none)."""
    return str((req.get("build") or {}).get("hash") or req.get("solution_name"))


def describe_exit(rc: Optional[int]) -> str:
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return f"killed by signal {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


class Supervisor:
    def __init__(
        self, socket_path: Path, device: str, worker_dir: Path, idle_timeout: float, cache_dir: Path,
        startup_timeout: float = 300.0, visible: str = "", physical_index: Optional[int] = None,
        measure_lock: Optional[Path] = None,
    ) -> None:
        self.socket_path = socket_path
        self.device = device
        self.visible = visible
        self.physical_index = physical_index
        self.measure_lock = measure_lock
        self.worker_dir = worker_dir
        self.idle_timeout = idle_timeout
        self.cache_dir = cache_dir
        self.startup_timeout = startup_timeout
        self.runtime_dir = worker_dir / f"{socket_path.stem}.d"
        self.logs_dir = self.runtime_dir / "logs"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.base_seed = random.SystemRandom().randrange(1 << 31)
        self.runner: Optional[RunnerHandle] = None
        # times only references, never loads a solution: its numbers are clean of solution code
        self.ref_runner: Optional[RunnerHandle] = None
        self.ref_cache: Dict[str, Tuple[float, Dict[str, Any]]] = {}
        # runners of other solutions, each serving only its own, least recently used first
        self.parked: "OrderedDict[str, RunnerHandle]" = OrderedDict()
        self._keeper = Keeper()  # kills the runners if this process is killed (they may be stopped)
        self.last_ready: Optional[Dict[str, Any]] = None
        self._runner_lock = threading.Lock()
        self._to_gate: List[RunnerHandle] = []  # parked runners resumed for their trim: `_gate_parked`
        self._measure_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._active = 0
        self._last_activity = time.monotonic()
        self._stop = threading.Event()
        self._n_runner = 0
        self._zygote: Optional[ZygoteClient] = None
        self._zygote_failed = False
        self._last_eval_log: Optional[Path] = None
        self.start_error: Optional[str] = None
        self.readable: set = set()  # dataset roots etc. the runner may read (sandbox)
        self._private_runtime: Optional[Path] = None  # see _keep_runtime_private

    # ------------------------------------------------------------------ runner lifecycle
    def _keep_runtime_private(self) -> None:
        """Runners' scratch and the evaluations' logs live in the worker's runtime directory,
        which no runner may read: one inside a path runners read (a worker directory inside the
        artifact cache or a dataset) would show every runner the others' scratch (the reference
        runner's witness inputs before they are handed over) and other solutions' logs. Such a
        directory is replaced by a private one in the system's temp dir (never readable whole:
        sandbox.policy). Checked before every runner start and evaluation: the readable paths grow."""
        here = self.runtime_dir.resolve()
        inside = next((r for r in (Path(p).resolve() for p in (self.cache_dir, *self.readable) if p)
                       if here == r or r in here.parents), None)
        if inside is None:
            return
        self._private_runtime = Path(tempfile.mkdtemp(prefix=f"fib-worker-{os.getuid()}-"))
        log.warning("the worker's runtime directory %s is inside %s, which runners read: runners' scratch and "
                    "logs go to %s", self.runtime_dir, inside, self._private_runtime)
        self.runtime_dir = self._private_runtime
        self.logs_dir = self.runtime_dir / "logs"
        self.logs_dir.mkdir(parents=True, exist_ok=True)

    def _spawn_runner(self) -> RunnerHandle:
        self._n_runner += 1
        n = self._n_runner
        self._keep_runtime_private()
        # a random part here too: without a mount namespace (a GPU) the runners' scratch folders are
        # one folder apart, and a file's size there is as readable by `stat` as a log's
        scratch = self.runtime_dir / "scratch" / _private_name(f"runner-{n}")
        scratch.mkdir(parents=True, exist_ok=True)
        runner_log = self.logs_dir / (_private_name(f"runner-{n}") + ".log")
        env = runner_environment(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        args = [sys.executable, "-m", "flashinfer_bench.bench.runner", "--device"]
        if self.device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
            args += ["cpu"]
        else:
            # the runner sees exactly its GPU, as cuda:0
            env["CUDA_VISIBLE_DEVICES"] = self.visible
            args += ["cuda:0"]
            if self.physical_index is not None:
                args += ["--physical-index", str(self.physical_index)]
        parent, child = socket.socketpair()
        args += ["--fd", str(child.fileno()), "--scratch", str(scratch), "--cache-dir", str(self.cache_dir)]
        args += supervise.runner_args(self.readable)
        zygote = self._runner_zygote(env)
        proc: Any = None
        if zygote is not None:
            try:
                proc = zygote.fork(args[3:], child.fileno(), str(runner_log), str(scratch))
            except OSError as e:
                log.warning("the runner zygote could not fork (%s): starting runners from scratch", e)
                self._zygote_failed = True
        if proc is None:
            with open(runner_log, "ab") as lf:
                proc = subprocess.Popen(
                    args, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, stdout=lf, stderr=subprocess.STDOUT,
                    env=env, start_new_session=True, cwd=str(scratch),
                )
        child.close()
        try:
            msg = recv_msg(parent, timeout=self.startup_timeout, limit=RUNNER_MAX_MESSAGE)
        except (TimeoutError, ConnectionClosed) as e:
            self._kill(proc)
            parent.close()
            raise RunnerStartError(
                f"the runner did not start ({type(e).__name__}: {e}; {describe_exit(proc.poll())}):\n"
                + read_capped(runner_log, 16384)
            ) from e
        if msg.get("type") != "ready":
            self._kill(proc)
            parent.close()
            raise RunnerStartError(f"the runner failed to start: {msg.get('error')}\n{msg.get('traceback', '')}")
        try:
            self._keeper.register(proc.pid)
        except OSError as e:  # a runner nobody would kill if this worker died stopped is not started
            self._kill(proc)
            parent.close()
            raise RunnerStartError(f"the runner keeper could not start: {e}") from e
        log.info("runner %d ready (pid %d, %.1fs)", n, proc.pid, msg.get("startup_s", 0))
        key = supervise.key_of(msg)
        msg.pop("key", None)
        self.last_ready = msg
        return RunnerHandle(proc, parent, msg, runner_log, scratch, key=key)

    def _runner_zygote(self, env: Dict[str, str]) -> Optional[ZygoteClient]:
        """The fork server runners start from (torch imported once per worker), started on first
        use with the runners' environment; None when it is off or failed (runners then start from
        scratch). FIB_RUNNER_ZYGOTE=1/0 turns it on/off; default: on for the CPU, off on a GPU until
        measured there (issue 19)."""
        default = "1" if self.device == "cpu" else "0"
        if os.environ.get("FIB_RUNNER_ZYGOTE", default) != "1" or self._zygote_failed:
            return None
        if self._zygote is not None and self._zygote.alive():
            return self._zygote
        if self._zygote is not None:
            self._zygote.close()
        try:
            cwd = self.runtime_dir / "zygote"  # empty: nothing a runner could read there
            cwd.mkdir(parents=True, exist_ok=True)
            self._zygote = ZygoteClient(env, str(self.logs_dir / "runner-zygote.log"), str(cwd), self.startup_timeout)
        except OSError as e:
            log.warning("no runner zygote (%s): starting runners from scratch", e)
            self._zygote, self._zygote_failed = None, True
        return self._zygote

    @staticmethod
    def _kill(proc: Any) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            log.error("runner pid %d did not die after SIGKILL", proc.pid)

    def ensure_runner(self) -> RunnerHandle:
        with self._runner_lock:
            r = self.runner
            if r is not None and r.proc.poll() is None:
                return r
            if r is not None:
                self._discard(r)
            self.runner = self._spawn_runner()
            self.start_error = None
            return self.runner

    def _discard(self, r: RunnerHandle) -> None:
        self._kill(r.proc)
        try:
            r.sock.close()
        except OSError:
            pass
        shutil.rmtree(r.scratch, ignore_errors=True)
        _keep_tail(r.log_path, RUNNER_LOG_TAIL)
        if self.runner is r:
            self.runner = None
        if self.ref_runner is r:
            self.ref_runner = None
        for k in [k for k, v in self.parked.items() if v is r]:
            del self.parked[k]

    def replace_runner(self, r: RunnerHandle, why: str) -> None:
        """Kill `r` and start a fresh runner in the background (the next request waits for it)."""
        log.warning("replacing runner pid %d: %s", r.proc.pid, why)
        with self._runner_lock:
            self._discard(r)

        def _start() -> None:
            try:
                self.ensure_runner()
            except RunnerStartError as e:
                self.start_error = str(e)
                log.error("runner restart failed: %s", e)

        threading.Thread(target=_start, daemon=True).start()

    # ------------------------------------------------------------------ evaluation
    def evaluate(self, req: Dict[str, Any]) -> str:
        """One request -> the JSON of its Trace (never raises for a bad solution).

        A GPU evaluation that ran out of memory while other runners of this worker (parked ones,
        the reference runner) held GPU memory is not charged to the solution: those runners are
        stopped and the evaluation runs once more."""
        with self._current_stopped_after():
            tr = self._evaluate_once(req)
        if self.device != "cpu" and _out_of_memory(tr) and self._stop_idle_runners():
            log.warning("%s ran out of GPU memory beside idle runners: stopped them, evaluating again",
                        req.get("solution_name"))
            with self._current_stopped_after():
                tr = self._evaluate_once(req)
        return tr

    def _stop_idle_runners(self) -> bool:
        """Stop every runner but the current one; True when there was one to stop."""
        with self._runner_lock:
            idle = [r for r in [*self.parked.values(), self.ref_runner] if r is not None and r is not self.runner]
            for r in idle:
                self._discard(r)
        return bool(idle)

    def _evaluate_once(self, req: Dict[str, Any]) -> str:
        t0 = time.monotonic()
        cfg = EvalConfig.model_validate(req["config"])
        common = dict(definition=req["definition"]["name"], solution=req["solution_name"], workload=req["workload"])
        build = req["build"]
        seed = cfg.seed if cfg.seed is not None else self.base_seed

        shm: Dict[str, set] = {}  # /dev/shm before the runner got the request
        marks: Dict[str, float] = {}  # the supervisor's own phases (issue 19: where an evaluation's time goes)
        last = [t0]

        def mark(phase: str) -> None:
            now = time.monotonic()
            marks[phase] = marks.get(phase, 0.0) + now - last[0]
            last[0] = now

        facts: Dict[str, Any] = {}  # the supervisor's own facts of this evaluation, for its trace's environment

        def trace(status: str, message: str, output: str = "", result: Optional[Dict[str, Any]] = None) -> str:
            if "before" in shm:
                self._clean_shm(shm.pop("before"))
            static = (self.last_ready or {}).get("env")
            per_eval = (result or {}).get("env")
            extra = dict((result or {}).get("extra") or {})
            extra["eval_seconds"] = time.monotonic() - t0
            mark("finish")
            extra["supervisor_s"] = {k: round(v, 5) for k, v in marks.items()}
            t = assemble_trace(
                **common, status=status, message=message, output_log=output,
                env=environment(static, per_eval, self.device,
                                own={"seed": seed, **solution_hash_of(build), **facts}),
                correctness=(result or {}).get("correctness"), performance=(result or {}).get("performance"),
                extra=extra,
            )
            return t.model_dump_json()

        bstatus = str(build.get("status", "COMPILE_ERROR"))
        if bstatus != "OK":
            if self.last_ready is None:
                try:
                    self.ensure_runner()  # for the hardware name the trace must carry
                except RunnerStartError:
                    pass
            if bstatus == "COMPILE_ERROR":
                return trace("COMPILE_ERROR", f"build failed:\n{build.get('log', '')}")
            return trace("RUNTIME_ERROR", f"build {bstatus.lower()}: cannot run here:\n{build.get('log', '')}")
        try:
            r = self.ensure_runner()
        except RunnerStartError as e:
            return trace("RUNTIME_ERROR", f"the evaluation could not start a runner on {self.device}: {e}")
        sol_key = sol_key_of(req)
        try:
            if cfg.fresh_runner_per_solution and r.served is not None and r.served != sol_key:
                # another solution ran in this runner: whatever it left (patches, fds, threads,
                # caches) must not meet this one. Its runner is parked for its next job (the
                # pipeline interleaves solutions), this solution gets its own parked runner or a
                # fresh one.
                r = self._switch_runner(r, sol_key)
                self._gate_parked()
            # the runner (current or parked) must be able to read this build and dataset: one
            # confined before they were known (another dataset's cache holding the same build
            # hash) cannot; a fresh runner confined with them replaces it
            need = supervise.uncovered(r.ready, supervise.needed_paths(req, build))
            if need:
                self.readable.update(str(p) for p in need)
                with self._runner_lock:
                    self._discard(r)
                r = self.ensure_runner()
        except RunnerStartError as e:
            return trace("RUNTIME_ERROR", f"the evaluation could not start a runner on {self.device}: {e}")
        refused = supervise.refusal(r.ready, cfg.allow_unconfined)
        if refused:
            return trace("RUNTIME_ERROR", refused)
        r.served = sol_key
        mark("runner")
        # the solution's runner, stopped since its last job (`_current_stopped_after`), stays
        # stopped while the reference is timed: nothing it left runs beside it
        ref_stats = (self._reference_stats(req, cfg, seed)
                     if cfg.profile_baseline and cfg.fresh_runner_per_solution else None)
        if ref_stats is not None and "failed" in ref_stats:
            # the reference itself fails here (in a runner no solution ever ran in): the dataset's
            # or the machine's error, not this solution's; the solution is not run
            return trace(ref_stats["status"], ref_stats["message"])
        mark("reference")
        self._keep_runtime_private()
        # the last evaluation's log was read into its trace: gone, so no runner can stat it
        if self._last_eval_log is not None:
            self._last_eval_log.unlink(missing_ok=True)
        log_path = self._last_eval_log = self.logs_dir / (_private_name("eval") + ".log")
        request = {
            "definition": req["definition"], "workload": req["workload"], "build": build,
            "config": cfg.model_dump(mode="json"), "seed": seed, "dataset_root": req.get("dataset_root"),
        }
        if ref_stats is not None:
            request["reference_stats"] = ref_stats
        # the reference runner makes the witness's first round while the solution is evaluated
        witness.prestage(self, r, request, self.device, cfg.timeout_s)
        nonce = os.urandom(8).hex()
        shm["before"] = _shm_entries()
        watch = supervise.MemoryWatch.for_runner(r.proc.pid, r.ready)
        self._resume(r)  # its job: it runs again
        try:
            with watch:
                send_msg(r.sock, {"type": "evaluate", "log_path": str(log_path), "request": request, "nonce": nonce})
                try:
                    _hand_log(r.sock, log_path)
                except OSError as e:  # the host's counts (ETOOMANYREFS: the user's descriptors in flight), the disk
                    self.replace_runner(r, f"its log could not be handed over ({e})")
                    return trace("RUNTIME_ERROR", f"{ENVIRONMENT_ERROR}the worker could not hand the runner its "
                                 f"evaluation log ({e}); the runner was replaced", "")
                reply = recv_msg(r.sock, timeout=cfg.timeout_s, limit=RUNNER_MAX_MESSAGE)
        except TimeoutError:
            self.replace_runner(r, "timeout")
            out = read_capped(log_path, cfg.log_limit_bytes)
            return trace("TIMEOUT", f"no result within the {cfg.timeout_s:g} s timeout; the runner was killed", out)
        except (MessageTooLarge, MessageUnreadable) as e:
            self.replace_runner(r, "a reply that could not be read")
            out = read_capped(log_path, cfg.log_limit_bytes)
            return trace("RUNTIME_ERROR", f"forged_result: the runner's reply was not read ({e}); something in "
                         f"the solution's process wrote to the result channel; the runner was replaced", out)
        except (ConnectionClosed, BrokenPipeError, ConnectionResetError):
            try:
                r.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            how = describe_exit(r.proc.poll())
            limit = supervise.explain_death(r.proc.poll(), watch, r.ready)
            self.replace_runner(r, f"died ({how})")
            out = read_capped(log_path, cfg.log_limit_bytes)
            return trace(
                "RUNTIME_ERROR",
                (limit + f" ({how})") if limit else
                f"the runner process died during the evaluation ({how}); the solution crashed or exited the process",
                out,
            )
        mark("evaluation")
        result, forged = supervise.check_reply(reply, r.key, nonce, r.seq)
        problems = supervise.plausibility_problems(result, request, r.ready, self.device) if result is not None else []
        if result is None or problems:
            self.replace_runner(r, "untrustworthy reply")
            out = read_capped(log_path, cfg.log_limit_bytes)
            why = (f"forged_result: the runner's reply was not its sealed answer to this request ({forged}); "
                   f"something in the solution's process wrote to the result channel") if result is None else (
                   "implausible result from the runner, not trusted: " + "; ".join(problems))
            return trace("RUNTIME_ERROR", why, out)
        r.seq = int(reply.get("seq", r.seq)) if r.key is not None else r.seq
        _recharge(result, ref_stats)
        # how this runner began: forked from the runner zygote, or started from scratch
        facts["runner_start"] = "zygote" if isinstance(r.proc, ForkedRunner) else "exec"
        supervise.own_reference(result, ref_stats)  # never the copy the solution's runner echoed
        mark("checks")
        try:
            with supervise.MemoryWatch.for_runner(r.proc.pid, r.ready):  # the solution runs again
                witness_graph.judge(self, r, request, result, self.device, cfg.timeout_s)  # GPU: device time first
            mark("witness")
            witness_graph.judge_floor(result, request, r.ready, self.device)  # a claim under a physical floor
        except Exception as e:  # noqa: BLE001 - the witness reads the solution's replies: none may end this job unjudged
            # a reply of a type the witness did not expect (`witness_reply_types`: a TypeError ended
            # the worker's job, the client got no trace and tried the solution again): the result
            # stands unverified, so it does not stand
            log.exception("the witness of %s failed", req.get("solution_name"))
            self._hold(r)
            self._quiet_gate(r, None)
            self.replace_runner(r, "the witness failed")
            return trace("RUNTIME_ERROR", f"witness_failed: the supervisor could not verify the result "
                         f"({type(e).__name__}: {str(e)[:300]}); the result is not trusted",
                         read_capped(log_path, cfg.log_limit_bytes))
        _leftovers(r, result)
        self._hold(r)  # stopped now (not after the trace): the GPU must be quiet before the next measurement
        self._stopped_gate(r, result)
        self._quiet_gate(r, result)
        with self._runner_lock:
            self._evict_over_memory()
        if not result.get("healthy", True):
            self.replace_runner(r, result.get("unhealthy_reason", "unhealthy"))
        out = read_capped(log_path, cfg.log_limit_bytes)
        try:
            return trace(result.get("status", "RUNTIME_ERROR"), result.get("message", ""), out, result)
        except ValueError as e:  # pydantic's ValidationError too: a field the trace format refuses
            # the result's nested values are the runner's (a failed status is not checked for
            # plausibility): one the trace cannot hold must cost this trace, not the worker's job
            return trace("RUNTIME_ERROR", f"forged_result: the runner's result could not be recorded "
                         f"({type(e).__name__}: {str(e)[:300]}); it is not trusted", out)

    def _clean_shm(self, before: set) -> None:
        """Remove what the evaluation left in /dev/shm (a tmpfs file outlives its process)."""
        for name in _shm_entries() - before:
            try:
                remove_entry(Path("/dev/shm") / name)
                log.warning("removed /dev/shm/%s left by an evaluation", name)
            except OSError as e:
                log.error("cannot remove /dev/shm/%s: %s", name, e)

    def _switch_runner(self, current: RunnerHandle, sol_key: str) -> RunnerHandle:
        """Park `current` (it serves only its own solution) and make `sol_key`'s runner current."""
        with self._runner_lock:
            if current.served is not None and current.proc.poll() is None:
                older = self.parked.pop(current.served, None)
                if older is not None and older is not current:
                    self._discard(older)  # replaced, not leaked: one parked runner per solution
                self.parked[current.served] = current
                self.parked.move_to_end(current.served)
                self._park(current)
            if self.runner is current:
                self.runner = None
            mine = self.parked.pop(sol_key, None)
            while len(self.parked) >= runner_pool(self.device):
                _, old = self.parked.popitem(last=False)
                self._discard(old)
            self._evict_over_memory()
            if mine is not None and mine.proc.poll() is None:
                self.runner = mine  # still stopped: resumed once the reference is timed
                return mine
            if mine is not None:
                self._discard(mine)
        return self.ensure_runner()

    def _evict_over_memory(self) -> None:
        """Parked runners together hold at most one runner's memory limit (the sandbox's
        host_mem_bytes, FIB_SANDBOX_HOST_MEM_GB), the oldest discarded first: no memory watch sees
        a parked runner (MemoryWatch watches the one evaluating), and each may hold up to the
        limit (`parked_memory_pool`: three held 5.08 GiB beside a 2 GiB limit; six, by default,
        3x the machine). The current runner counts too once it is stopped after its job (it is
        parked next). Resident memory and page tables, as the kernel's OOM killer counts them
        (`page_table_hoard`). Call holding `_runner_lock`."""
        cap = Settings.from_env().host_mem_bytes
        sizes = {k: supervise.tree_memory_bytes(r.proc.pid) for k, r in self.parked.items()}
        cur = self.runner
        current = supervise.tree_memory_bytes(cur.proc.pid) if cur is not None and cur.stopped else 0
        while self.parked and sum(sizes.values()) + current > cap:
            k, old = self.parked.popitem(last=False)
            log.info("parked runner pid %d discarded: the parked runners held %.2f GiB (over %.2f GiB)",
                     old.proc.pid, sum(sizes.values()) / 2**30, cap / 2**30)
            sizes.pop(k, None)
            self._discard(old)

    def _park(self, r: RunnerHandle) -> None:
        """A parked runner stays stopped until its solution's next job. On a GPU it first gives
        back its cached inputs and allocator pool (the next runner's memory; it runs for that,
        under this worker's measurement lock); one that does not answer within PARK_TIMEOUT_S is
        discarded."""
        try:
            if self.device != "cpu":
                self._resume(r)  # its threads run again: `_gate_parked` checks what they queued
                self._to_gate.append(r)
                send_msg(r.sock, {"type": "trim"})
                send_msg(r.sock, {"type": "ping"})
                if (recv_msg(r.sock, timeout=PARK_TIMEOUT_S, limit=RUNNER_MAX_MESSAGE) or {}).get("type") != "pong":
                    raise ConnectionClosed("no pong")
        except (OSError, TimeoutError, ConnectionClosed, ValueError) as e:
            log.warning("parking runner pid %d: %s; discarded", r.proc.pid, e)
            self._discard(r)
            return
        if self._hold(r):
            self._stopped_gate(r, None)
        if r.proc.poll() is None and _unsolicited(r.sock):
            log.warning("parked runner pid %d wrote to its socket unasked; discarded", r.proc.pid)
            self._discard(r)

    @staticmethod
    def _hold(r: RunnerHandle) -> bool:
        """Stop `r` and everything it started (supervise.stop_tree), unless it is stopped already;
        True when it was stopped now. Its own log is then cut to its tail (`_keep_tail`): it
        writes no more until its next job."""
        if not r.stopped and r.proc.poll() is None:
            r.stopped = supervise.stop_tree(r.proc.pid)
            _keep_tail(r.log_path, RUNNER_LOG_TAIL)
            return True
        return False

    def _stopped_gate(self, r: RunnerHandle, result: Optional[Dict[str, Any]]) -> None:
        """After `r` is stopped: is it? A thread inside a long system call runs on under SIGSTOP
        (`supervise.busy_while_stopped`). A runner that burns CPU while stopped is killed and
        `result` (if any) marked `background_work` (suspect); one with a thread still in the
        kernel after the grace (asleep on a disk read, say: `stopped_io_then_burn` burnt later)
        is killed too, its result only marked unhealthy (the runner is not used again)."""
        window = supervise.STOPPED_WINDOW_S
        used, unsettled = supervise.busy_while_stopped(witness._usage_file(r), r.proc.pid)
        burning = used > 0.25 * window  # over a quarter of a CPU: working, not settling
        if not (burning or unsettled):
            return
        log.warning("runner pid %d %s while stopped; killed", r.proc.pid,
                    f"used {used * 1e3:.0f} ms of CPU per {window * 1e3:.0f} ms" if burning else
                    f"still had a thread in a system call {supervise.STOPPED_GRACE_S * 1e3:.0f} ms after the stop")
        with self._runner_lock:
            self._discard(r)
        if result is None:
            return
        result["healthy"] = False
        result["unhealthy_reason"] = "the solution's runner kept running while stopped"
        if burning:
            witness._flag(result, "background_work", f"the solution's runner used {used * 1e3:.0f} ms of CPU per "
                          f"{window * 1e3:.0f} ms after it was stopped (a thread inside a system call); its runner "
                          f"was killed")

    def _quiet_gate(self, r: RunnerHandle, result: Optional[Dict[str, Any]]) -> None:
        """After `r` (which ran a solution) is stopped: is the GPU quiet (`sandbox/quiet.py`)? If
        not, `r` is killed (its CUDA context, and the work queued in it, goes) and the device
        probed until quiet; `result` (if any) says whose the work was (`quiet.mark`)."""
        if not quiet.enabled(self.device):
            return
        first = quiet.busy_us(self)
        after = None
        if quiet.is_busy(first):
            with self._runner_lock:
                self._discard(r)
            after = quiet.until_quiet(self)
            if quiet.is_busy(after):
                log.warning("the GPU stays busy (a probe waits %.0f us) after runner pid %d was killed: work not "
                            "from this evaluation shares the device", after, r.proc.pid)
            else:
                log.warning("runner pid %d left work running on the GPU after its evaluation (a probe waited "
                            "%.0f us); killed", r.proc.pid, first)
        quiet.mark(result, first, after)

    def _gate_parked(self) -> None:
        """The GPU quiet after the runners parked (and resumed for their `trim`) since the last
        call: one that left work running on it is killed (`_quiet_gate`; no trace to mark, the
        solution's next job gets a fresh runner)."""
        while self._to_gate:
            r = self._to_gate.pop()
            if r.proc.poll() is None:
                self._quiet_gate(r, None)

    @staticmethod
    def _resume(r: RunnerHandle) -> None:
        """Undo `_hold` (nothing when `r` is running)."""
        supervise.resume(r.stopped)
        r.stopped = []

    @contextmanager
    def _current_stopped_after(self) -> Iterator[None]:
        """The current runner stopped (`_hold`) once the evaluation is over, if a solution ran in it.

        A runner that has run a solution runs only while this worker evaluates that solution (it
        is resumed for its own next job, `_evaluate_once`); parked runners stay stopped
        (`_park`). Nothing a solution left running in its runner (a thread `threading` does not
        list, a timer's signal handler, a child) then runs beside another solution's evaluation,
        the reference's timing or the witness's, in this worker or in another worker of the
        machine: those measure while holding the device's measurement lock, which this
        evaluation held until now. A runner stopped for good when its worker is killed is killed
        by the keeper (`sandbox.keeper`) or the runner zygote."""
        try:
            yield
        finally:
            with self._runner_lock:
                r = self.runner
                held = r is not None and r.served is not None and self._hold(r)
            if held:  # a path that did not stop it itself (a failure): nothing of it may run on the GPU
                self._stopped_gate(r, None)
                self._quiet_gate(r, None)

    # ------------------------------------------------------------------ the reference runner
    def reference_runner(self) -> Optional[RunnerHandle]:
        """The runner where no solution ever runs (reference timings, the witness's inputs and
        checks), started when there is none or it died; None when it cannot start (logged)."""
        try:
            with self._runner_lock:
                rr = self.ref_runner
                if rr is None or rr.proc.poll() is not None or rr.out_of_step:
                    if self.ref_runner is not None:
                        self._discard(self.ref_runner)
                    self.ref_runner = self._spawn_runner()
                return self.ref_runner
        except RunnerStartError as e:
            log.warning("no reference runner: %s", e)
            return None

    def _reference_stats(self, req: Dict[str, Any], cfg: EvalConfig, seed: int) -> Optional[Dict[str, Any]]:
        """The reference's timing on this workload, from the reference runner (cached here, in the
        supervisor, for REF_CACHE_TTL_S); None when it cannot be had (the solution's runner then
        times the reference itself, as before). Every runner that ran a solution is stopped
        meanwhile (`_current_stopped_after`): nothing a solution left shares the machine with it."""
        key = reference_key(req, cfg, self.device)
        hit = self.ref_cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < REF_CACHE_TTL_S:
            return {**hit[1], "cached": True}
        # a witness round made for an evaluation that did not pass is read and dropped here, not
        # when that evaluation ended: a failing solution's trace does not wait for it
        witness.settle(self)
        rr = self.reference_runner()
        if rr is None:
            return None
        need = supervise.uncovered(rr.ready, supervise.needed_paths(req, {}))
        if need:
            self.readable.update(str(p) for p in need)
            with self._runner_lock:
                self._discard(rr)
            return None  # the next request starts one that can read this dataset
        request = {"definition": req["definition"], "workload": req["workload"], "config": cfg.model_dump(mode="json"),
                   "seed": seed, "dataset_root": req.get("dataset_root")}
        nonce = os.urandom(8).hex()
        try:
            send_msg(rr.sock, {"type": "time_reference", "request": request, "nonce": nonce})
            reply = recv_msg(rr.sock, timeout=cfg.timeout_s, limit=RUNNER_MAX_MESSAGE)
        except TimeoutError:
            with self._runner_lock:
                self._discard(rr)
            failure = {"failed": True, "status": "TIMEOUT", "message": (
                f"{DATASET_ERROR}the definition's reference did not finish within the {cfg.timeout_s:g} s timeout "
                "on this workload (timed alone, in a runner no solution ran in)")}
            self.ref_cache[key] = (time.monotonic(), failure)  # the next solutions do not wait again
            return failure
        except (ConnectionClosed, BrokenPipeError, ConnectionResetError) as e:
            log.warning("reference runner failed (%s): the solution's runner times the reference", type(e).__name__)
            with self._runner_lock:
                self._discard(rr)
            return None
        result, why = supervise.check_reply(reply, rr.key, nonce, rr.seq)
        if result is None:
            with self._runner_lock:
                self._discard(rr)
            return None
        rr.seq = int(reply.get("seq", rr.seq)) if rr.key is not None else rr.seq
        stats = result.get("reference_stats")
        message = str(result.get("message", ""))
        if result.get("status") != "OK" and message.startswith((DATASET_ERROR, ENVIRONMENT_ERROR)):
            failure = {"failed": True, "status": str(result.get("status", "RUNTIME_ERROR")), "message": message}
            if message.startswith(DATASET_ERROR):
                self.ref_cache[key] = (time.monotonic(), failure)
            return failure
        if result.get("status") != "OK" or not isinstance(stats, dict):
            return None  # the solution's runner times the reference itself, as before
        if reusable_reference(stats):
            self.ref_cache[key] = (time.monotonic(), stats)
        return {**stats, "cached": False}

    # ------------------------------------------------------------------ serving
    def _handle(self, conn: socket.socket) -> None:
        with self._state_lock:
            self._active += 1
        try:
            msg = recv_msg(conn, timeout=60)
            op = msg.get("op")
            if op == "ping":
                send_msg(conn, {"ok": True, "pid": os.getpid(), "device": self.device,
                                "runner": (self.last_ready or {}).get("pid"), "env": (self.last_ready or {}).get("env")})
            elif op == "warm":
                # start the runner if needed and describe it (env, peaks, timing calibration)
                try:
                    r = self.ensure_runner()
                    send_msg(conn, {"ok": True, "pid": os.getpid(), "ready": r.ready})
                except RunnerStartError as e:
                    send_msg(conn, {"ok": False, "error": str(e)})
            elif op == "shutdown":
                send_msg(conn, {"ok": True})
                self._stop.set()
            elif op == "evaluate":
                with self._measure_lock, self._device_lock():
                    send_msg(conn, {"event": "started"})
                    tr = self.evaluate(msg["request"])
                send_msg(conn, {"event": "result", "trace": tr})
            else:
                send_msg(conn, {"error": f"unknown op {op!r}"})
        except (ConnectionClosed, TimeoutError, BrokenPipeError, ConnectionResetError) as e:
            log.warning("client connection ended early: %s", e)
        finally:
            conn.close()
            with self._state_lock:
                self._active -= 1
                self._last_activity = time.monotonic()

    @contextmanager
    def _device_lock(self) -> Iterator[None]:
        """Hold the device's measurement file lock (shared by every worker version of it)."""
        if self.measure_lock is None:
            yield
            return
        with measure_lock.held(self.measure_lock, exclusive=True):
            yield

    def _socket_is_ours(self, ino: int) -> bool:
        try:
            return os.stat(self.socket_path).st_ino == ino
        except OSError:
            return False

    def serve(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.socket_path.unlink()
        except FileNotFoundError:
            pass
        listener.bind(str(self.socket_path))
        listener.listen(64)
        listener.settimeout(0.5)
        ino = os.stat(self.socket_path).st_ino
        log.info("worker %d serving %s on %s", os.getpid(), self.device, self.socket_path)

        def _prewarm() -> None:
            try:
                self.ensure_runner()
            except RunnerStartError as e:
                self.start_error = str(e)
                log.error("runner start failed: %s", e)

        threading.Thread(target=_prewarm, daemon=True).start()
        try:
            while not self._stop.is_set():
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    with self._state_lock:
                        idle = self._active == 0 and time.monotonic() - self._last_activity > self.idle_timeout
                    if idle:
                        log.info("idle for %.0f s, exiting", self.idle_timeout)
                        break
                    if not self._socket_is_ours(ino):
                        log.info("socket file replaced or removed, exiting")
                        break
                    continue
                conn.settimeout(None)
                threading.Thread(target=self._handle, args=(conn,), daemon=True).start()
        finally:
            if self._socket_is_ours(ino):
                try:
                    self.socket_path.unlink()
                except FileNotFoundError:
                    pass
            listener.close()
            with self._runner_lock:
                for r in (self.runner, self.ref_runner, *self.parked.values()):
                    if r is None:
                        continue
                    self._resume(r)  # a parked runner answers "exit" too
                    try:
                        send_msg(r.sock, {"type": "exit"})
                        r.proc.wait(timeout=5)
                    except (OSError, subprocess.TimeoutExpired):
                        pass
                    self._discard(r)
            if self._private_runtime is not None:
                shutil.rmtree(self._private_runtime, ignore_errors=True)
            if self._zygote is not None:
                self._zygote.close()
            self._keeper.close()


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--visible", default="", help="CUDA_VISIBLE_DEVICES entry of the GPU (runner's cuda:0)")
    ap.add_argument("--physical-index", type=int, default=None)
    ap.add_argument("--measure-lock", default=None)
    ap.add_argument("--worker-dir", required=True)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--idle-timeout", type=float, default=120.0)
    ap.add_argument("--startup-timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s worker: %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sup = Supervisor(
        Path(args.socket), args.device, Path(args.worker_dir), args.idle_timeout, Path(args.cache_dir),
        args.startup_timeout, visible=args.visible, physical_index=args.physical_index,
        measure_lock=Path(args.measure_lock) if args.measure_lock else None,
    )
    sup.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
