"""Checks around each evaluation inside the runner: replaced functions, work left running.

`Guard` is made after torch/CUDA and our modules are loaded and before any solution is: it keeps
the objects behind every public callable of the timing primitives (`time`, `torch.cuda`,
`torch.cuda.Event`, `torch.Tensor`, `torch`, `torch.nn.functional`) and of our own bench modules
(functions, classes and their methods). After a solution is loaded and after the evaluation ends
it compares: a replaced clock, event, stream or synchronisation function, or any function of ours,
fails the evaluation ("timer_patched"); another replaced torch function is flagged
("torch_patched", suspect). Either way the originals are put back and the runner is replaced. Python threads and child processes that were not there before the
evaluation mean work still running after the solution returned ("background_work"): they are
killed with the runner.

torch.Tensor is watched whole: its dunders (`__invert__`, `__ne__`: the harness's checks use them)
and any *new* attribute on it, which would shadow a C method or getter of `torch._C.TensorBase`
(`sum`, `shape`: not in torch.Tensor's own dict, so a snapshot of that dict never saw them): both
fail the evaluation like a replaced timer (issue 15: each disarmed the re-check of timed calls).
New names on torch, torch.nn.functional and time are flagged like replaced torch functions.

What this cannot see, said plainly: code in the same process can patch and restore between our
checks, patch C code or memory, or walk the interpreter's frames to our locals. The decisive
defences do not live here: the supervisor's witness (bench/sandbox/witness.py) re-times the
solution from outside the process and has its outputs checked in the reference runner, and the
supervisor checks every number for plausibility.
"""
from __future__ import annotations

import os
import resource
import signal
import sys
import threading
import types
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...sandbox.proctree import children

_OUR_MODULES = (
    "timing", "evaluate", "checks", "correctness", "inputs", "roofline", "environment", "loader", "protocol",
    "runner", "confine", "sandbox.guard", "sandbox.channel",
)
# the witness's runner side too, and every watched function's code object: the witness verifies
# that side's answers from outside, but a solution that replaced it with a leaner handler collected
# the harness's share of a round as credit (`lean_share_witness`, session 19), and replacing a
# function's `__code__` keeps its identity (`spin_after_reply`). FIB_SANDBOX_GUARD_WITNESS=off
# leaves both out: the tests do, to show the witness beneath this layer catching those attacks
_WITNESS_MODULES = ("sandbox.witness", "sandbox.witness_graph", "sandbox.quiet")


def guards_the_witness() -> bool:
    return os.environ.get("FIB_SANDBOX_GUARD_WITNESS", "on") != "off"
_FLAG_PATCHED = "timer_patched"
_FLAG_BACKGROUND = "background_work"
_FLAG_TORCH = "torch_patched"
# replacing any of these fails the evaluation: the clocks, events, streams and synchronisation the
# harness times with, and our own modules; other torch functions are flagged
_CRITICAL_PREFIXES = ("time.", "torch.cuda.Event.", "torch.cuda.Stream.")
_CRITICAL_TORCH_CUDA = {
    "synchronize", "Event", "Stream", "current_stream", "default_stream", "set_stream", "stream", "_sleep",
    "_lazy_init", "device", "set_device", "current_device", "mem_get_info", "empty_cache",
}


def _critical(name: str) -> bool:
    if name.startswith(_CRITICAL_PREFIXES):
        return True
    if name.startswith("torch.Tensor.") and (name[len("torch.Tensor."):].startswith("__") or name.endswith(" (new)")):
        return True
    if name.startswith("torch.cuda."):
        return name[len("torch.cuda."):] in _CRITICAL_TORCH_CUDA
    return not name.startswith("torch")  # our modules


def _public_callables(owner: Any, prefix: str, out: Dict[str, Tuple[Any, str, Any]], private: bool = False) -> None:
    try:
        items = list(vars(owner).items())
    except TypeError:
        return
    for name, obj in items:
        if name.startswith("__") or (name.startswith("_") and not private):
            continue
        if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType, type, staticmethod, classmethod, property)) or callable(obj):
            if isinstance(obj, types.ModuleType):
                continue
            out[f"{prefix}.{name}"] = (owner, name, obj)


