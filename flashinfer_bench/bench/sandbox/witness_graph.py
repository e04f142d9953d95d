"""The witness's device-time round on a GPU (issue 15): the solution's calls timed from outside as
one CUDA-graph replay, on inputs drawn inside the graph from a seed the runner gets only when the
supervisor's clock starts.

Why: the coarse round (witness.py) times a call together with handing its inputs and outputs over
through files, ~0.5-1 ms a MiB on a GPU, so it cannot see a forged latency of a kernel whose real
time is under that: a solution that divided its statistics by 3.5 was PASSED at 3.5x the honest
speedup on the H100 (`rewrite_stats_modest`). Here nothing crosses the bus inside the measurement:

1. **stage** (not timed): the solution's runner captures `k` calls into one CUDA graph. Right
   before each call its random inputs are drawn on the device, one pass each, from a generator
   registered with the graph (a replay draws from the seed set just before it); after the calls a
   keyed hash of every call's output bytes is written (the key is read from device memory).
2. **go** (timed by the supervisor, wall clock from the request to the reply), after an untimed
   replay (`touch`: this runner's CUDA context current, the graph warm): the seed and the key are
   sent; the runner sets them, replays once, synchronises and replies the k hashes. The inputs did
   not exist before the seed arrived, and the reply cannot come before the outputs exist: it
   holds their hashes under a key the runner did not know before.
3. **save and check** (not timed): the outputs of a call the supervisor chose at random after the
   reply are copied to the reference runner, which draws the same inputs from the seed (the same
   generator calls: bit-identical across processes, measured on the H100), runs the reference,
   applies the definition's check and hashes the outputs again. Wrong outputs, or outputs that do
   not hash to what the runner replied (made after the reply), are `witness_wrong`.
4. **null**: the same stage and go in the reference runner without the call (the draws and the
   hashes of k distinct zero outputs): the harness's own device time, subtracted; the fastest of
   NULL_ROUNDS, cached per workload.

A round stands when `(go - null) / k <= SLACK x claim + ABS_MS + NOISE_MS / k`; else up to
`ROUNDS` rounds run, each checked, and the fastest counts. Where this round cannot judge (a call
that cannot be captured, a host synchronisation inside it, say; no input drawn per call; outputs
over the round's bytes) the coarse round judges (`witness_coarse`). A
failed capture leaves torch's default generator unusable; a capture that completes repairs it,
else the runner is replaced after this evaluation.

Runner side (`stage`, `touch`, `go`, `save`, `check`) imports torch; the supervisor side (`judge`) does not.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import random
import time
from typing import Any, Dict, List, Optional, Tuple

from . import witness as coarse

# k x the claimed latency is at least this much device time (the go exchange's own spread is
# shared by the k calls), between K_MIN and K_MAX calls and at most KEEP_BYTES of kept outputs
TARGET_MS = float(os.environ.get("FIB_WITNESS_GRAPH_TARGET_MS", "1.0"))
K_MIN, K_MAX = 4, int(os.environ.get("FIB_WITNESS_GRAPH_CALLS", "32"))
KEEP_BYTES = 256 << 20
CHECKED = 1  # calls whose outputs are checked, chosen after the reply (the runner cannot tell which)
ROUNDS = 3
NULL_ROUNDS = 5
SLACK = 1.5
ABS_MS = 0.002
# the spread between a timed replay's exchange in the solution's runner and the null's in the
# reference runner, a round, whatever its length (H100, anchor dataset, 2026-11-27: rounds of one
# job 0.05-0.2 ms apart, the null's fastest of three up to 0.16 ms over the solution's rounds)
NOISE_MS = float(os.environ.get("FIB_WITNESS_GRAPH_NOISE_MS", "0.25"))
_P1 = 0x7FEB352D


# ----------------------------------------------------------------------------- both runners
def _draw_(t: Any, gen: Any, i: int, j: int) -> None:
    """New content for random input `j` of call `i`, from `gen` only,
    deterministic and in place, one device pass where the dtype allows (the harness's share of a
    replayed call must stay small beside a memory-bound kernel's own pass, or its spread between
    processes hides the kernel): normal floats around +-0.5, integers in the evaluation's ranges,
    random bytes else. No outliers (the evaluation's trials have them; its index_put placement is
    not deterministic)."""
    import torch

    from ..inputs import INT_RANGES

    if t.numel() == 0:
        return
    if t.dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
        t.normal_(0.5 if (i + j) % 2 else -0.5, 1.0, generator=gen)
    elif t.dtype.is_floating_point:  # fp8: drawn in half precision, clamped to its range
        x = torch.empty(t.shape, dtype=torch.float16, device=t.device).normal_(0.0, 1.0, generator=gen)
        fmax = float(torch.finfo(t.dtype).max)
        t.copy_(x.clamp_(-fmax, fmax).to(t.dtype))
    elif t.dtype == torch.bool:
        t.view(torch.uint8).random_(0, 2, generator=gen)
    elif t.dtype in INT_RANGES:
        lo, hi = INT_RANGES[t.dtype]
        t.random_(lo, hi, generator=gen)
    else:
        t.view(-1).view(torch.uint8).random_(0, 256, generator=gen)


class _Hasher:
    """A keyed hash of tensors' bytes on the device: each 32-bit word xor its position's constant,
    times the key (mod 2^32), summed into 64 bits; three device passes. Outputs changed to match a
    hash committed before they existed would have to move that sum by a 64-bit amount nobody
    knew in advance, ~2^31 at most per word changed. The key is in device memory, set just
    before a replay."""

    def __init__(self, device: Any) -> None:
        import torch

        self.key = torch.ones((), dtype=torch.int32, device=device)
        self._pos: Dict[int, Any] = {}

    def set_key(self, key: int) -> None:
        k = (int(key) | 1) & 0xFFFFFFFF
        self.key.fill_(k - (1 << 32) if k >= 1 << 31 else k)

    @staticmethod
    def _words(t: Any) -> Any:
        import torch

        b = t.detach().contiguous().reshape(-1).view(torch.uint8)
        return b.view(torch.int32) if b.numel() % 4 == 0 else b.to(torch.int32)

    def _positions(self, n: int, device: Any) -> Any:
        import torch

        p = self._pos.get(n)
        if p is None:
            p = ((torch.arange(n, dtype=torch.int64, device=device) * 0x9E3779B1 + _P1) & 0xFFFFFFFF)
            p = torch.where(p >= 1 << 31, p - (1 << 32), p).to(torch.int32)
            self._pos[n] = p
        return p

    def digests(self, calls: List[List[Any]]) -> Any:
        """The hash of each call's outputs (an int64 tensor, one per call; no synchronisation, so
        it can be captured): each output stacked over the calls and mixed in one pass, whatever
        the number of calls (a handful of device operations a round, not a call)."""
        import torch

        total = torch.zeros(len(calls), dtype=torch.int64, device=self.key.device)
        for n_out in range(len(calls[0]) if calls else 0):
            ts = [c[n_out] for c in calls]
            if not all(isinstance(t, torch.Tensor) for t in ts) or ts[0].numel() == 0:
                continue
            w = torch.stack([self._words(t) for t in ts])
            a = torch.bitwise_xor(w, self._positions(w.shape[1], w.device))
            a.mul_(self.key + 2 * n_out)
            total = total + a.sum(dim=1, dtype=torch.int64)
        return total


def _inputs_template(ev: Any) -> Tuple[List[Any], List[bool]]:
    """The evaluation's first trial set and which of its inputs are drawn afresh per call."""
    from ..inputs import random_input_mask

    import torch

    base = coarse._timing_base(ev)
    mask = random_input_mask(ev.definition, ev.workload, ev.specs)
    mask = [bool(m) and isinstance(b, torch.Tensor) for m, b in zip(mask, base)]
    return base, mask


