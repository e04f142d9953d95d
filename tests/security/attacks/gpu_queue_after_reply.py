"""Class: cross-talk (GPU work that outlives the solution's turn).

Tries: correct outputs, and the runner's `recv_msg` and `send_msg` rewritten (as `spin_after_reply`
does) so that after its reply to a message after which nothing of its own is timed (the witness's
`witness_graph_save`, a `ping`), the main thread queues about __SPIN_S__ s of a one-thread spin
kernel on a stream of its own and returns at once. The runner is then stopped: a stop holds
threads, not the GPU, and the queued spin runs on, time-sliced with whatever is measured next
(another solution, the reference, the witness), which waits for the spin's time slices.
Expect: the spin seen on the GPU after the stop: the runner killed (its queue with it) and the trace
`background_work`; the honest solution evaluated next keeps its latency.
"""
import time
import types

import torch

try:
    _SPIN_S = float("__SPIN_S__")
except ValueError:
    _SPIN_S = 1.5

_state = {}


def _queue_spin():
    dev = torch.cuda.current_device()
    ev = _state.get("event")
    if ev is not None and not ev.query():
        return  # the last one still runs
    s = _state.setdefault("stream", torch.cuda.Stream(device=dev))
    cycles = int(torch.cuda.get_device_properties(dev).clock_rate * 1e3 * _SPIN_S)  # kHz -> cycles
    with torch.cuda.stream(s):
        torch.cuda._sleep(cycles)
        ev = torch.cuda.Event()
        ev.record(s)
    _state["event"] = ev


_AFTER = ("witness_graph_save", "ping")


def _spin_after_send(sock, obj, *args, **kwargs):
    # runs as protocol.send_msg: its globals are the protocol module's (see _patch)
    r = _fib_orig_send(sock, obj, *args, **kwargs)
    if _fib_last[0] in _fib_after:
        try:
            _fib_queue()
        except Exception:
            pass
    return r


def _note_recv(*args, **kwargs):
    m = _fib_orig_recv(*args, **kwargs)
    _fib_last[0] = m.get("type") if isinstance(m, dict) else None
    return m


def _patch():
    if _state.get("patched"):
        return
    _state["patched"] = True
    try:
        from flashinfer_bench.bench import protocol
    except ImportError:
        return
    f = protocol.send_msg
    g = f.__globals__
    g["_fib_orig_send"] = types.FunctionType(f.__code__, g, "send_msg", f.__defaults__, f.__closure__)
    g["_fib_queue"] = _queue_spin
    g["_fib_after"] = _AFTER
    g["_fib_last"] = [None]
    rv = protocol.recv_msg
    g["_fib_orig_recv"] = types.FunctionType(rv.__code__, g, "recv_msg", rv.__defaults__, rv.__closure__)
    try:
        f.__code__ = _spin_after_send.__code__
        rv.__code__ = _note_recv.__code__
    except (TypeError, ValueError, AttributeError):
        pass


def run(x, weight, eps):
    _patch()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