def watched_objects() -> Dict[str, Tuple[Any, str, Any]]:
    """name -> (owner, attribute, object) of everything whose identity we check."""
    out: Dict[str, Tuple[Any, str, Any]] = {}
    import time

    for n in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "sleep", "process_time"):
        out[f"time.{n}"] = (time, n, vars(time)[n])
    torch = sys.modules.get("torch")
    if torch is not None:
        _public_callables(torch.cuda, "torch.cuda", out)
        for n in ("_sleep", "_lazy_init"):
            if hasattr(torch.cuda, n):
                out[f"torch.cuda.{n}"] = (torch.cuda, n, vars(torch.cuda)[n])
        _public_callables(torch.cuda.Event, "torch.cuda.Event", out)
        _public_callables(torch.cuda.Stream, "torch.cuda.Stream", out)
        _public_callables(torch.Tensor, "torch.Tensor", out)
        for name, obj in list(vars(torch.Tensor).items()):  # dunders too: the checks use operators
            if name.startswith("__") and name not in _TENSOR_SKIP:
                out[f"torch.Tensor.{name}"] = (torch.Tensor, name, obj)
        _public_callables(torch, "torch", out)
        _public_callables(torch.nn.functional, "torch.nn.functional", out)
    pkg = __name__.rsplit(".", 2)[0]  # flashinfer_bench.bench
    for short in _OUR_MODULES + (_WITNESS_MODULES if guards_the_witness() else ()):
        mod = sys.modules.get(f"{pkg}.{short}")
        if mod is None:
            continue
        _public_callables(mod, short, out, private=True)
        for name, obj in list(vars(mod).items()):
            if isinstance(obj, type) and getattr(obj, "__module__", "") == mod.__name__:
                _public_callables(obj, f"{short}.{name}", out, private=True)
    return out


_TENSOR_SKIP = {"__dict__", "__weakref__", "__doc__", "__module__", "__annotations__", "__slots__"}


def _namespaces() -> Dict[str, Any]:
    """Owners whose set of names is snapshotted: a name added later is a shadow or a patch."""
    out: Dict[str, Any] = {}
    import time

    out["time"] = time
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch.Tensor"] = torch.Tensor
        out["torch"] = torch
        out["torch.nn.functional"] = torch.nn.functional
    return out


def _code(obj: Any) -> Any:
    """The code object behind a Python function (or a static or class method of one): replacing
    it (`f.__code__ = g.__code__`) keeps the function's identity, so it is compared on its own."""
    fn = getattr(obj, "__func__", obj)
    return fn.__code__ if isinstance(fn, types.FunctionType) else None


def _static(owner: Any, attr: str) -> Any:
    """The attribute as stored on `owner` (a classmethod stays the same object, unlike getattr's)."""
    try:
        return vars(owner).get(attr)
    except TypeError:
        return getattr(owner, attr, None)


def trace_hooks() -> Dict[str, Any]:
    """The interpreter's hooks that run code inside every frame: trace and profile functions (of
    this thread and of threads yet to start) and, from Python 3.12, `sys.monitoring` tools. A hook
    sees and may rebind the harness's locals as its functions run (`settrace_sampler` rebound the
    sampler's end time so that its samples came out 100x shorter): a hook the solution set fails
    the evaluation like a replaced timer."""
    hooks: Dict[str, Any] = {"sys.settrace": sys.gettrace(), "sys.setprofile": sys.getprofile()}
    for name in ("gettrace", "getprofile"):
        get = getattr(threading, name, None)  # Python 3.10+
        if get is not None:
            hooks[f"threading.set{name[3:]}"] = get()
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None:
        for tool in range(6):
            hooks[f"sys.monitoring tool {tool}"] = monitoring.get_tool(tool)
    hooks["sys.addaudithook (refused)"] = _audit_tries
    hooks.update(_mode_stacks())
    return hooks


def _mode_stacks() -> Dict[str, int]:
    """How many torch function and dispatch modes are active: a mode the solution entered and
    left active after its call intercepts every torch operation the harness makes afterwards, no
    function replaced (`mode_disarm_checks` made the runner's comparisons say "equal", and
    outputs never written passed its trials and re-checks)."""
    import torch

    out = {}
    length = getattr(torch._C, "_len_torch_function_stack", None)
    at = getattr(torch._C, "_get_function_stack_at", None)
    if length is not None and at is not None:
        # `torch.set_default_device` is a function mode too (DeviceContext): a solution may set it,
        # what it changes (where new tensors go) the checks of the outputs see
        out["harness: torch function mode stack"] = sum(
            type(at(i)).__name__ != "DeviceContext" for i in range(int(length())))
    length = getattr(torch._C, "_len_torch_dispatch_stack", None)
    if length is not None:
        out["harness: torch dispatch mode stack"] = int(length())
    return out