def _buffers(base: List[Any], mask: List[bool]) -> List[Any]:
    """One buffer per drawn input, refilled before every call (the calls run in stream order)."""
    import torch

    return [torch.empty_like(b) if m else None for b, m in zip(base, mask)]


def _draw_call(bufs: List[Any], gen: Any, i: int) -> None:
    """Call `i`'s drawn inputs, right before it (so they are as warm in the cache as the
    evaluation's refreshed inputs are when its timed calls read them); the graph and the
    reference runner make the same generator calls in the same order."""
    for j, b in enumerate(bufs):
        if b is not None:
            _draw_(b, gen, i, j)


def _call_args(base: List[Any], bufs: List[Any]) -> List[Any]:
    return [b if buf is None else buf for b, buf in zip(base, bufs)]


class _Staged:
    """A runner's captured round (or its null): buffers, generator, hasher, graph, outputs."""

    def __init__(self, ev: Any, runnable: Any, zeros: List[Any], k: int) -> None:
        import torch

        from ..inputs import allocate_outputs

        self.ev, self.runnable, self.k = ev, runnable, k
        self.base, self.mask = _inputs_template(ev)
        self.bufs = _buffers(self.base, self.mask)
        self.gen = torch.Generator(device=ev.device)
        self.hasher = _Hasher(ev.device)
        self.digests = torch.zeros(k, dtype=torch.int64, device=ev.device)
        dps = runnable is not None and bool(getattr(runnable, "dps", False))
        self.dps_outs = [allocate_outputs(ev.definition, ev.axes, ev.device) for _ in range(k)] if dps else None
        self.null_outs = [[torch.zeros_like(z) for z in zeros] for _ in range(k)] if runnable is None else None
        self.results: List[List[Any]] = [[] for _ in range(k)]
        self.graph: Any = None

    def body(self, n: Optional[int] = None) -> None:
        """Calls 0..n-1 (all k by default): each one's inputs drawn, the call; then their hashes."""
        n = self.k if n is None else n
        for i in range(n):
            _draw_call(self.bufs, self.gen, i)  # they exist only once the seed is set
            args = _call_args(self.base, self.bufs)
            if self.runnable is None:  # the null: distinct outputs per call, so its hash reads what a solution's does
                outs = self.null_outs[i]
            else:
                outs = self.ev._call_solution(self.runnable, args, self.dps_outs[i] if self.dps_outs else [])
            self.results[i] = list(outs)
        self.digests[:n].copy_(self.hasher.digests(self.results[:n]))

    def capture(self) -> None:
        import torch

        self.gen.manual_seed(0)
        self.body(1)  # warm-up, one call eager: our ops' first use outside the capture (the solution's ran in the evaluation)
        torch.cuda.synchronize(self.ev.device)
        g = torch.cuda.CUDAGraph()
        g.register_generator_state(self.gen)
        with torch.cuda.graph(g):
            self.body()
        self.graph = g
        self.replay(1, 1)  # the graph's first launch uploads it: not inside the supervisor's clock

    def touch(self) -> None:
        """An untimed replay right before the timed one: this process's CUDA context is the GPU's
        current one (a switch from the other runner's, which checked the last round, would land
        inside the supervisor's clock in one process's rounds and not the other's) and the
        graph's memory is as warm in both runners' timed replays (on the H100 the first rounds
        in a new runner ran up to 1.5x the later ones)."""
        self.replay(0, 1)

    def replay(self, seed: int, key: int) -> List[int]:
        import torch

        self.gen.manual_seed(seed)
        self.hasher.set_key(key)
        self.graph.replay()
        torch.cuda.synchronize(self.ev.device)
        return [int(x) for x in self.digests.tolist()]


