"""The runner: a child of the worker that loads and runs solutions (untrusted) and the reference.

    python -m flashinfer_bench.bench.runner --fd N --device cuda:0 --scratch DIR --cache-dir DIR

It talks to its supervisor over the inherited socket `--fd` (length-prefixed JSON). Its stdout and
stderr go to a log file the supervisor names per request, so a solution's prints reach the trace
log and never the protocol. It initialises torch and the device, calls `confine()` before any
solution is loaded, says `ready`, then serves `evaluate` requests one at a time. When it dies
(segfault, `os._exit`, an illegal memory access that kills the process) or hangs, the supervisor
records the failure and starts another.
"""
from __future__ import annotations

import argparse
import contextlib
import faulthandler
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional


def _redirect(fd: int) -> None:
    """Point fd 1 and 2 at `fd` (the evaluation's log the supervisor handed over, or the runner's own)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)


def _received_log(sock: socket.socket) -> int:
    """The evaluation's log: a descriptor the supervisor sends right after the request (the
    runner has no write access to the logs' folder)."""
    _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    if len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise RuntimeError("the supervisor's request came without its log")
    return fds[0]


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--physical-index", type=int, default=None)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--readable", action="append", default=[])
    args = ap.parse_args(argv)

    # while single-threaded, before torch: namespaces, the first Landlock layer, no capabilities
    from .confine import prepare

    prepare(Path(args.scratch), Path(args.cache_dir), [Path(p) for p in args.readable])

    sock = socket.socket(fileno=args.fd)
    os.set_inheritable(args.fd, False)
    own_log = os.dup(2)  # the runner's own log (the supervisor pointed fd 2 at it)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    # a solution's prints may hold any code point (lone surrogates too): written escaped, never raised
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="backslashreplace")

    from .protocol import ConnectionClosed, recv_msg, send_msg

    t0 = time.perf_counter()
    try:
        import torch

        from .confine import confine
        from .evaluate import EvalRun, RunnerState

        device = torch.device(args.device)
        state = RunnerState(device, args.physical_index, Path(args.cache_dir))
        confined = confine(Path(args.scratch), [Path(p) for p in args.readable])
        from .confine import host_pid
        from .sandbox.channel import Sealer, new_key
        from .sandbox import quiet, witness, witness_graph  # noqa: F401 - imported now, not inside the supervisor's timed witness
        from .sandbox.guard import Guard

        state.env.static["sandbox"] = confined.get("sandbox")
        # the witness's handlers as they are now, before any solution: looked up on the module at
        # each message, a solution that swapped `witness.run` during its first witnessed call
        # had its own lean handler answer every later round (`witness_midround_patch`, session 23)
        handlers = _witness_handlers(witness, witness_graph)
        plain = witness._plain  # likewise: the handlers' torch-function-modes-off block
        guard = Guard()  # identities of the timing primitives and our code, before any solution
        state.runnable = guard.wrap_loader(state.runnable)  # type: ignore[method-assign]
        key = new_key()
        sealer = Sealer(key)
    except BaseException as e:  # noqa: BLE001 - report any start-up failure to the supervisor
        import traceback

        send_msg(sock, {"type": "failed", "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()})
        return 3
    send_msg(
        sock,
        {
            "type": "ready", "pid": host_pid(), "env": state.env.static, "peaks": state.peaks, "key": key.hex(),
            "confine": confined, "startup_s": time.perf_counter() - t0,
            "event_overhead_ms": state.event_overhead_ms, "calibration": state.calibration,
        },
    )
    while True:
        try:
            msg: Dict[str, Any] = recv_msg(sock)
        except ConnectionClosed:
            return 0
        kind = msg.get("type")
        if kind == "exit":
            return 0
        if kind == "ping":
            send_msg(sock, {"type": "pong"})
            continue
        if kind == "trim":  # being parked: give back what other runners of this GPU may need
            state.release_memory(drop_inputs=True)
            continue
        if kind == "time_reference":
            # the reference runner: no solution has ever been loaded in this process
            try:
                result = EvalRun(state, msg["request"]).reference_only()
            except Exception:  # noqa: BLE001 - a bug of ours: report it as such
                import traceback

                result = {"status": "RUNTIME_ERROR", "message": "internal error timing the reference:\n" + traceback.format_exc()}
            state.release_memory()
            send_msg(sock, sealer.seal(msg.get("nonce", ""), result))
            continue
        if kind == "quiet_probe":  # sandbox/quiet.py: is another context's work on the GPU?
            from .sandbox import quiet

            try:
                result = quiet.probe(state, int(msg.get("n", 3)))
            except Exception:  # noqa: BLE001 - a bug of ours or a broken device: the supervisor decides
                import traceback

                result = {"status": "RUNTIME_ERROR", "message": traceback.format_exc()[-4000:]}
            send_msg(sock, sealer.seal(msg.get("nonce", ""), result))
            continue
        if kind in handlers:
            # sandbox/witness.py (the coarse rounds) and sandbox/witness_graph.py (the GPU's device-time round)
            h = handlers[kind]
            try:
                # torch function modes off (the solution's calls get them back); the coarse round
                # switches them per step itself
                with plain() if kind != "witness" else contextlib.nullcontext():
                    if kind == "witness_inputs":
                        result = h(state, msg["request"], int(msg["seed"]), int(msg["k"]), str(msg["folder"]),
                                   ahead=int(msg.get("ahead", 0)), chain=bool(msg.get("chain")))
                    elif kind == "witness_prepare":
                        result = h(state, msg["request"], str(msg.get("mode")))
                    elif kind == "witness":
                        result = h(state, msg["inputs"], str(msg["folder"]), sock if msg.get("stepped") else None,
                                   chain=bool(msg.get("chain")))
                    elif kind == "witness_check":
                        t_check = time.perf_counter()
                        result = h(state, msg["request"], int(msg["seed"]), msg["calls"], str(msg["folder"]),
                                   places=msg.get("places"), previous=msg.get("previous"))
                        result["ms"] = round((time.perf_counter() - t_check) * 1e3, 3)  # its own time (the table's)
                    elif kind == "witness_graph_stage":
                        result = h(state, int(msg["k"]), int(msg.get("m", 1)), bool(msg.get("eager", False)))
                    elif kind == "witness_graph_touch":
                        result = h(state)
                    elif kind == "witness_graph_go":
                        result = h(state, int(msg["seed"]), int(msg["key"]))
                    elif kind == "witness_graph_expect":
                        result = h(state, msg["request"], int(msg["seed"]), int(msg["k"]), [int(c) for c in msg["calls"]])
                    elif kind == "witness_graph_save":
                        result = h(state, [int(i) for i in msg["calls"]], str(msg["folder"]))
                    else:
                        result = h(state, msg["request"], int(msg["seed"]), int(msg["key"]), int(msg["k"]), msg["calls"],
                                   msg["digests"], msg["saved"], str(msg["folder"]))
            except Exception:  # noqa: BLE001 - the solution raised (or a bug of ours): the supervisor decides
                import traceback

                result = {"status": "RUNTIME_ERROR", "message": traceback.format_exc()[-4000:]}
            if kind not in _UNCHECKED_WITNESS_KINDS:
                # the solution's code ran inside the round: what it replaced there and left
                # replaced (a witness helper for the next round, `witness_midround_helpers`)
                # fails the round; the GPU's timed replay is checked at its save instead
                patched = guard.replaced()
                if patched:
                    guard.restore()
                    result = {"status": "RUNTIME_ERROR",
                              "message": f"timer_patched: the solution replaced harness functions during the witness's "
                                         f"round ({', '.join(patched[:8])}); the measurement is not trusted"}
            send_msg(sock, sealer.seal(msg.get("nonce", ""), result))
            continue
        if kind != "evaluate":
            send_msg(sock, {"type": "error", "error": f"unknown message type {kind!r}"})
            continue
        log_fd = _received_log(sock)
        _redirect(log_fd)
        state._witness = None  # the witness's calls are of this evaluation's request only
        state._witness_graph = None  # and its captured round (the graph's memory with it)
        try:
            result = EvalRun(state, msg["request"]).run()
        except Exception:  # noqa: BLE001 - a bug of ours: report it as such instead of dying
            import traceback

            result = {
                "status": "RUNTIME_ERROR", "healthy": False, "unhealthy_reason": "evaluator error",
                "message": "internal error in the evaluator (not the solution's fault):\n" + traceback.format_exc(),
            }
        finally:
            _redirect(own_log)
        result = guard.after_eval(result, log_fd)
        os.close(log_fd)
        state.release_memory()
        send_msg(sock, sealer.seal(msg.get("nonce", ""), result))
        if result.get("status") == "PASSED":
            # the supervisor's witness calls this solution next (sandbox/witness.py): load and bind
            # them now, while the supervisor reads this reply, instead of in another exchange
            try:
                handlers["witness_prepare"](state, msg["request"], "solution")
            except Exception:  # noqa: BLE001 - the witness's call then fails and says why
                import traceback

                state._witness_error = traceback.format_exc()[-4000:]


# the witness's timed exchanges on a GPU are short replays: the guard's walk (~0.3 ms) waits for
# the next untimed message of the round (the save)
_UNCHECKED_WITNESS_KINDS = ("witness_graph_go", "witness_graph_touch")


def _witness_handlers(witness: Any, wg: Any) -> Dict[str, Any]:
    """The function that answers each witness message kind, taken from the modules once."""
    return {
        "witness_inputs": witness.inputs, "witness_prepare": witness.prepare, "witness": witness.run,
        "witness_check": witness.check, "witness_graph_stage": wg.stage, "witness_graph_touch": wg.touch,
        "witness_graph_go": wg.go, "witness_graph_expect": wg.expect, "witness_graph_save": wg.save,
        "witness_graph_check": wg.check,
    }


if __name__ == "__main__":
    sys.exit(main())