# audit hooks cannot be listed or removed, and one runs inside the harness at every audited event
# (`audit_hook_result` divided the result's latency while the guard read /proc, before the sealer
# signed it): the runner's own hook, added first, refuses every later one (CPython suppresses the
# RuntimeError and leaves the new hook out) and counts the tries
_audit_tries = 0
_audit_hook_installed = False


def refuse_audit_hooks() -> None:
    """Install the hook that refuses later audit hooks (once per process, before any solution)."""
    global _audit_hook_installed
    if _audit_hook_installed:
        return

    def _refuse(event: str, _args: Any) -> None:
        global _audit_tries
        if event == "sys.addaudithook":
            _audit_tries += 1
            raise RuntimeError("the runner takes no audit hooks")

    sys.addaudithook(_refuse)
    _audit_hook_installed = True


def _children() -> List[int]:
    return children("self")


class Guard:
    """Snapshot at start; `check()` after a solution is loaded and after each evaluation."""

    def __init__(self) -> None:
        refuse_audit_hooks()
        self._watched = watched_objects()
        self._names = {label: (owner, set(vars(owner))) for label, owner in _namespaces().items()}
        self._threads = {t.ident for t in threading.enumerate()}
        self._hooks = trace_hooks()
        self._codes = {n: _code(obj) for n, (_, _, obj) in self._watched.items()
                       if _code(obj) is not None} if guards_the_witness() else {}

    def _added(self) -> List[Tuple[str, Any, str]]:
        """(label, owner, name) of attributes that appeared since the snapshot (submodules that an
        import attached to torch excepted)."""
        out = []
        for label, (owner, names) in self._names.items():
            for name in set(vars(owner)) - names:
                if isinstance(vars(owner).get(name), types.ModuleType):
                    continue
                out.append((label, owner, name))
        return out

    def replaced(self) -> List[str]:
        hooks = trace_hooks()
        return [n for n, (owner, attr, obj) in self._watched.items() if _static(owner, attr) is not obj] + [
            f"{n} (code)" for n, c in self._codes.items() if _code(self._watched[n][2]) is not c] + [
            f"{label}.{name} (new)" for label, _, name in self._added()
        ] + [f"{n} (hook)" for n, h in hooks.items() if h != self._hooks.get(n)]

    def restore(self) -> None:
        if trace_hooks() != self._hooks:
            sys.settrace(self._hooks["sys.settrace"])
            sys.setprofile(self._hooks["sys.setprofile"])
            if hasattr(threading, "gettrace"):
                threading.settrace(self._hooks["threading.settrace"])  # type: ignore[arg-type]
                threading.setprofile(self._hooks["threading.setprofile"])  # type: ignore[arg-type]
            monitoring = getattr(sys, "monitoring", None)
            for tool in range(6) if monitoring is not None else ():
                if monitoring.get_tool(tool) != self._hooks.get(f"sys.monitoring tool {tool}"):
                    monitoring.set_events(tool, 0)
                    monitoring.free_tool_id(tool)
        self._pop_modes()
        for n, c in self._codes.items():
            fn = getattr(self._watched[n][2], "__func__", self._watched[n][2])
            if fn.__code__ is not c:
                fn.__code__ = c
        for owner, attr, obj in self._watched.values():
            if _static(owner, attr) is not obj:
                try:
                    setattr(owner, attr, obj)
                except (AttributeError, TypeError):
                    pass
        for _, owner, name in self._added():
            try:
                delattr(owner, name)
            except (AttributeError, TypeError):
                pass

    def _pop_modes(self) -> None:
        """Leave the torch modes entered since the snapshot (the runner is replaced anyway; the
        reference and the rest of this reply must not run under them)."""
        import torch

        stacks = {"harness: torch function mode stack": ("_pop_torch_function_stack", "_len_torch_function_stack"),
                  "harness: torch dispatch mode stack": ("_pop_torch_dispatch_stack", "_len_torch_dispatch_stack")}
        for label, (pop_name, len_name) in stacks.items():
            pop, length = getattr(torch._C, pop_name, None), getattr(torch._C, len_name, None)
            if pop is None or length is None:
                continue
            # the innermost first, until the count is the snapshot's (a DeviceContext above the
            # solution's mode goes too: it does not count, but it is in the way)
            while _mode_stacks().get(label, 0) > int(self._hooks.get(label) or 0) and length() > 0:
                pop()

    def leftovers(self) -> Tuple[List[str], List[int]]:
        """(new Python threads still alive, child processes still alive) since the snapshot."""
        threads = [t.name for t in threading.enumerate() if t.ident not in self._threads and t.is_alive()]
        return threads, _children()

    def wrap_loader(self, load: Callable[..., Any]) -> Callable[..., Any]:
        """`load` (loads a solution) followed by an identity check; remembers what it found."""
        self.after_load: List[str] = []

        def checked_load(*a: Any, **k: Any) -> Any:
            try:
                return load(*a, **k)
            finally:
                self.after_load += [n for n in self.replaced() if n not in self.after_load]

        return checked_load

    def after_eval(self, result: Dict[str, Any], log_fd: Optional[int] = None) -> Dict[str, Any]:
        """Apply the checks to an evaluation's result (in place) and return it; `log_fd` is the
        file that held the solution's output."""
        extra = result.get("extra") if isinstance(result.get("extra"), dict) else {}
        flags: List[str] = list(extra.get("flags") or [])
        notes: List[str] = list(extra.get("notes") or [])
        replaced = list(dict.fromkeys(getattr(self, "after_load", []) + self.replaced()))
        self.after_load = []
        patched = [n for n in replaced if _critical(n)]
        other = [n for n in replaced if not _critical(n)]
        if other:
            # torch ops the solution replaced: later evaluations in this process (their references
            # included) would run them, so the runner is replaced; the result is suspect
            self.restore()
            flags.append(_FLAG_TORCH)
            notes.append(f"torch_patched: the solution replaced {', '.join(other[:8])}; restored, runner replaced")
            result["healthy"] = False
            result["unhealthy_reason"] = "the solution replaced torch functions"
        if patched or _FLAG_PATCHED in flags:
            self.restore()
            what = ", ".join(patched[:8]) + (" ..." if len(patched) > 8 else "") if patched else "timing functions"
            _fail(result, f"timer_patched: the solution replaced harness or timing functions ({what}); "
                          f"the measurement is not trusted")
            flags.append(_FLAG_PATCHED)
        full = _log_at_limit(log_fd)
        if full:
            notes.append(full)
            if result.get("status") != "PASSED":
                result["message"] = full + "\n" + (result.get("message") or "")
        threads, children = self.leftovers()
        if threads or children:
            flags.append(_FLAG_BACKGROUND)
            if threads:
                notes.append(f"background_work: {len(threads)} Python thread(s) of the solution still running after it returned: {threads[:5]}")
            if children:
                notes.append(f"background_work: {len(children)} child process(es) of the solution still running after it returned")
                for pid in children:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            result["healthy"] = False
            result["unhealthy_reason"] = "the solution left threads or processes running"
        if flags != list(extra.get("flags") or []) or notes != list(extra.get("notes") or []):
            flags = list(dict.fromkeys(flags))
            extra["flags"] = flags
            extra["notes"] = notes
            extra["suspect"] = bool(extra.get("suspect")) or bool({_FLAG_PATCHED, _FLAG_BACKGROUND, _FLAG_TORCH} & set(flags))
            result["extra"] = extra
            if result.get("status") != "PASSED" and notes:
                result["message"] = (result.get("message") or "").rstrip() + "\n" + "\n".join(n for n in notes if n.startswith("background_work"))
        return result


def _log_at_limit(log_fd: Optional[int]) -> str:
    """A line saying so when the evaluation's output reached the file size limit."""
    if log_fd is None:
        return ""
    try:
        size = os.fstat(log_fd).st_size
        soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    except OSError:
        return ""
    if soft == resource.RLIM_INFINITY or size < soft:
        return ""
    return (f"file size limit exceeded: the solution's output reached the {soft / 2**20:.0f} MiB limit "
            f"(FIB_SANDBOX_FSIZE_MB); what it printed after that was lost")


def _fail(result: Dict[str, Any], why: str) -> None:
    prev = result.get("status")
    result["message"] = why + (f"\n(the evaluation had ended {prev}: {result.get('message', '')})" if prev and prev != "PASSED" else "")
    result["status"] = "RUNTIME_ERROR"
    result["correctness"] = None
    result["performance"] = None
    result["healthy"] = False
    result["unhealthy_reason"] = why[:200]


def current_guard() -> Optional[Guard]:
    return _GUARD[0]


_GUARD: List[Optional[Guard]] = [None]