def stage(state: Any, k: int) -> Dict[str, Any]:
    """Solution's runner (after `witness.prepare`) or reference runner (its null mode): capture
    `k` calls. A capture the solution's code breaks is reported, not raised: its verdict stays the
    coarse round's."""
    import traceback

    prepared = getattr(state, "_witness", None)
    if prepared is None:
        raise RuntimeError("the witness's calls were not prepared after the evaluation:\n"
                           + str(getattr(state, "_witness_error", "") or "(no evaluation passed in this runner)"))
    ev, runnable, zeros = prepared
    state._witness_graph = None
    staged = _Staged(ev, runnable, zeros, int(k))
    if not any(staged.mask):
        return {"status": "OK", "graph": False, "no_draws": True}
    t0 = time.perf_counter()
    try:
        staged.capture()
    except Exception:  # noqa: BLE001 - the solution's code cannot be captured: the cause is reported
        why = traceback.format_exc()[-1500:]
        return {"status": "OK", "graph": False, "why": why, "repaired": _repair(ev.device)}
    state._witness_graph = staged
    return {"status": "OK", "graph": True, "capture_ms": round((time.perf_counter() - t0) * 1e3, 3)}


def _repair(device: Any) -> bool:
    """After a failed capture torch's default generator stays in capture mode (its next draw
    raises "Offset increment outside graph capture", seen on the H100); a capture that completes
    ends that mode. True when the default generator draws again."""
    import torch

    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            torch.zeros(1, device=device).add_(1)
        del g
        torch.randn(1, device=device)
        torch.cuda.synchronize(device)
        return True
    except RuntimeError:
        return False


def touch(state: Any) -> Dict[str, Any]:
    staged = getattr(state, "_witness_graph", None)
    if staged is None:
        raise RuntimeError("no captured witness round in this runner")
    staged.touch()
    return {"status": "OK"}


def go(state: Any, seed: int, key: int) -> Dict[str, Any]:
    """Timed by the supervisor: set the seed and the key, replay, synchronise, the k digests."""
    staged = getattr(state, "_witness_graph", None)
    if staged is None:
        raise RuntimeError("no captured witness round in this runner")
    return {"status": "OK", "digests": staged.replay(int(seed), int(key))}


def save(state: Any, calls: List[int], folder: str) -> Dict[str, Any]:
    """The outputs of `calls` of the last replay, into `folder` of the scratch."""
    staged = getattr(state, "_witness_graph", None)
    if staged is None:
        raise RuntimeError("no captured witness round in this runner")
    rows = [staged.results[int(i)] for i in calls]
    return {"status": "OK", "calls": coarse._save_all(rows, os.path.join(coarse._folder(folder), "outputs.bin"))}


def check(state: Any, request: Dict[str, Any], seed: int, key: int, k: int, calls: List[int], digests: List[int],
          saved: List[List[Dict[str, Any]]], folder: str) -> Dict[str, Any]:
    """Reference runner: draw the inputs of `calls` from `seed` (the same sequence as the graph),
    hash the saved outputs with `key` against the `digests` the runner replied, and apply the
    definition's check to them (witness.check, with these inputs kept)."""
    import torch

    state._witness_graph = None  # the null round's capture: no longer needed here
    ev = coarse._eval_run(state, request)
    base, mask = _inputs_template(ev)
    gen = torch.Generator(device=ev.device)
    gen.manual_seed(int(seed))
    bufs = _buffers(base, mask)
    want = {int(i) for i in calls}
    made: Dict[int, List[Any]] = {}
    for i in range(max(want) + 1 if want else 0):
        _draw_call(bufs, gen, i)
        if i in want:
            made[i] = [a.clone() if m else a for a, m in zip(_call_args(base, bufs), mask)]
    try:
        outs = coarse._load_all(saved, coarse._folder(folder), ev.device)
    except (ValueError, TypeError, KeyError, OSError, RuntimeError) as e:
        return {"status": "OK", "bad": [f"unreadable outputs ({e})"]}
    if len(outs) != len(calls) or len(digests) != len(calls):
        return {"status": "OK", "bad": ["the saved outputs are not those of the calls asked for"]}
    hasher = _Hasher(ev.device)
    hasher.set_key(int(key))
    bad = []
    for i, o, d in zip(calls, outs, digests):
        if int(hasher.digests([o])[0]) != int(d):
            bad.append(f"call {i}: its outputs do not hash to the digest the runner replied when it was timed "
                       f"(they were made or changed after the reply)")
    state._witness_made = (int(seed), [made[int(i)] for i in calls], None, None)
    res = coarse.check(state, request, int(seed), saved, folder, loaded=outs)
    res["bad"] = bad + list(res.get("bad") or [])
    return res


# ----------------------------------------------------------------------------- supervisor side
def _k(claim: float, out_bytes: Optional[int]) -> int:
    k = max(K_MIN, min(K_MAX, math.ceil(TARGET_MS / max(claim, 1e-4))))
    if out_bytes:
        k = min(k, max(1, KEEP_BYTES // out_bytes))
    return k


class _Fail(Exception):
    """The round cannot go on: kind "failed" (the solution's runner: charged to the solution),
    "unwitnessed" (the harness's side), "fallback" (the coarse round judges instead)."""

    def __init__(self, kind: str, why: str) -> None:
        super().__init__(why)
        self.kind, self.why = kind, why


class _Round:
    """One device-time verification: its exchanges, timed where they count, and what they gave."""

    def __init__(self, sup: Any, r: Any, rr: Any, request: Dict[str, Any], timeout: float) -> None:
        self.sup, self.r, self.rr, self.timeout = sup, r, rr, timeout
        self.ref_request = coarse._ref_request(request)
        self.parts: Dict[str, float] = {}
        self.errors: Dict[str, float] = {}

    def ask(self, part: str, handle: Any, msg: Dict[str, Any], kind: str = "failed") -> Tuple[Dict[str, Any], float]:
        """`msg` to a runner: its sealed reply and the wall ms until it (`_Fail(kind)` if none)."""
        t = time.perf_counter()
        try:
            res, (wall, _), why = coarse._exchange(handle, msg, self.timeout)
        finally:
            self.parts[part] = self.parts.get(part, 0.0) + (time.perf_counter() - t) * 1e3
        if res is None or res.get("status") != "OK":
            raise _Fail(kind, why or str((res or {}).get("message", ""))[-1500:])
        return res, wall

    def timed(self, handle: Any, seed: int, key: int, kind: str = "failed") -> Tuple[Dict[str, Any], float]:
        """A touch, then the timed replay (its wall ms)."""
        self.ask("go", handle, {"type": "witness_graph_touch"}, kind)
        return self.ask("go", handle, {"type": "witness_graph_go", "seed": seed, "key": key}, kind)

    def null_ms(self, k: int) -> float:
        """The null round's wall time in the reference runner (the fastest of NULL_ROUNDS),
        cached per workload for the coarse null's time."""
        key = "graph:" + hashlib.sha256(json.dumps([self.ref_request.get("definition"), self.ref_request.get("workload"),
                                                    (self.ref_request.get("config") or {}).get("inputs"), k],
                                                   sort_keys=True, default=str).encode()).hexdigest()
        cache = self.sup.__dict__.setdefault("_witness_null", {})
        hit = cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < coarse.NULL_TTL_S:
            return hit[1]
        rr = self.rr
        self.ask("null", rr, {"type": "witness_prepare", "request": self.ref_request, "mode": "null"}, "unwitnessed")
        res, _ = self.ask("null", rr, {"type": "witness_graph_stage", "k": k}, "unwitnessed")
        if res.get("no_draws"):  # every input is known to the solution: it could precompute the calls
            raise _Fail("fallback", "no input of this workload is drawn afresh per call")
        if not res.get("graph"):
            raise _Fail("unwitnessed", "the reference runner could not capture the null round: " + str(res.get("why", ""))[-300:])
        t = time.perf_counter()
        walls = [self.timed(rr, 1 + n, 1, "unwitnessed")[1] for n in range(NULL_ROUNDS)]
        self.parts["null"] = self.parts.get("null", 0.0) + (time.perf_counter() - t) * 1e3
        cache[key] = (time.monotonic(), min(walls))
        return min(walls)

    def check(self, seed: int, key: int, k: int, calls: List[int], digests: List[int], limit: int) -> List[str]:
        """Save the outputs of `calls`, hand them to the reference runner: its check's complaints."""
        try:
            fr = coarse._Folder(self.rr)
        except OSError as e:
            raise _Fail("unwitnessed", f"no scratch folder for the witness in the reference runner ({e})") from e
        try:
            try:
                fs = coarse._Folder(self.r)
            except OSError as e:
                raise _Fail("failed", f"the solution's scratch refused the witness's folder ({e})") from e
            try:
                res, _ = self.ask("check", self.r, {"type": "witness_graph_save", "calls": calls, "folder": fs.name})
                try:
                    fs.copy_file("outputs.bin", fr, limit)
                except OSError as e:
                    return [f"outputs not readable: {e}"]
                verdict, _ = self.ask("check", self.rr, {
                    "type": "witness_graph_check", "request": self.ref_request, "seed": seed, "key": key, "k": k,
                    "calls": calls, "digests": digests, "saved": res.get("calls"), "folder": fr.name}, "unwitnessed")
                coarse.merge_errors(self.errors, verdict)
                return [str(b) for b in verdict.get("bad") or []]
            finally:
                fs.remove()
        finally:
            fr.remove()


def _device_round(sup: Any, r: Any, rr: Any, request: Dict[str, Any], result: Dict[str, Any], timeout: float,
                  max_bytes: int) -> bool:
    """The device-time rounds of a PASSED GPU result (module docstring); changes `result` in place
    when it does not stand. False when they cannot judge it and the coarse round must (the
    solution's calls cannot be captured, or no input is drawn per call)."""
    lat = (result.get("performance") or {}).get("latency_ms")
    if not (isinstance(lat, (int, float)) and math.isfinite(lat) and lat > 0):
        return False
    t_start = time.perf_counter()
    out_bytes = coarse._call_bytes(request, inputs=False)
    k = _k(float(lat), out_bytes)
    checked = min(CHECKED, k, max_bytes // max(1, out_bytes or 1))
    bound = SLACK * lat + ABS_MS + NOISE_MS / k
    extra = result.setdefault("extra", {})
    info: Dict[str, Any] = {"clock": "graph_replay", "k": k, "bound_ms": round(bound, 5), "bad_calls": 0}
    extra["witness"] = info
    w = _Round(sup, r, rr, request, timeout)
    pick = random.SystemRandom()
    walls: List[float] = []
    null: Optional[float] = None
    try:
        if checked < 1:  # the harness cannot take one call's outputs over: the coarse round says so
            raise _Fail("fallback", f"one call's outputs are over the witness's {max_bytes >> 20} MiB a round")
        # the null first: before the solution's code runs again (its capture calls it), so that no
        # GPU work it leaves running then can slow the null and so lower the estimate
        null = w.null_ms(k)
        res, _ = w.ask("stage", r, {"type": "witness_graph_stage", "k": k})
        info["captured"] = bool(res.get("graph"))
        if res.get("no_draws"):  # every input is known to the solution: it could precompute the calls
            raise _Fail("fallback", "no input of this workload is drawn afresh per call")
        if not res.get("graph"):
            if not res.get("repaired"):  # torch's default generator is unusable in that runner now
                result["healthy"] = False
                result["unhealthy_reason"] = "a failed CUDA-graph capture"
            raise _Fail("fallback", "the solution's calls could not be captured into a CUDA graph: "
                        + (str(res.get("why", "")).strip().splitlines() or [""])[-1][:300])
        info["capture_ms"] = res.get("capture_ms")
        for _ in range(ROUNDS):
            seed, key = int.from_bytes(os.urandom(8), "big") >> 2, int.from_bytes(os.urandom(4), "big")
            res, wall = w.timed(r, seed, key)
            digests = res.get("digests")
            if not isinstance(digests, list) or len(digests) != k or not all(isinstance(d, int) for d in digests):
                raise _Fail("failed", "the runner's reply to a timed round holds no digests of its k calls")
            calls = sorted(pick.sample(range(k), checked))
            bad = w.check(seed, key, k, calls, [digests[i] for i in calls], max_bytes)
            if bad:
                info["bad_calls"] = len(bad)
                coarse._set_status(result, "INCORRECT_NUMERICAL", (
                    f"witness_wrong: of {k} calls the supervisor timed as one CUDA-graph replay on inputs drawn after "
                    f"the evaluation, {len(calls)} checked in the reference runner were not right: " + "; ".join(bad[:3])),
                    "witness_wrong")
                result["correctness"] = result.get("correctness") or {"max_abs": math.inf, "max_rel": math.inf}
                return True
            walls.append(wall)
            if (min(walls) - null) / k <= bound:
                break
    except _Fail as e:
        info["why"] = e.why[-300:]
        if e.kind == "fallback":
            return False
        if e.kind == "failed":
            coarse._set_status(result, "RUNTIME_ERROR", f"witness_failed: the supervisor's timed replay of the "
                               f"solution did not complete ({e.why}); the result is not trusted", "witness_failed")
            result["healthy"] = False
            result["unhealthy_reason"] = "the witness calls failed"
            return True
        coarse._flag(result, "witness_unresolved", f"witness graph round not run: {e.why}", False)
        return True
    finally:
        info.update({"seconds": round(time.perf_counter() - t_start, 4), "calls": len(walls) * k,
                     "round_ms": [round(x, 4) for x in walls], "parts_ms": {p: round(v, 2) for p, v in w.parts.items()}})
        if null is not None:
            info["null_ms"] = round(null, 4)
    if w.errors:
        coarse._own_errors(result, w.errors)
        info["errors"] = {e: float(f"{v:.6g}") for e, v in w.errors.items()}
    est = (min(walls) - null) / k
    info["est_ms"] = round(est, 5)
    if est <= bound:
        return True
    msg = (f"timing_disputed: the supervisor timed {k} calls of the solution as one CUDA-graph replay on inputs drawn "
           f"inside it, from outside its process, at {est * 1e3:.2f} us each (the harness's own draws and hashes "
           f"subtracted); the runner claimed {lat * 1e3:.2f} us: more than {SLACK:g}x + "
           f"{(ABS_MS + NOISE_MS / k) * 1e3:.1f} us apart, the runner's measurement was tampered with")
    if os.environ.get("FIB_WITNESS_GPU", "flag").strip().lower() != "fail":
        coarse._flag(result, "timing_disputed", msg)
    else:
        coarse._set_status(result, "RUNTIME_ERROR", msg, "timing_disputed")
    return True


def judge(sup: Any, r: Any, request: Dict[str, Any], result: Dict[str, Any], device: str, timeout: float) -> None:
    """The witness of a PASSED `result` of runner `r` (the worker's one entry): on a GPU the
    device-time round first, the coarse rounds (witness.verify) where it cannot judge, the trace
    then saying `witness_coarse` and why; on a CPU the coarse rounds."""
    cfg = request.get("config") or {}
    if (device == "cpu" or result.get("status") != "PASSED" or not coarse.graph_enabled()
            or not (cfg.get("fresh_runner_per_solution", True) and cfg.get("profile_baseline", True))):
        return coarse.verify(sup, r, request, result, device, timeout)
    coarse.settle(sup)
    rr = sup.reference_runner()
    if rr is None:
        return coarse._flag(result, "unwitnessed", "the reference runner could not be started: not witnessed", False)
    if _device_round(sup, r, rr, request, result, timeout, coarse._round_bytes(device, [r, rr])):
        return
    graph = result.setdefault("extra", {}).pop("witness", None)
    coarse.verify(sup, r, request, result, device, timeout)
    extra = result.setdefault("extra", {})
    if isinstance(graph, dict):  # why the device-time round could not judge it, beside the coarse round's record
        if isinstance(extra.get("witness"), dict):
            extra["witness"]["graph"] = graph
        else:
            extra["witness"] = {"graph": graph}
    coarse._flag(result, "witness_coarse", "witness: " + str((graph or {}).get("why", "the device-time round could "
                 "not judge it")) + "; the coarse round (inputs and outputs handed over inside its clock) judged it", False)
