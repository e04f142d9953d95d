"""The supervisor's witness: a check of a PASSED result that no code in the solution's process
can bend (issue 15).

Everything a runner measures lives in the address space the solution runs in: frames, the heap
(`gc.get_objects()`), closures, the sampler, the clock's C method table, the statistics, the
sealer. Any of it can be rewritten from inside a call, and each of those rewrites produced a
PASSED trace with a fake 5x-100x speedup (tests/security/attacks). So once a runner reports
PASSED, the supervisor checks the two claims that matter with what it observes from outside:

1. **Correctness.** The reference runner (where no solution ever ran) makes `k` input sets from
   a seed the supervisor draws (os.urandom) and sends only there, writes them into one file of its
   scratch and runs the reference on them; the supervisor copies that file into the solution's
   runner's scratch, which maps it (no copy) and calls the solution once on each set, its outputs
   saved into a file that the supervisor copies back; the reference runner applies the
   definition's check. Outputs the solution's own process vouched for are not trusted. The first
   round's inputs and reference outputs are made while the solution's runner evaluates
   (`prestage`, sent with the evaluation; the solution's runner binds the witness's calls right
   after it answers), so an honest solution's witness is one timed exchange and one comparison.
2. **Time.** The supervisor measures each of those requests to the solution's runner from outside:
   on a CPU the CPU time its cgroup used (every thread and process of the runner, exited ones
   included; far less affected by other load on the machine than wall time, not immune: a busy
   sibling core slows the same work) from before the inputs exist in its scratch
   until its outputs have been copied out of it, on a GPU the wall time from sending the request
   to receiving the reply. Nothing the runner does can make that shorter than the work it really
   did, nothing could be computed earlier (the inputs did not exist), and parallel threads or
   children add their CPU time. The same request to the reference runner with a null call
   measures the harness's share (mapping inputs, saving outputs): where a round's raw time per
   call is already within the bound it passes without it, else it is subtracted and the fastest
   of up to `MAX_ROUNDS` rounds counts (a round within the bound ends it; every round's
   outputs are checked). On a CPU each such round gets its own null, the fastest of `NULL_CALLS`
   measured right after it, and a cheap call's round (many calls) needs two rounds within the
   bound (`paired_per_call`). Both CPU readings of a request wait until no thread of the runner
   is on a CPU (`cgroup.settled_cpu_ns`: a running thread's time reaches its group only at a
   tick). Mapping instead of reading keeps that
   share small when the inputs are large, so a large weight no longer hides a forged latency
   (tests/security/test_large_inputs.py).

The result stands when every output checks and the witnessed time per call is at most
`SLACK` x the claimed latency + `ABS_MS` (on a CPU spread over a round of more than K_CALLS
calls, `cpu_allowance_ms`; on a GPU the claim is device time: the host time per
call the runner reported is allowed for, up to `HOST_ALLOWANCE_MS_GPU`, and `SHARE_NOISE_GPU`
times the harness's share: on a GPU that share, handing the inputs over and the outputs back, is
thousands of times a memory-bound kernel's time, and it is measured in another process).
Otherwise the trace becomes INCORRECT_NUMERICAL (`witness_wrong`) or RUNTIME_ERROR
(`timing_disputed`; FIB_WITNESS_GPU=flag makes a GPU dispute only flag the trace).
Not caught: a forged latency within the slack (on a GPU: any forged latency of a kernel whose real
time is under its data's handover time); configurations without a reference runner
(fresh_runner_per_solution or profile_baseline off) and workloads one call of which is over what a round may hand over
(`MAX_BYTES` on a GPU; `MAX_BYTES_CPU`, a quarter of the scratch, the file-size limit on a CPU):
those traces say `unwitnessed`; a harness's share that dwarfs the claim where the estimate is
over the bound: `witness_unresolved`. FIB_WITNESS=off turns it off (the tests do, to show the
attacks it stops).

Runner side (`inputs`, `prepare`, `run`, `check`) imports torch; the supervisor side
(`prestage`, `verify`, `settle`) does not.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import random
import struct
import time
import warnings
from typing import Any, Dict, List, Optional, Tuple

from . import supervise

K_CALLS = int(os.environ.get("FIB_WITNESS_CALLS", "8"))  # calls per round
# CPU: a cheap call's round has more calls, up to ROUND_MS_CHEAP of claimed time and this many: most of
# the harness's share of a round (the request, mapping the inputs, saving the outputs: ~2 ms of CPU
# time for 8 RMSNorm calls on the 2-core VM, varying by about as much from round to round) is the
# round's, not the call's, so spread over k calls its noise is 8/k of what it is over 8, and so is
# the allowance for it (`ABS_MS` is for a round of K_CALLS). Session 15: a ~40 us RMSNorm forged 20x
# passed about half of the time with 8 calls a round (its bound 0.26 ms a call); 64 calls a round
# (31 us a call) caught it there. Session 19, on a faster VM: the same forgery's real call took
# ~14 us and its whole cost fit in 64 calls' allowance: PASSED at 17x in 6 of 6 runs. With 256
# calls (7.8 us a call) it was disputed 6 of 6, but an honest 11 us call was disputed once beside
# other load (31.6 us a call less the nulls: a witnessed call reads inputs cold, which the null
# does not, ~15-20 us here); with 128 (15.6 us a call) the forgery was disputed 9 of 9 (20-22 us
# against its 17 us bound) and the honest call PASSED at once (30-34 us, its share still in,
# against 38.5)
K_CALLS_CHEAP = int(os.environ.get("FIB_WITNESS_CALLS_CHEAP", "128"))
# GPU: a call costs the witness ~1 ms to make its inputs and ~1 ms to check it, whatever the
# kernel (the H200, anchor dataset: 8 calls were 32-38 ms, 9% of a job); 4 halve that
K_CALLS_GPU = int(os.environ.get("FIB_WITNESS_CALLS_GPU", "4"))
# the fastest round counts; a round within the bound ends the witness, so an honest solution
# usually costs one round and a disputed one up to this many
MAX_ROUNDS = int(os.environ.get("FIB_WITNESS_ROUNDS", "8"))
# a round of one call (a costly call, or one whose data fill a round) is one draw of the inputs: the
# fp8 MoE, fast on ~23% of fresh draws, was disputed honest when none of 8 rounds drew a fast one
# (0.77^8 = 12%; seen in benchmarks/confinement_overhead.py, session 20): 16 make that 1.5%. The
# extra rounds run only where a dispute is coming (an honest call usually passes in its first)
MAX_ROUNDS_ONE_CALL = int(os.environ.get("FIB_WITNESS_ROUNDS_ONE_CALL", "16"))
SLACK = 2.0  # CPU: CPU time in a VM shared with other jobs still varies by ~2x, 0.1 ms per call
# CPU: per call, for the harness's share of a call differing between the two runners and the
# machine's load between the claim and the witness: honest ~70-120 us calls under load needed up to
# ~0.15 ms of it in probes here and an honest 77 us call of the pipeline tests 0.21 ms while the
# whole suite ran (session 14); a forgery of a call under ~0.3 ms is inside the resolution anyway
ABS_MS = 0.25
# CPU: a round's share differs between the two runners by more than one call's ABS_MS where the
# round is one call: an honest fp8 MoE's fast path (0.30-0.36 ms claimed, one call a round: its
# inputs fill a round) was witnessed at 0.69-0.94 ms less the null against a 0.86-0.97 ms bound
# (the runner's own breakdown, CPU clock: mapping ~96 MiB of inputs 0.22 ms against the null's
# 0.10, the reply's handling ~0.1 ms more), and disputed in 3 of ~6 runs of the share benchmark
# (session 20). A round is allowed at least this much
ROUND_ALLOWANCE_MS = 0.75
SLACK_GPU = 3.0  # wide: the coarse round's clock holds the data's handover
ABS_MS_GPU = 0.05
# GPU: the harness's share of a call (handing a call's inputs to the device and its outputs back:
# ~0.5-1 ms a MiB, thousands of times a memory-bound kernel's time) is measured in the reference
# runner, another process, and the solution's runner took 1.0-1.5x as long for the same copies on
# the H200 (2026-11-26; two machines, anchor dataset; 0.25 of it still disputed 2 of 42 honest
# evaluations on the second): the bound allows one whole share, so the GPU witness resolves only a
# forged latency whose real time exceeds the data's handover time (docs/security.md)
SHARE_NOISE_GPU = float(os.environ.get("FIB_WITNESS_GPU_SHARE_NOISE", "1.0"))
# GPU: the host time per call the bound allows for is the runner's own number (a solution that
# rewrites its statistics can raise it too), so it counts up to a launch's worth: honest Triton and
# torch calls took 30-70 us on the H200; a call over 0.2 ms of host time is `host_bound` anyway
HOST_ALLOWANCE_MS_GPU = 0.2
# a round does not judge a claim when the harness's share of a call (loading the inputs, saving
# the outputs: set by the workload, not by the solution) is over UNRESOLVED_MS and over this many
# times the claim: that share's noise alone exceeds the slack (flagged witness_unresolved)
RESOLUTION = 5.0
UNRESOLVED_MS = 5.0
MAX_BYTES = 48 << 20  # inputs and outputs of one round, as bytes (GPU)
# CPU: mapped, not copied, so large inputs cost little to hand over; also at most a quarter of the
# runners' scratch (the reference runner holds the inputs, the solution's outputs and the null's)
MAX_BYTES_CPU = 512 << 20
# CPU: a round's calls: enough claimed time to resolve (ROUND_MS; fewer calls for slow kernels).
# Every device: beyond one call, no more than ROUND_BYTES of inputs and outputs (handing them
# over is most of a large round's cost: on the H200 a 4-call round of a 4 MiB RMSNorm was 30-45 ms
# of the witness's, ~10% of the job; one call checks 4M elements, and the GPU's bound allows the
# handover once anyway)
ROUND_MS = 10.0
ROUND_MS_CHEAP = 5.0
ROUND_BYTES = 8 << 20
NULL_TTL_S = 600.0
# CPU: the first round is prestaged for a claim this many times faster than the reference
PRESTAGE_SPEEDUP = 8.0
# CPU: the null request is repeated after each round that needs it and its fastest counts: it is
# subtracted from the solution's time, so one inflated sample lets a forged latency pass (one of
# the two ways a 100x forgery of a 16 MiB matvec could have passed once in CI; the other:
# _exchange); the first of three ran ~25% over the next two while one null served every round
NULL_CALLS = int(os.environ.get("FIB_WITNESS_NULL_CALLS", "2"))
# CPU: where a round has at least this many calls, PAIRED_PASSES rounds less their nulls must be
# within the bound (`paired_per_call`); a round within it with its share still in passes at once
PAIRED_PASSES = 2
# CPU: a dispute is settled early when CLEAR_AFTER rounds less their nulls were all over
# CLEAR_FACTOR x the bound (honest solutions came to at most ~1.2x it in session 15's probes; a
# 20x forgery of a ~40 us call to 2-3x, a 100x forgery of a 3 ms call to ~50x); only with
# PAIRED_PASSES_MIN_CALLS calls a round or more (few calls a round: all MAX_ROUNDS, see `verify`)
CLEAR_AFTER = 3
CLEAR_FACTOR = 2.0
# CPU: at most this many of a round's calls are checked, drawn after the calls returned
CHECKED_CPU = int(os.environ.get("FIB_WITNESS_CHECKED_CPU", "8"))
# CPU: a round's calls are chained: before call i+1 the harness flips low mantissa bits of call
# i+1's first input that is drawn afresh per call in a float dtype (`_chain_index`) by the bytes of
# call i's first output (`_chained`), so no call's inputs exist before the call
# before it has returned and a round cannot be made in one batch. All of a round's inputs were in
# its scratch before its first call: `batch_in_call` (cheap calls) PASSED at 22x in ~1 run of 5,
# `batch_in_costly_call` (a round of costly calls made as one, its claim forged 8x) 3 of 3 at
# 8.8-9.1x (session 21); handing the inputs over call by call (stepped rounds) stops both but wakes
# each call with cold caches, which disputed an honest 11 us call under load. The null and the
# calibration chain their own outputs the same way (the same work), the reference runner rebuilds
# a checked call's inputs from the previous call's saved outputs. FIB_WITNESS_CHAIN=off: unchained
_CHAIN_DTYPES = ("float16", "bfloat16", "float32", "float64")
# what a check that does not compare to the reference derives from a round's inputs ahead of its
# outputs (`reference_outputs`), at most (a sampling check's support is float64, rows x vocab)
EXPECTED_BYTES = 256 << 20
PAIRED_PASSES_MIN_CALLS = 32
# CPU: before a dispute, the definition's reference is run in the reference runner (no solution
# ever ran there; the solution's runner stopped meanwhile) on a round of the same shape, and its
# CPU time per call (less the null's share) is compared with the reference's latency the
# reference runner measured earlier: a machine slower now than when the claims were measured
# widens the bound by that factor, at most LOAD_MAX. In CI (session 19) an honest 2.26 ms call was
# witnessed at 7.1 ms a call in every one of 8 rounds (its bound 4.8 ms) while the suite loaded the
# 2-core VM; a forger cannot make the reference slower (it is stopped), and the bound of a 20x
# forgery widens to at most LOAD_MAX x the slack (docs/security.md). A cheap call's rounds (at least
# PAIRED_PASSES_MIN_CALLS calls) are followed by the reference instead, each one over the bound, and
# the least slowdown it read widens the bound (`_Witness._reference_after`, `round_load`): CI's load
# comes and goes within a test (session 22)
LOAD_MAX = float(os.environ.get("FIB_WITNESS_LOAD_MAX", "3.0"))
CALIBRATION_TWICE_MS = 250.0  # the calibration round runs twice (its fastest counts) while that cheap


def gpu_dispute_flags_only() -> bool:
    """FIB_WITNESS_GPU=flag: a GPU timing dispute marks the trace suspect and keeps its status
    (the behaviour before session 16). By default it fails the trace as on a CPU: a PASSED trace
    must not carry a latency the supervisor measured to be false, flagged or not."""
    return os.environ.get("FIB_WITNESS_GPU", "fail").strip().lower() == "flag"


def _switched_on(name: str) -> bool:
    return os.environ.get(name, "on").strip().lower() not in ("0", "off", "false", "no")


def chain_enabled() -> bool:
    """Whether the supervisor chains a CPU round's calls (see `_chained`; FIB_WITNESS_CHAIN)."""
    return _switched_on("FIB_WITNESS_CHAIN")


def chains(device: str, k: int) -> bool:
    """Whether a round of `k` calls on `device` is chained (the supervisor's decision, sent to both
    runners: the round's, the prestaged inputs', the null's and the calibration's messages)."""
    return device == "cpu" and k > 1 and chain_enabled()


def enabled() -> bool:
    return _switched_on("FIB_WITNESS")


def graph_enabled() -> bool:
    """Whether a GPU result is judged by the device-time round first (witness_graph.py)."""
    return enabled() and _switched_on("FIB_WITNESS_GRAPH")


# ----------------------------------------------------------------------------- runner side
# Inputs and outputs travel as raw files in a directory of the runner's scratch that the
# supervisor made for this round (JSON carries only their dtype, shape and place): no encoding
# cost in the measured interval that a solution could shave, and nothing to read before the
# supervisor puts the files there (after it took the first reading of the runner's CPU time).
# A file is mapped, not copied: the tensors are views of the mapping, populated at once (on the
# scratch tmpfs, in 2 MiB pages where the kernel has them), so handing over a call's inputs costs
# about the same at 36 MiB as at 36 KiB and the harness's share of a call no longer hides the
# solution's (an honest fp8 MoE call of 0.4 ms sat beside ~16 ms of copying its expert weights).
ALIGN = 256  # a tensor starts at a multiple of this in its file (and on the device: as cudaMalloc aligns)


def _scratch() -> str:
    return os.environ.get("FIB_SANDBOX_SCRATCH") or os.getcwd()


def _layout(rows: List[List[Any]], name: str, off: int = 0) -> Tuple[List[List[Dict[str, Any]]], List[Tuple[int, int, Any]], int]:
    """Where the tensors of `rows` go in file `name` from offset `off`, each at an ALIGN-ed offset:
    the rows' description (scalars inline), the (offset, bytes, contiguous tensor) to write, the end."""
    import torch

    meta: List[List[Dict[str, Any]]] = []
    chunks: List[Tuple[int, int, Any]] = []  # (offset, bytes, tensor)
    names: Dict[Any, str] = {}
    for row in rows:
        out = []
        for t in row:
            if not isinstance(t, torch.Tensor):
                out.append({"scalar": t if isinstance(t, (int, float, bool)) or t is None else repr(t)})
                continue
            c = t.detach().contiguous()
            n = c.numel() * c.element_size()
            off = -(-off // ALIGN) * ALIGN
            if n:
                chunks.append((off, n, c))
            dname = names.get(c.dtype)
            if dname is None:
                dname = names[c.dtype] = str(c.dtype).replace("torch.", "")
            out.append({"dtype": dname, "shape": list(c.shape), "file": name,
                        "offset": off, "nbytes": n})
            off += n
        meta.append(out)
    return meta, chunks, off


def _open_outputs(path: str) -> int:
    """The outputs file for writing: on a CPU the supervisor made it before the round, its pages
    allocated (`_Folder.make_room`); a link or a special file refused."""
    import stat

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{os.path.basename(path)}: not a regular file")
    return fd


def _write_host(fd: int, host: List[Tuple[int, Any]]) -> None:
    """Host tensors at their offsets, in runs written with one call each (an alignment gap as
    zeros; a gap over ALIGN or an overlap, a device group's span, starts a new run)."""
    import torch

    runs: List[Tuple[int, List[Any]]] = []
    end = -1
    for at, c in sorted(host, key=lambda h: h[0]):
        view = memoryview(c.reshape(-1).view(torch.uint8).numpy())
        if not runs or at < end or at - end > ALIGN:
            runs.append((at, [view]))
        else:
            if at > end:
                runs[-1][1].append(_ZEROS[: at - end])
            runs[-1][1].append(view)
        end = at + len(view)
    for start, views in runs:
        _pwrite_all(fd, views, start)


def _save_all(rows: List[List[Any]], path: str) -> List[List[Dict[str, Any]]]:
    """Write the tensors of `rows` (a list per call) into one file (`_layout`); their dtype, shape
    and place in it as the rows' description. Tensors on a GPU are gathered on the device and
    leave it in one copy (a copy per tensor to pageable memory waits for the stream each time:
    more of the harness's share, and more of its noise, inside the supervisor's measurement)."""
    import torch

    meta, chunks, off = _layout(rows, os.path.basename(path))
    host = [(at, c) for at, _, c in chunks if c.device.type == "cpu"]
    on_device: Dict[Any, List[Tuple[int, int, Any]]] = {}
    for at, n, c in chunks:
        if c.device.type != "cpu":
            on_device.setdefault(c.device, []).append((at, n, c))
    for dev, group in on_device.items():  # one device buffer, one copy out of it
        lo = group[0][0]
        stage = torch.empty(max(at + n for at, n, _ in group) - lo, dtype=torch.uint8, device=dev)
        for at, n, c in group:
            stage[at - lo: at - lo + n].copy_(c.reshape(-1).view(torch.uint8))
        # into pinned memory: a copy into new pageable memory faults in every page on the way
        # (the H200: 48 MiB in 61 ms, pinned 18 ms; benchmarks/witness_handover.py)
        pinned = _pinned(stage.numel()) if len(on_device) == 1 else \
            torch.empty(stage.numel(), dtype=torch.uint8, pin_memory=True)
        pinned.copy_(stage)
        host.append((lo, pinned))
    fd = _open_outputs(path)
    try:
        os.ftruncate(fd, off)  # its final size first: the tmpfs gives it huge pages (huge=within_size)
        _write_host(fd, host)
    finally:
        os.close(fd)
    return meta


class _StepWriter:
    """A stepped CPU round's outputs, each call's written into the file as it returns: the
    supervisor copies that call's bytes out before it hands over the next call's inputs, so
    what it checks was made before the runner could see a later call (`_Steps`)."""

    def __init__(self, path: str) -> None:
        self.name = os.path.basename(path)
        self.fd = _open_outputs(path)
        self.off = 0
        self.meta: List[List[Dict[str, Any]]] = []

    def add(self, row: List[Any]) -> int:
        """Write one call's outputs after the last call's; the end of its bytes in the file."""
        meta, chunks, end = _layout([row], self.name, self.off)
        _write_host(self.fd, [(at, c if c.device.type == "cpu" else c.cpu()) for at, _, c in chunks])
        self.meta += meta
        self.off = end
        return end

    def finish(self) -> List[List[Dict[str, Any]]]:
        try:
            os.ftruncate(self.fd, self.off)
        finally:
            self.close()
        return self.meta

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_ZEROS = memoryview(bytes(ALIGN))


def _pwrite_all(fd: int, views: List[Any], at: int) -> None:
    """Write `views` back to back from offset `at`: one pwritev per 512 of them (a pwrite each
    cost ~15 us of a 64-call round's measured time), a short write finished piece by piece."""
    for i in range(0, len(views), 512):
        batch = views[i:i + 512]
        done = os.pwritev(fd, batch, at)
        for v in batch:
            n = len(v)
            if done >= n:
                done -= n
            else:
                while done < n:
                    done += os.pwrite(fd, v[done:], at + done)
                done = 0
            at += n


_PINNED: List[Any] = []


def _pinned(n: int) -> Any:
    """`n` bytes of pinned host memory, one buffer kept per process and grown in powers of two:
    torch's caching host allocator keeps blocks by size, and a new size each round cost a
    cudaHostAlloc of ~1 ms (H100, benchmarks/witness_graph_profile.py)."""
    import torch

    if not _PINNED or _PINNED[0].numel() < n:
        _PINNED[:] = [torch.empty(1 << max(20, (n - 1).bit_length()), dtype=torch.uint8, pin_memory=True)]
    return _PINNED[0][:n]


def _map_file(folder: str, name: str, writable: bool = True) -> Any:
    """`folder/name` mapped shared and populated now (no copy; a link or special file refused).
    Read-only where the mapping is only copied from (onto a GPU): populating a writable shared
    mapping of a file just written to a disk-backed scratch (GPU runners have no tmpfs) takes
    write faults, which may wait for its writeback, inside the supervisor's measurement (on the
    H200 the solution's runner's load was 1.3-1.5x the null's with it; still up to 1.7x without)."""
    import mmap
    import stat

    if "/" in name or name.startswith("."):
        raise ValueError("bad file entry")
    fd = os.open(os.path.join(folder, name), (os.O_RDWR if writable else os.O_RDONLY) | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size == 0:
            return bytearray()
        return mmap.mmap(fd, st.st_size, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                         prot=mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0))
    finally:
        os.close(fd)


_DTYPES: Dict[str, Any] = {}


def _torch_dtypes() -> Dict[str, Any]:
    """torch's dtypes by name, read from its namespace: `getattr(torch, name)` imports a lazy
    submodule of that name (`_inductor`: ~900 modules loaded into the reference runner by one
    description of a solution's outputs, `witness_dtype_import`, session 19)."""
    if not _DTYPES:
        import torch

        _DTYPES.update({n: v for n, v in vars(torch).items() if isinstance(v, torch.dtype)})
    return _DTYPES


def unreadable(e: BaseException) -> str:
    """What a check says of outputs it could not read (their description is the solution's:
    `witness_check_overflow` described a size as Infinity, and the OverflowError that
    escaped the check made the round `unwitnessed`, its forged claim PASSED at 125x)."""
    return f"unreadable outputs ({type(e).__name__}: {e})"[:500]


def _int_field(d: Dict[str, Any], key: str, default: Optional[int] = None) -> int:
    """An integer of a saved value's description (a bool, a float or text is refused)."""
    v = d.get(key, default)
    if type(v) is not int or not (-1 <= v < 1 << 48):
        raise ValueError(f"{key}: not an integer in range ({v!r:.40})")
    return v


def _load_all(meta: List[List[Dict[str, Any]]], folder: str, device: Any) -> List[List[Any]]:
    """The rows `_save_all` described: views of the mapped file (one mapping per file); on a GPU,
    views of one device copy of the file (one copy onto the device, not one per tensor). Each
    tensor is one `as_strided` of a typed view of its file: slicing the byte buffer, viewing and
    reshaping it cost ~40 us a tensor on the 2-core VM, 4-6 ms of a 64-call round's CPU time in
    both runners, whose noise the bound must allow for; this costs ~8 us."""
    import torch

    on_device = torch.device(device).type != "cpu"
    files: Dict[str, Tuple[Any, int]] = {}  # name -> (its bytes, how many)
    typed: Dict[Tuple[str, Any], Any] = {}  # (file, dtype) -> the file's bytes as that dtype
    dtypes: Dict[str, Any] = {}
    rows = []
    if not isinstance(meta, list) or not all(isinstance(row, list) for row in meta):
        raise ValueError("not a list of calls' outputs")
    for row in meta:
        out = []
        for d in row:
            if not isinstance(d, dict):
                raise ValueError("not a saved value")
            if "scalar" in d:
                v = d["scalar"]
                if v is not None and type(v) not in (int, float, bool, str):
                    raise ValueError(f"a scalar that is not one ({type(v).__name__})")
                out.append(v)
                continue
            key = str(d.get("dtype"))
            dtype = dtypes.get(key)
            if dtype is None:
                dtype = dtypes[key] = _torch_dtypes().get(key)
                if dtype is None:
                    raise ValueError(f"unknown dtype {key!r:.60}")
            shape = d.get("shape") or []
            if not isinstance(shape, list) or len(shape) > 16 or any(type(x) is not int or not 0 <= x < 1 << 40 for x in shape):
                raise ValueError(f"shape: not a list of sizes ({shape!r:.80})")
            size = dtype.itemsize
            count = math.prod(shape) if shape else 1
            n = count * size
            name, off = str(d.get("file")), _int_field(d, "offset", -1)
            if name not in files:
                m = _map_file(folder, name, writable=not on_device)
                if not len(m):
                    b = torch.empty(0, dtype=torch.uint8, device=device)
                elif on_device:
                    with warnings.catch_warnings():  # a read-only buffer, copied at once
                        warnings.simplefilter("ignore", UserWarning)
                        b = torch.frombuffer(m, dtype=torch.uint8).to(device)
                else:
                    b = torch.frombuffer(m, dtype=torch.uint8)
                files[name] = (b, b.numel())
            buf, have = files[name]
            if off < 0 or off % size or _int_field(d, "nbytes", -1) != n or off + n > have:
                raise ValueError("bytes do not match the shape and dtype")
            if not n:
                out.append(torch.empty(shape, dtype=dtype, device=device))
                continue
            view = typed.get((name, dtype))
            if view is None:
                view = typed[(name, dtype)] = buf[: have - have % size].view(dtype)
            strides, acc = [], 1
            for x in reversed(shape):
                strides.append(acc)
                acc *= x
            out.append(view.as_strided(shape, strides[::-1], off // size))
        rows.append(out)
    return rows


def _ref_request(request: Dict[str, Any]) -> Dict[str, Any]:
    """The evaluation's request as the reference runner gets it (no build: it never loads the
    solution). The same dict for the prestaged inputs and the check, so that the runner keeps
    one EvalRun for both (`_eval_run`)."""
    return {key: v for key, v in request.items() if key != "build"}


def _eval_run(state: Any, request: Dict[str, Any]) -> Any:
    """The request's EvalRun (its definition, workload, input specs, check), kept for the next
    message of the same request (a round sends the reference runner three)."""
    from ..evaluate import EvalRun

    key = hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).digest()
    kept = getattr(state, "_witness_ev", None)
    if kept is not None and kept[0] == key:
        return kept[1]
    ev = EvalRun(state, request)
    ev._bind_axes()
    state._witness_ev = (key, ev)
    return ev


def _make(ev: Any, seed: int, i: int) -> List[Any]:
    """Input set `i` of a witness round: the inputs the runner refreshes before every timed call
    (random tensors) drawn fresh from `seed`, the others (structured: offsets, indices, scales,
    a router's bias; scalars) those of the evaluation's timing sets, i.e. of its first trial set
    (the request's seed): the witness times calls like the ones it checks the claim of. A kernel
    whose cost depends on them (the fp8 MoE returns at once when no token is routed to a local
    expert) costs the same here as there. Everything fresh when nothing is refreshed (inputs the
    solution could know in full)."""
    from ..inputs import derive_seed, make_inputs, random_input_mask

    fresh = make_inputs(ev.definition, ev.workload, derive_seed(seed, ev.workload.uuid, i), ev.device,
                        ev.dataset_root, ev.state.st_cache, ev.specs)
    mask = random_input_mask(ev.definition, ev.workload, ev.specs)
    if not any(mask) or all(mask):
        return fresh
    base = _timing_base(ev)
    return [x if m else b for x, m, b in zip(fresh, mask, base)]


def _timing_base(ev: Any) -> List[Any]:
    """The evaluation's first trial set (what its timed calls keep of it), kept per workload."""
    from ..inputs import derive_seed, make_inputs

    seed0 = derive_seed(ev.seed, ev.workload.uuid, 0)
    key = (ev._wl_key(), seed0, str(ev.device))  # the key of the runner's own cache of trial sets
    kept = getattr(ev.state, "_witness_base", None)
    if kept is None or kept[0] != key:
        hit = ev.state.sets.get(key)  # the reference runner made it to time the reference
        base = hit[0] if hit is not None else make_inputs(ev.definition, ev.workload, seed0, ev.device,
                                                          ev.dataset_root, ev.state.st_cache, ev.specs)
        kept = (key, base)
        ev.state._witness_base = kept
    return kept[1]


def _folder(name: str) -> str:
    if not name or "/" in name or name.startswith("."):
        raise ValueError("bad folder name")
    return os.path.join(_scratch(), name)


def inputs(state: Any, request: Dict[str, Any], seed: int, k: int, folder: str, ahead: int = 0,
           chain: bool = False) -> Dict[str, Any]:
    """Reference runner: `k` input sets from `seed`, saved into `folder` of its scratch, and the
    reference's outputs on them, kept for the check (which then only compares). The supervisor
    asks for the first round's while the solution's runner evaluates (`prestage`): then neither
    the inputs nor the reference are on the witness's path."""
    ev = _eval_run(state, request)
    made = [_make(ev, seed, i) for i in range(k)]
    saved = _save_all(made, os.path.join(_folder(folder), "inputs.bin"))
    state._witness_made = None
    # a long CPU round has CHECKED_CPU of its calls checked (`_checked_places`, drawn after they
    # return), the reference run at the check for those (56 reference calls of 64 saved). Made
    # `ahead` (while the solution is evaluated, off the witness's path) the first `ahead` sets (at
    # most CHECKED_CPU) get theirs now: every call of a round that takes no more of these sets (a
    # slow claim's); the check then runs none on the path (~10 ms of a CPU job's witness; a
    # sampling check's support, ~100 ms)
    if ev.device.type != "cpu":
        answered = k  # a GPU's coarse round checks every call
    elif ahead:
        answered = min(ahead, CHECKED_CPU)
    else:
        answered = k if k <= CHECKED_CPU else 0  # on the path: only when every call is checked
    if chain and k > 1 and _chain_index(ev, made[0]) is not None:
        answered = min(answered, 1)  # a chained call's inputs depend on the call before's outputs
    refs = reference_outputs(state, ev, made[:answered]) if answered else None
    state._witness_made = (seed, made, saved, refs)  # only files leave this process
    return {"status": "OK", "inputs": saved}


def reference_outputs(state: Any, ev: Any, made: List[List[Any]]) -> Optional[List[Any]]:
    """What the check will compare each input set's outputs with, made ahead: the reference's
    outputs (on copies: `made` stays pristine for the check), or, for a check that does not
    compare to the reference, what it derives from the inputs alone (`Checker.expected`: a
    sampling check's filtered support, whose sort was ~12 ms a call of a CPU check) for as many
    sets as fit in EXPECTED_BYTES (None for the others: made at the check); None when there is
    nothing to make."""
    from ..checks import make_checker

    checker = make_checker(ev.check_spec, ev.definition)
    if checker.compares_to_reference:
        ref = state.reference(ev.definition)
        return [ev._call_reference(ref, m) for m in made]
    out: List[Any] = []
    room = EXPECTED_BYTES
    for m in made:
        ex = checker.expected(m) if room > 0 else None
        room -= _nbytes(ex)
        out.append(ex if room >= 0 else None)
    return out if any(e is not None for e in out) else None


def _nbytes(x: Any) -> int:
    import dataclasses

    import torch

    if isinstance(x, torch.Tensor):
        return x.numel() * x.element_size()
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return sum(_nbytes(getattr(x, f.name)) for f in dataclasses.fields(x))
    return 0


class _Reference:
    """The definition's reference called the way `EvalRun._call_solution` calls a solution."""

    dps = False

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)


def prepare(state: Any, request: Dict[str, Any], mode: str) -> Dict[str, Any]:
    """Not timed: load and bind. The solution's runner ("solution") does it after every PASSED
    evaluation (runner.py), the reference runner ("null", or "reference" for a calibration) when
    the supervisor asks."""
    import torch

    from ..inputs import allocate_outputs

    ev = _eval_run(state, request)
    if mode == "solution":
        runnable = state.runnable(ev.build, ev.definition)
    elif mode == "reference":  # the reference runner only (the supervisor's calibration, `_Witness.calibrate`)
        runnable = _Reference(state.reference(ev.definition))
    else:
        runnable = None
    zeros = [torch.zeros_like(o) for o in allocate_outputs(ev.definition, ev.axes, ev.device)]
    state._witness = (ev, runnable, zeros)
    state._witness_error = None
    return {"status": "OK"}


def _chain_index(ev: Any, args: List[Any]) -> Optional[int]:
    """The input a CPU round's chain moves (`_chained`): the first drawn afresh per call
    (`random_input_mask`: no constraint or structure depends on its values) in a float dtype;
    None where there is none (a round of such calls is not chained) or off the CPU. Whether a
    round is chained at all is the supervisor's (`chain` in its messages: a runner's environment
    holds no FIB_WITNESS_* setting)."""
    import torch

    from ..inputs import random_input_mask

    if ev.device.type != "cpu":
        return None
    mask = random_input_mask(ev.definition, ev.workload, ev.specs)
    for j, (a, m) in enumerate(zip(args, mask)):
        if m and isinstance(a, torch.Tensor) and str(a.dtype).replace("torch.", "") in _CHAIN_DTYPES and a.numel() > 0:
            return j
    return None


def _chain_bits(dtype: Any) -> Tuple[Any, int]:
    """The integer view of a chained input's dtype and the mantissa bits the chain may flip (its
    sign and exponent stay: a finite input stays finite, of the same magnitude's octave)."""
    if not _CHAIN_BITS:
        import torch

        _CHAIN_BITS.update({torch.float16: (torch.int16, 0xFF), torch.bfloat16: (torch.int16, 0x3F),
                            torch.float32: (torch.int32, 0xFFFF), torch.float64: (torch.int64, 0xFFFFFFFF)})
    return _CHAIN_BITS[dtype]


_CHAIN_BITS: Dict[Any, Tuple[Any, int]] = {}


def _chained(args: List[Any], j: int, previous: List[Any]) -> List[Any]:
    """Call i+1's inputs `args` with input `j` moved by call i's outputs `previous` (a new tensor:
    the mapped input stays as drawn): the bytes of the first output tensor, read as the input's
    integer width and tiled to its size, flip the low mantissa bits of the input (`_chain_bits`).
    The same operations whatever the outputs hold, so the null (zero outputs) costs what a
    solution's round does. Bits, not arithmetic: any change of an output's last bits moves the
    next input, so the chain is no contraction a batcher could solve in a few batched sweeps
    (`chain_fixed_point` needed ~12 with a sine of the output), a NaN output spreads no NaN (it
    would have made every later input NaN, and NaN outputs "right"), and integer operations
    cost a few microseconds where mixed float arithmetic cost more than an RMSNorm call."""
    import torch

    x = args[j]
    flat = x.reshape(-1)
    idt, mask = _chain_bits(x.dtype)
    first = next((o for o in previous if isinstance(o, torch.Tensor) and o.numel() > 0), None)
    width = flat.element_size()
    raw = None
    if first is not None:
        o = first.detach().reshape(-1)
        if not o.is_contiguous():
            o = o.contiguous()
        raw = o.view(torch.uint8)
        raw = raw[: raw.numel() // width * width]
    if raw is None or raw.numel() == 0:
        moved = flat.clone()
    else:
        m = raw.view(idt) & mask
        if m.numel() < flat.numel():
            m = m.repeat((flat.numel() + m.numel() - 1) // m.numel())
        moved = torch.bitwise_xor(flat.view(idt), m[: flat.numel()]).view(x.dtype)
    out = list(args)
    out[j] = moved.view(x.shape)
    return out


_STEP = struct.Struct(">I")  # a stepped round's go: the call's number, raw
_END = struct.Struct(">Q")  # a stepped round's answer: where the call's outputs end in the outputs file, raw


def _plain() -> Any:
    """Torch function modes (and subclass overrides) off for the harness's own operations of the
    witness in a runner: the runner enters it around every witness message but the coarse round's
    `run`, which enters it around each of its own steps and not around the solution's calls
    (re-enabling the modes for a call, `_as_solution`, cost an honest CPU call ~10 us). A mode the
    solution left active (`torch.set_default_device` leaves a DeviceContext, which the guard
    allows) sent every one of them through its Python handler in the solution's runner and none in
    the null's, and an honest 16 us RMSNorm was witnessed at 61.7 us and disputed on a CPU
    (session 23); on a GPU its tensors made without a device went there, and the graph round
    failed (`default_device_set`, session 25). The solution's own calls get them back."""
    return _context("DisableTorchFunction")


def _as_solution() -> Any:
    """The solution's torch function modes on again for its own call inside `_plain`."""
    return _context("_EnableTorchFunction")


def _context(name: str) -> Any:
    ctx = _CONTEXTS.get(name)
    if ctx is None:
        import contextlib

        import torch

        ctx = _CONTEXTS[name] = getattr(torch._C, name, None) or contextlib.nullcontext
    return ctx()


_CONTEXTS: Dict[str, Any] = {}  # torch's context managers by name, resolved once


def run(state: Any, saved_inputs: List[List[Dict[str, Any]]], folder: str, sock: Any = None,
        chain: bool = False) -> Dict[str, Any]:
    """Timed by the supervisor: one call per input set of `folder`, every output saved there
    (the null mode of `prepare`: the zero outputs, no call). On a GPU the calls are enqueued back
    to back and the device synchronised once, after the last: a call then costs the supervisor's
    clock the larger of its launch cost and its device time, which is what the claim is (the
    latency or the host time per call, whichever is larger). Synchronising after every call added
    the launch-to-completion latency (~10-50 us) to each and disputed honest 3 us kernels on the
    H100 (6-22 of 90 anchor evaluations). Nothing the solution enqueued can finish later than the
    one synchronisation, which precedes the outputs being saved."""
    import gc

    import torch

    from ..evaluate import _sync
    from ..inputs import allocate_outputs

    prepared = getattr(state, "_witness", None)
    if prepared is None:
        raise RuntimeError("the witness's calls were not prepared after the evaluation:\n"
                           + str(getattr(state, "_witness_error", "") or "(no evaluation passed in this runner)"))
    ev, runnable, zeros = prepared
    # the harness's own functions as they are when the round starts, called through these names
    # and checked after every call of the solution: one replaced on the module during a call
    # (`witness_midround_helpers`: a lean chain and save, a shadowed `_call_solution`) is not
    # the one this round calls, and one whose code was swapped fails the round
    from ..evaluate import EvalRun

    chain_fn, save_fn, call_fn, load_fn = _chained, _save_all, EvalRun._call_solution, _load_all
    harness = (chain_fn, save_fn, call_fn, load_fn, _sync, allocate_outputs)
    codes = tuple(f.__code__ for f in harness)
    d = _folder(folder)
    dps = bool(getattr(runnable, "dps", False))
    results: List[List[Any]] = []
    was = gc.isenabled()
    gc.disable()  # no collection pause inside the supervisor's measurement
    # where the time went, as this process saw it: a diagnosis recorded beside the verdict, never
    # part of it (in the solution's runner these numbers are the solution's to forge)
    clock = time.perf_counter
    t0 = clock()
    steps: Optional[_StepWriter] = None  # a stepped round's outputs, written call by call
    try:
        per_call_sync = ev.device.type != "cuda"
        with _plain():
            loaded = load_fn(saved_inputs, d, ev.device)
        steps = _StepWriter(os.path.join(d, "outputs.bin")) if sock is not None else None
        chained = _chain_index(ev, loaded[0]) if chain and len(loaded) > 1 else None
        t1 = clock()
        for i, args in enumerate(loaded):
            if sock is not None:  # stepped (CPU): call i's inputs exist only once the supervisor says go
                _await_go(sock, i)
            if chained is not None and i > 0:  # call i's inputs exist only once call i-1 returned
                with _plain():
                    args = chain_fn(args, chained, results[-1])
            if runnable is None:
                outs = zeros
            else:
                outs = []
                if dps:
                    with _plain():
                        outs = allocate_outputs(ev.definition, ev.axes, ev.device)
                outs = call_fn(ev, runnable, args, outs)
                # plain tensors only: a subclass's __torch_function__ would run the solution's code
                # inside the harness's chain and save (`chain_subclass_empty` emptied the outputs'
                # description from there, session 21)
                odd = next((type(o) for o in outs if type(o) is not torch.Tensor), None)
                if odd is not None:
                    raise RuntimeError(f"an output is a {odd.__module__}.{odd.__name__}, not a plain torch.Tensor")
            if any(f.__code__ is not c for f, c in zip(harness, codes)):  # the null checks too: same cost
                raise RuntimeError("timer_patched: the solution replaced the code of the witness's own functions "
                                   "during its call; the measurement is not trusted")
            if per_call_sync:
                # on a CPU a call's outputs are copied as it returns, the null's zeros too (the
                # same cost): the rows are kept until the round's save, and a solution that
                # returns one static buffer, or one per input address, had every kept row show
                # the last call's values (`reused_output_buffer`, `output_per_input_address`:
                # honest solutions witness_wrong, 8 of 8 checked calls); the copies are fresh
                # pages each call in both runners (before, the solution's outputs were, the
                # null's one zero set was not: an honest 4 x 4096 RMSNorm was witnessed at
                # 2.3-2.7x its claim, its bound 2.8x)
                with _plain():
                    outs = [o.clone() if isinstance(o, torch.Tensor) else o for o in outs]
                    _sync(ev.device)
            results.append(tuple(outs))  # a row the solution's code cannot empty (`chain_empty_rows`)
            if steps is not None:  # the call's outputs into the file, then where they end
                with _plain():
                    sock.sendall(_END.pack(steps.add(results[-1])))
        t2 = clock()
        with _plain():
            _sync(ev.device)
            t3 = clock()
            calls = steps.finish() if steps is not None else save_fn(results, os.path.join(d, "outputs.bin"))
        t4 = clock()
    finally:
        if steps is not None:
            steps.close()  # a call that raised: the round's file is not finished
        if was:
            gc.enable()
    parts = {"load": t1 - t0, "calls": t2 - t1, "sync": t3 - t2, "save": t4 - t3}
    return {"status": "OK", "calls": calls, "parts_ms": {k: round(v * 1e3, 3) for k, v in parts.items()}}


def _await_go(sock: Any, i: int) -> None:
    """A stepped round's go for call i (raw bytes: a step costs two small system calls a side)."""
    from ..protocol import recv_exact

    (got,) = _STEP.unpack(recv_exact(sock, _STEP.size))
    if got != i:
        raise RuntimeError(f"the supervisor's stepped round lost its step {i} (got {got})")


def check(state: Any, request: Dict[str, Any], seed: int, calls: List[List[Dict[str, Any]]], folder: str,
          loaded: Optional[List[List[Any]]] = None, labels: Optional[List[int]] = None,
          places: Optional[List[int]] = None,
          previous: Optional[List[Optional[List[Dict[str, Any]]]]] = None) -> Dict[str, Any]:
    """Reference runner: apply the definition's check to the outputs the solution's runner saved
    (copied into `folder`; `loaded`: those outputs already read from it; `places`: the calls'
    places among the seed's input sets, else 0, 1, ...; `labels`: the calls' numbers in the
    messages, else their places), against the reference's
    outputs on the inputs of `seed` (those `inputs` kept; remade, and the reference run, when it
    kept another seed's). `previous`: per call, the description of the outputs of the call before
    it in its round (None for a round's first): a chained round's call ran on its drawn inputs
    moved by those (`_chained`), and is checked on the same."""
    from ..checks import make_checker
    from ..correctness import check_structure, error_maxima

    ev = _eval_run(state, request)
    checker = make_checker(ev.check_spec, ev.definition)
    ref = state.reference(ev.definition) if checker.compares_to_reference else None
    try:
        all_outs = loaded if loaded is not None else _load_all(calls, _folder(folder), ev.device)
    except Exception as e:  # noqa: BLE001 - the solution's description of its outputs: whatever fails to read is its fault
        return {"status": "OK", "bad": [unreadable(e)]}
    at = [int(p) for p in places] if places is not None else list(range(len(all_outs)))
    if len(at) != len(all_outs) or any(p < 0 for p in at):
        raise ValueError("one place per call")
    before: List[Optional[List[Any]]] = [None] * len(all_outs)  # the outputs each call's inputs were chained to
    if previous is not None:
        if len(previous) != len(all_outs):
            raise ValueError("one previous call per call")
        wanted = [i for i, d in enumerate(previous) if d is not None]
        try:
            read = _load_all([previous[i] for i in wanted], _folder(folder), ev.device) if wanted else []
        except Exception as e:  # noqa: BLE001 - the solution's description of its outputs: whatever fails to read is its fault
            return {"status": "OK", "bad": [unreadable(e)]}
        for i, outs in zip(wanted, read):
            before[i] = outs
    labels = labels if labels is not None else at
    kept = getattr(state, "_witness_made", None)
    state._witness_made = None
    ok = kept is not None and kept[0] == seed and len(kept[1]) > max(at, default=-1)
    made = kept[1] if ok else None
    # the reference's outputs were computed with the inputs; without them (the kept set is of
    # another seed) the reference runs now, on copies of the remade inputs
    refs = kept[3] if ok else None
    uses_ref = checker.compares_to_reference
    import torch

    bad: List[Tuple[int, str]] = []  # (call, why)
    judged: List[Tuple[int, Any, Any, Any]] = []  # (call, outputs, reference, inputs) of the right structure
    chain_at: Optional[int] = None  # the input the chain moves: the same for every call, found once
    chain_found = False
    for i, outs in enumerate(all_outs):
        pristine = made[at[i]] if made is not None else _make(ev, seed, at[i])
        chain = None
        if at[i] > 0 and before[i] is not None:
            if not chain_found:
                chain_at, chain_found = _chain_index(ev, pristine), True
            chain = chain_at
        if chain is not None:  # the inputs the call ran on: its drawn ones moved by the call before's outputs
            pristine = _chained(pristine, chain, before[i])
        prob = check_structure(outs, ev.definition, ev.out_shapes, ev.device)
        if prob is not None:
            bad.append((i, prob.message))
            continue
        ref_out = (refs[at[i]] if refs is not None and at[i] < len(refs) and chain is None
                   else None)  # made ahead on the drawn inputs
        if ref_out is None and uses_ref:
            ref_out = ev._call_reference(ref, pristine)
        judged.append((i, outs, ref_out, pristine))
    errs: Optional[Tuple[float, float]] = None  # the trace's error figures (max abs, max rel)
    per_call = judged
    if uses_ref and checker.counts_add_up and judged and ev.device.type != "cpu":
        # on a GPU the whole round in one pass (its count and error figures read in one
        # synchronisation): a dozen device operations a round instead of a dozen a call, each
        # call's ~0.4 ms on the H200 being their launches; call by call only when some call
        # failed, to say which. Not on a CPU: there computing is the cost and stacking adds to it
        outs_all, refs_all = _stacked(judged)
        figures = torch.cat([checker.timed_bad(outs_all, refs_all, None, ev.tols).reshape(1).to(torch.float64),
                             error_maxima(outs_all, refs_all).to(ev.device)])
        n_bad, max_abs, max_rel = figures.tolist()
        errs = (max_abs, max_rel)
        per_call = judged if n_bad else []
    if errs is None:  # call by call: the first call's figures (a pass over its outputs is ~1/3 of a check)
        first = next((c for c in judged if c[2] is not None), None) if uses_ref else None
        if first is not None:
            errs = tuple(float(x) for x in error_maxima(first[1], first[2]).tolist())
    counted: List[Tuple[int, Any, Any, Any, Any]] = []  # (call, bad elements on the device, outputs, reference, inputs)
    for i, outs, ref_out, pristine in per_call:
        counted.append((i, checker.timed_bad(outs, ref_out, pristine, ev.tols), outs, ref_out, pristine))
    # the cheap device-side counts decide, read in one synchronisation; the full check (its
    # message) for the first wrong call only
    counts = torch.stack([c[1].reshape(()).to(torch.int64) for c in counted]).tolist() \
        if counted else []
    for (i, _, outs, ref_out, pristine), n in zip(counted, counts):
        if n == 0:
            continue
        res = checker.check_trial(outs, ref_out, pristine, ev.tols) if not bad else None
        bad.append((i, (res.reason if res is not None else "") or "outside the tolerance"))
    out: Dict[str, Any] = {"status": "OK", "bad": [f"call {labels[i]}: {why}" for i, why in sorted(bad)]}
    if errs is not None:  # the trace's error figures, measured where the solution cannot reach
        out["max_abs"], out["max_rel"] = float(errs[0]), float(errs[1])
    return out


def _stacked(calls: List[Tuple[int, Any, Any, Any]]) -> Tuple[List[Any], List[Any]]:
    """The calls' outputs and reference outputs, each output stacked along a new first
    dimension (one call's own tensors when there is one)."""
    import torch

    if len(calls) == 1:
        return list(calls[0][1]), list(calls[0][2])
    n = len(calls[0][1])
    outs = [torch.stack([c[1][j] for c in calls]) for j in range(n)]
    refs = [torch.stack([c[2][j].to(outs[j].device) for c in calls]) for j in range(n)]
    return outs, refs


# ----------------------------------------------------------------------------- supervisor side
def _usage_file(handle: Any) -> Optional[str]:
    notes = ((handle.ready or {}).get("confine") or {}).get("notes") or {}
    f = notes.get("cpu_usage_file")
    return f if isinstance(f, str) else None


def _scratch_bytes(handle: Any) -> Optional[int]:
    """The byte quota of a runner's scratch tmpfs (None: no tmpfs, a directory on disk)."""
    mounts = (((handle.ready or {}).get("confine") or {}).get("notes") or {}).get("mounts")
    tmpfs = mounts.get("scratch_tmpfs") if isinstance(mounts, dict) else None
    n = tmpfs.get("bytes") if isinstance(tmpfs, dict) else None
    return int(n) if isinstance(n, int) and n > 0 else None


def _accept(handle: Any, nonce: str, reply: Any) -> Tuple[Optional[Dict[str, Any]], str]:
    """A runner's reply to the request sent with `nonce`, if it is its sealed answer (the
    handle's sequence number then moves on): (result, why-not)."""
    from . import channel

    result, why = channel.verify(handle.key, nonce, handle.seq, reply)
    if result is not None and handle.key is not None:
        handle.seq = int(reply.get("seq", handle.seq))
    if result is None:
        out_of_step(handle)
    return result, why


def out_of_step(handle: Any) -> None:
    """Mark a runner whose reply to a request may still be on its way (a timeout, a broken read)
    or was not the reply to it: its next request would read that reply, and every later one the
    one before. The worker never sends it another request (`Supervisor.reference_runner` starts a
    fresh reference runner): a reference runner left so by one slow check answered every later
    witness with a stale reply, and their solutions passed `unwitnessed` (red team 9, by reading)."""
    if hasattr(handle, "out_of_step"):
        handle.out_of_step = True


def _exchange(handle: Any, msg: Dict[str, Any], timeout: float, cpu: bool = False, before_send: Optional[Any] = None,
              after_reply: Optional[Any] = None, during: Optional[Any] = None) -> Tuple[Optional[Dict[str, Any]], Tuple[float, float], str]:
    """Send `msg` to a runner and wait for its sealed reply: (result, (wall ms, CPU ms), why-not).
    CPU ms: the CPU time of the runner's cgroup when `cpu` (and it has one), else the wall time.
    `before_send()` runs after the first CPU reading (it hands the runner its inputs),
    `after_reply()` before the last (it takes the outputs away: work the runner does on them
    until then is counted); `during()` between the request and the reply (a stepped round's
    steps)."""
    from ...sandbox.cgroup import settled_cpu_ns
    from ..protocol import RUNNER_MAX_MESSAGE, ConnectionClosed, recv_msg, send_msg

    if getattr(handle, "out_of_step", False):  # its next reply would be an earlier request's
        return None, (0.0, 0.0), "out of step (an earlier request timed out or its reply was not read)"
    nonce = os.urandom(8).hex()
    usage = _usage_file(handle) if cpu else None
    # both readings once no thread of the runner is on a CPU: a running thread's time reaches
    # its group only at the next tick, so a reading taken while the runner was still cleaning up
    # after its reply could lack the whole call (settled_cpu_ns)
    c0 = settled_cpu_ns(usage)
    try:
        if before_send is not None:
            before_send()
        t0 = time.perf_counter()
        send_msg(handle.sock, {**msg, "nonce": nonce})
        if during is not None:
            during()
        # the reply within the exchange's one timeout, steps included
        left = timeout - (time.perf_counter() - t0)
        if left <= 0:
            raise TimeoutError
        reply = recv_msg(handle.sock, timeout=left, limit=RUNNER_MAX_MESSAGE)
    except TimeoutError:
        out_of_step(handle)
        return None, (0.0, 0.0), "timeout"
    except (ConnectionClosed, BrokenPipeError, ConnectionResetError, OSError, ValueError) as e:
        out_of_step(handle)
        return None, (0.0, 0.0), f"{type(e).__name__}: {e}"
    wall = (time.perf_counter() - t0) * 1e3  # until the reply (the parallelism is CPU over this)
    late = ""
    if after_reply is not None:
        try:
            after_reply()
        except OSError as e:
            late = f"{type(e).__name__}: {e}"
    c1 = settled_cpu_ns(usage)
    ms = (wall, (c1 - c0) / 1e6 if c0 is not None and c1 is not None else wall)
    result, why = _accept(handle, nonce, reply)
    if result is None:
        return None, ms, why
    if late:
        result = {**result, "late_error": late}
    return result, ms, ""


class _Folder:
    """A fresh directory in a runner's scratch (through /proc/<pid>/root), which the supervisor
    fills and reads without following any link the runner may plant there."""

    def __init__(self, handle: Any) -> None:
        c = (handle.ready or {}).get("confine") or {}
        pid, scratch = (handle.ready or {}).get("pid"), c.get("scratch_dir")
        if not isinstance(pid, int) or not isinstance(scratch, str):
            raise OSError("the runner did not say where its scratch is")
        self.name = "fib-witness-" + os.urandom(8).hex()
        base = os.open(f"/proc/{pid}/root{scratch}", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.mkdir(self.name, 0o700, dir_fd=base)
            self.fd = os.open(self.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=base)
        finally:
            os.close(base)
        self._base = f"/proc/{pid}/root{scratch}"

    def _open_data(self, name: str, limit: int) -> Tuple[int, int]:
        """`name` of this folder opened for reading, and its size: a plain name, a regular file
        (no link followed), at most `limit` bytes; OSError otherwise."""
        import stat

        if "/" in name or name.startswith("."):
            raise OSError("bad file name")
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError("not a regular file")
            if st.st_size > limit:
                raise OSError(f"file too large ({st.st_size} bytes)")
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size

    def copy_file(self, name: str, other: "_Folder", limit: int, nbytes: Optional[int] = None) -> None:
        """`name` of this folder (its first `nbytes`) into `other`, copied by the kernel (sendfile:
        no pass through this process), the copy sized first so that the tmpfs gives it huge pages."""
        src, whole = self._open_data(name, limit)
        try:
            size = whole if nbytes is None else min(nbytes, whole)
            dst = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=other.fd)
            try:
                os.fchmod(dst, 0o666)  # the runner maps it writable, whatever user it is in its namespace
                os.ftruncate(dst, size)
                done = 0
                while done < size:
                    n = os.sendfile(dst, src, done, size - done)
                    if n <= 0:
                        raise OSError("the file shrank while it was copied")
                    done += n
            finally:
                os.close(dst)
        finally:
            os.close(src)

    def stepped_to(self, other: "_Folder", entries: List[List[Dict[str, Any]]], limit: int, outputs: int,
                   out_limit: int) -> "_Steps":
        """The data file of `entries` into `other` call by call: made there at its full size, all
        zeros, and each call's bytes copied in by `_Steps.hand(i)` right before that call.
        `outputs`: the descriptor of the runner's outputs file, of which the calls may fill
        `out_limit` bytes: the steps own it once made; where this raises, the caller still does
        (`stepped_inputs_precreate`: an inputs file the solution made first failed the
        hand-over, and both closed it)."""
        name = _data_file(entries)
        if name is None:
            return _Steps(-1, -1, entries, outputs, out_limit)
        src, _ = self._open_data(name, limit)
        steps = _Steps(src, -1, entries, -1, out_limit)
        try:
            steps.dst = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=other.fd)
            os.fchmod(steps.dst, 0o666)  # the runner maps it writable, whatever user it is in its namespace
            os.ftruncate(steps.dst, _extent(entries))
        except OSError:
            steps.close()
            raise
        steps.outputs = outputs
        return steps

    def copy_to(self, other: "_Folder", entries: List[List[Dict[str, Any]]], limit: int, share: bool = False) -> None:
        """The data file of `entries` into `other`, as far as they reach into it. `share`: as a
        hard link where both folders are on one filesystem and all of it is wanted (a GPU
        runner's scratch is a directory of the worker's, and maps its inputs read-only): no
        copy at all. The file is made read-only first; the runner can change neither its mode
        (seccomp) nor its contents then (no capabilities), so the name the reference runner
        keeps for the null call still holds what it wrote."""
        name = _data_file(entries)
        extent = _extent(entries)
        if name is not None and not (share and self.link_file(name, other, limit, extent)):
            self.copy_file(name, other, limit, extent)

    def link_file(self, name: str, other: "_Folder", limit: int, nbytes: int) -> bool:
        """`name` of this folder into `other` as a read-only hard link; False where it cannot be
        (another filesystem, a part of the file wanted): the caller copies it."""
        import errno

        fd, size = self._open_data(name, limit)
        try:
            if nbytes < size:
                return False
            try:
                os.fchmod(fd, 0o444)
            except PermissionError:  # not ours to make read-only: copied instead
                return False
        finally:
            os.close(fd)
        try:
            os.link(name, name, src_dir_fd=self.fd, dst_dir_fd=other.fd, follow_symlinks=False)
        except OSError as e:
            if e.errno in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES):
                return False
            raise
        return True

    def make_room(self, name: str, nbytes: int, keep: bool = False) -> int:
        """`name` made in this folder with `nbytes` allocated (zeros), for a runner to write its
        outputs into. Allocating a round's output pages inside the measured window cost the
        solution's runner up to 5.6 ms of CPU time more than the null call's (an RMSNorm's 113
        calls, 3.6 MiB, under load; the null writes its zeros into pages its previous call had just
        freed), a likely cause of the honest ~11 us call disputed under the suite's load in
        session 19: the supervisor pays it before.
        `keep`: the file stays open for reading (its descriptor returned; else -1)."""
        fd = os.open(name, (os.O_RDWR if keep else os.O_WRONLY) | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                     dir_fd=self.fd)
        try:
            os.fchmod(fd, 0o666)  # the runner writes it, whatever user it is in its namespace
            if nbytes > 0:
                os.posix_fallocate(fd, 0, nbytes)
        except BaseException:
            os.close(fd)
            raise
        if keep:
            return fd
        os.close(fd)
        return -1

    def truncate(self, name: str, nbytes: int) -> None:
        fd = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=self.fd)
        try:
            if os.fstat(fd).st_size > nbytes:
                os.ftruncate(fd, nbytes)
        finally:
            os.close(fd)

    def unlink(self, name: str) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def remove(self) -> None:
        try:
            for name in os.listdir(self.fd):
                try:
                    os.unlink(name, dir_fd=self.fd)
                except OSError:
                    pass
            os.close(self.fd)
            base = os.open(self._base, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.rmdir(self.name, dir_fd=base)
            finally:
                os.close(base)
        except OSError:
            pass  # the runner's scratch goes with the runner


class _Steps:
    """A stepped CPU round's hand-over (session 19): call i's inputs reach the solution's runner
    only once call i-1 has returned and its outputs are in the round's outputs file. With the
    whole round's inputs in its scratch before its first call, `batch_in_call` read them from the
    harness's frame, computed the round in one batch and was witnessed at its batch throughput:
    PASSED at 22x. As each call returns the runner says where its outputs end in the file, and the
    supervisor copies that call's bytes out before the next call's inputs go in: the reference
    runner checks those copies (`committed`), never what the file holds later. Session 20: the
    runner hashed each call's outputs instead (blake2b, ~28 us for 32 KiB on the 2-core VM, more
    than the 12 us call it committed), inside the measured CPU time and its noise."""

    def __init__(self, src: int, dst: int, entries: List[List[Dict[str, Any]]], outputs: int = -1,
                 limit: int = 0) -> None:
        self.src, self.dst, self.entries, self.outputs, self.limit = src, dst, entries, outputs, limit
        self.committed: List[Tuple[int, bytes]] = []  # each call's (start, bytes) in the outputs file

    def hand(self, i: int) -> None:
        """Copy call i's bytes into the runner's file."""
        if self.dst < 0:
            return
        for e in self.entries[i]:
            if not isinstance(e, dict) or "file" not in e:
                continue
            at, n = int(e.get("offset", 0)), int(e.get("nbytes", 0))
            while n > 0:  # the runners' scratch are tmpfs mounts of their own: no copy_file_range across them
                data = os.pread(self.src, min(n, 8 << 20), at)
                if not data:
                    raise OSError("the inputs file shrank while it was handed over")
                done = os.pwrite(self.dst, data, at)
                at, n = at + done, n - done

    def _take(self, i: int, start: int, end: int) -> bytes:
        """Call i's outputs, bytes `start` to `end` of the outputs file, as they are now."""
        if not start <= end <= self.limit:
            raise OSError(f"call {i}: its outputs were said to end at byte {end} of the file (after {start}, "
                          f"at most {self.limit})")
        if self.outputs < 0:
            return b""
        parts, at = [], start
        while at < end:
            data = os.pread(self.outputs, min(end - at, 8 << 20), at)
            if not data:
                raise OSError(f"call {i}: the outputs file is shorter than its runner said ({at} < {end} bytes)")
            parts.append(data)
            at += len(data)
        return b"".join(parts)

    def run(self, handle: Any, timeout: float, copy: bool = True) -> None:
        """The steps, between the round's request and its reply: for each call, its inputs (if
        `copy`), a go, and once it returned the copy of its outputs; all of them within `timeout`
        (a deadline per step let a round of 128 calls that each slept 0.6 s hold the worker for
        231 s of a 60 s timeout, `stepped_slow_steps`)."""
        from ..protocol import recv_exact

        deadline = time.monotonic() + timeout
        start = 0
        for i in range(len(self.entries)):
            if copy:
                self.hand(i)
            handle.sock.sendall(_STEP.pack(i))
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the stepped round's calls took over {timeout:g} s")
            (end,) = _END.unpack(recv_exact(handle.sock, _END.size, left))
            self.committed.append((start, self._take(i, start, end)))
            start = end

    def misplaced(self, calls: List[List[Dict[str, Any]]]) -> List[int]:
        """The calls whose described outputs are not within the bytes committed when they returned."""
        out = []
        for i, row in enumerate(calls):
            start, data = self.committed[i] if i < len(self.committed) else (0, b"")
            for e in row:
                if isinstance(e, dict) and "file" in e:
                    at, n = e.get("offset"), e.get("nbytes")
                    if type(at) is not int or type(n) is not int or at < start or at + n > start + len(data):
                        out.append(i)
                        break
        return out

    def write_committed(self, folder: "_Folder", name: str) -> None:
        """The committed bytes as file `name` of `folder` (what the reference runner checks)."""
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=folder.fd)
        try:
            end = max((a + len(d) for a, d in self.committed), default=0)
            os.ftruncate(fd, end)
            for at, data in self.committed:
                view = memoryview(data)
                while view:
                    n = os.pwrite(fd, view, at)
                    view, at = view[n:], at + n
        finally:
            os.close(fd)

    def close(self) -> None:
        for fd in (self.src, self.dst, self.outputs):
            if fd >= 0:
                os.close(fd)
        self.src = self.dst = self.outputs = -1


def _data_file(entries: List[List[Dict[str, Any]]]) -> Optional[str]:
    """The one data file the tensors of `entries` are in (None: only scalars); OSError for more."""
    names = {str(e["file"]) for row in entries for e in row if isinstance(e, dict) and "file" in e}
    if len(names) > 1:
        raise OSError("more than one data file")
    return names.pop() if names else None


def _extent(entries: List[List[Dict[str, Any]]]) -> int:
    """How far into their data file the tensors of `entries` reach (bytes)."""
    return max((int(e.get("offset", 0)) + int(e.get("nbytes", 0)) for row in entries for e in row
                if isinstance(e, dict) and "file" in e), default=0)


def _file_limit(handle: Any) -> Optional[int]:
    """The largest file a runner may write (its RLIMIT_FSIZE; None: unknown or unlimited)."""
    fsize = ((((handle.ready or {}).get("confine") or {}).get("rlimits") or {}).get("fsize") or {}).get("soft")
    return int(fsize) if isinstance(fsize, int) and fsize > 0 else None


def _round_bytes(device: str, runners: List[Any]) -> int:
    """The most bytes of inputs and outputs one round may hand over: MAX_BYTES on a GPU, on a CPU
    MAX_BYTES_CPU and a quarter of the smaller scratch tmpfs (the reference runner holds the
    inputs, the solution's outputs and the null call's); never more than the runners may write
    into one file (the inputs of a round are one file)."""
    limits = [MAX_BYTES if device != "cpu" else MAX_BYTES_CPU]
    if device == "cpu":
        limits += [q // 4 for q in (_scratch_bytes(h) for h in runners) if q is not None]
    return file_limited(min(limits), runners)


def file_limited(cap: int, runners: List[Any]) -> int:
    """`cap` bytes, or fewer where a runner may not write a file that large (a round's inputs,
    or its outputs, are one file)."""
    return min([cap] + [f for f in (_file_limit(h) for h in runners) if f is not None])


def _value_bytes(request: Dict[str, Any], inputs: bool) -> Optional[List[int]]:
    """Bytes of each of one call's outputs, and of its inputs too where `inputs` (None: unknown)."""
    from ...data import Definition

    try:
        d = Definition.model_validate(request["definition"])
        axes = {k: v for k, v in ((request.get("workload") or {}).get("axes") or {}).items() if k in d.var_axes}
        parts = [(d.outputs, d.output_shapes_by_name(axes))]
        if inputs:
            parts.append((d.inputs, d.input_shapes_by_name(axes)))
        return [math.prod(shapes.get(n) or ()) * spec.dtype.bits // 8 for specs, shapes in parts for n, spec in specs.items()]
    except (KeyError, TypeError, ValueError):  # not a valid definition or axes (ValidationError, ShapeError): unknown
        return None


def _call_bytes(request: Dict[str, Any], inputs: bool = True) -> Optional[int]:
    """Bytes of one call's inputs (unless `inputs` is False) and outputs (None: unknown)."""
    sizes = _value_bytes(request, inputs)
    return None if sizes is None else sum(sizes)


def outputs_extent(request: Dict[str, Any], k: int) -> int:
    """Bytes of the file `_save_all` writes for `k` calls' outputs (0: unknown)."""
    sizes = _value_bytes(request, inputs=False) or []
    return k * sum(-(-n // ALIGN) * ALIGN for n in sizes)


def _k_for(request: Dict[str, Any], claim: Optional[float], device: str, max_bytes: int) -> int:
    """Calls per round: K_CALLS (K_CALLS_GPU), fewer when inputs and outputs are large
    (`max_bytes` a round, 0: one call is over it; ROUND_BYTES beyond one call) and, on a CPU,
    fewer when a call is slow (ROUND_MS of claimed time a round resolves it; a forged, shorter
    claim only gets more calls)."""
    per_call = _call_bytes(request)
    most = K_CALLS_GPU if device != "cpu" else K_CALLS if claim is None else max(K_CALLS, K_CALLS_CHEAP)
    k = most if per_call is None else int(min(most, max_bytes // max(1, per_call)))
    if k > 1 and per_call:
        k = min(k, max(1, ROUND_BYTES // per_call))
    if device == "cpu" and k > 1 and claim is not None and claim > 0:
        # up to K_CALLS for ROUND_MS of claimed time; beyond that, a cheap call's long round
        # holds ROUND_MS_CHEAP of it (a 100 us claim: 50 calls; a claim under 39 us: 128)
        k = min(k, max(min(K_CALLS, math.ceil(ROUND_MS / claim)), math.ceil(ROUND_MS_CHEAP / claim), 1))
    return k


def cpu_allowance_ms(k: int) -> float:
    """The CPU bound's allowance a call in a round of `k` calls: `ABS_MS` up to K_CALLS calls, the
    same per round beyond (the harness's share that it covers is mostly the round's), and at
    least ROUND_ALLOWANCE_MS a round (one or two calls)."""
    return max(ABS_MS * min(1.0, K_CALLS / max(1, k)), ROUND_ALLOWANCE_MS / max(1, k))


def _set_status(result: Dict[str, Any], status: str, message: str, flag: str) -> None:
    extra = result.setdefault("extra", {})
    extra["flags"] = list(dict.fromkeys([*(extra.get("flags") or []), flag]))
    extra["suspect"] = True
    result["status"] = status
    result["message"] = message
    result["performance"] = None
    if status != "INCORRECT_NUMERICAL":
        result["correctness"] = None


def _flag(result: Dict[str, Any], flag: str, note: str, suspect: bool = True) -> None:
    extra = result.setdefault("extra", {})
    extra["flags"] = list(dict.fromkeys([*(extra.get("flags") or []), flag]))
    extra["notes"] = [*(extra.get("notes") or []), "supervisor: " + note]
    if suspect:
        extra["suspect"] = True


def null_cache_key(ref_request: Dict[str, Any], *round_shape: Any) -> str:
    """The key of a null round's time: the workload as the reference runner gets it and what
    shapes the round (calls, clock, kind of round)."""
    return hashlib.sha256(json.dumps([ref_request.get("definition"), ref_request.get("workload"),
                                      (ref_request.get("config") or {}).get("inputs"), *round_shape],
                                     sort_keys=True, default=str).encode()).hexdigest()


def cached_null_of(sup: Any, key: str) -> Optional[Any]:
    """A null round's time the worker measured within NULL_TTL_S (None: measure it)."""
    hit = sup.__dict__.setdefault("_witness_null", {}).get(key)
    return hit[1] if hit is not None and time.monotonic() - hit[0] < NULL_TTL_S else None


def keep_null(sup: Any, key: str, value: Any) -> None:
    sup.__dict__.setdefault("_witness_null", {})[key] = (time.monotonic(), value)


def paired_per_call(rounds: List[Tuple[float, Optional[float]]], k: int, need: int = 1) -> float:
    """CPU: the time per call the rounds witnessed. A round without a null (None) counts as it is,
    the harness's share still in: it can only be over the solution's time. A round with one counts
    less the null measured right after it, and the `need`-th fastest of those counts (inf while
    fewer): a null is a noisy reading subtracted, and the luckiest of several rounds is the
    forger's pick (session 15, 64 calls a round: a 20x forgery of a ~40 us RMSNorm was witnessed at
    70-90 us a call in most rounds and at 16-41 us in one round of several, under its 41 us bound).
    Each round's null is measured right after it (not one kept for 10 minutes: a round's CPU time
    moved by up to 2x from one round to the next on the 2-core VM), and each round is charged the
    smallest null of the evaluation, not its own: a null read high lowers its round's estimate,
    which only a forger needs (session 18: a 20x forgery of a ~65 us call, rounds less their own
    nulls 152, 82, 58, 31 and 40 us a call, the later nulls ~1.5 ms above the first: its second
    best, 40 us, passed under its 43 us bound; less the smallest null, 56 us). An honest round
    charged too little share is over its call's time by the nulls' spread over the round's calls
    (~25 us a call at 64), well inside the bound's 2x + 31 us."""
    raw = [r / k for r, n in rounds if n is None]
    least = min((n for _, n in rounds if n is not None), default=None)
    paired = sorted((r - least) / k for r, n in rounds if n is not None) if least is not None else []
    return min(raw + ([paired[need - 1]] if len(paired) >= need else [math.inf]))


def round_load(reference_round_ms: Optional[float], least_null_ms: Optional[float], k: int, reference_ms: float,
               allowance_ms: float) -> float:
    """CPU: how much slower the machine was at a round's moment than when the claims were measured:
    the reference's CPU time per call on the round's inputs right after it (less the least null)
    over its latency measured earlier plus the bound's per-call allowance (its own residual share:
    a ~25 us reference reads at most ~1.2x that on the idle VM, so an idle machine widens nothing),
    from 1 to LOAD_MAX; 1 where it was not measured."""
    if reference_round_ms is None or least_null_ms is None or not reference_ms > 0:
        return 1.0
    per_call = max(0.0, reference_round_ms - least_null_ms) / k
    return min(LOAD_MAX, max(1.0, per_call / (reference_ms + allowance_ms)))


def witnessed_per_call(round_ms: List[float], k: int, null_per_call: Optional[float]) -> float:
    """The time per call the rounds witnessed: the fastest round per call, minus the fastest
    null call's share once one is known. On a CPU in the cgroup's CPU time (less affected by load
    on the machine; read once the runner's threads are off the CPU, `_exchange`), on a GPU in
    wall time. The fastest, not a later one: a kernel whose cost depends on its inputs (the
    example's fp8 MoE) is judged by its cheaper draws. Without the null the harness's share is
    still in: a round within the bound so passes, and the null could only lower it."""
    return min(round_ms) / k - (null_per_call if null_per_call is not None else 0.0)


def merge_errors(errors: Dict[str, float], verdict: Dict[str, Any]) -> None:
    """Raise `errors` (max abs, max rel) to the figures a reference runner's check reported."""
    for key in ("max_abs", "max_rel"):
        v = verdict.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v):
            errors[key] = max(errors.get(key, 0.0), float(v))


def _own_errors(result: Dict[str, Any], errors: Dict[str, float]) -> None:
    """The trace's error figures: the larger of the runner's and the witness's. The runner's come
    from the solution's process (a solution can write them down to 0); the witness's were measured
    in the reference runner on its own calls, so a figure can be raised there, never lowered."""
    corr = result.get("correctness")
    if not isinstance(corr, dict):
        return
    extra = result.setdefault("extra", {})
    extra["runner_correctness"] = {k: corr.get(k) for k in ("max_abs", "max_rel")}
    for key, v in errors.items():
        mine = corr.get(key)
        ok = isinstance(mine, (int, float)) and not isinstance(mine, bool) and not math.isnan(mine)
        corr[key] = max(float(mine), v) if ok else v


class Pending:
    """A message sent to a runner whose sealed answer is read later (`collect`), so that the
    runner works while the supervisor does something else (the solution's evaluation, the other
    runner's capture)."""

    def __init__(self, handle: Any, msg: Dict[str, Any], timeout: float) -> None:
        from ..protocol import send_msg

        self.handle, self.timeout, self.nonce = handle, timeout, os.urandom(8).hex()
        self.result: Optional[Dict[str, Any]] = None
        self.why = ""
        self.sent = False
        try:
            send_msg(handle.sock, {**msg, "nonce": self.nonce})
            self.sent = True
        except OSError as e:
            self.why = f"{type(e).__name__}: {e}"
        self._pending = self.sent

    def collect(self) -> Optional[Dict[str, Any]]:
        """The answer (None, with `why`, if there is none); read once: the channel is clear again."""
        from ..protocol import RUNNER_MAX_MESSAGE, ConnectionClosed, recv_msg

        if self._pending:
            self._pending = False
            try:
                self.result, self.why = _accept(self.handle, self.nonce, recv_msg(self.handle.sock, timeout=self.timeout, limit=RUNNER_MAX_MESSAGE))
            except TimeoutError:
                self.why = "timeout"
                out_of_step(self.handle)
            except (ConnectionClosed, BrokenPipeError, ConnectionResetError, OSError, ValueError) as e:
                self.why = f"{type(e).__name__}: {e}"
                out_of_step(self.handle)
        return self.result


class _Prestaged(Pending):
    """The first round's inputs, asked of the reference runner before the solution's evaluation
    and made (with the reference's outputs on them) while it runs: the seed is drawn here and
    goes only to the reference runner, so nothing the solution's process can reach knows these
    inputs before the witness hands them over."""

    def __init__(self, rr: Any, msg: Dict[str, Any], seed: int, folder: "_Folder", timeout: float) -> None:
        super().__init__(rr, msg, timeout)
        self.seed, self.folder = seed, folder


def prestage(sup: Any, r: Any, request: Dict[str, Any], device: str, timeout: float) -> None:
    """Before runner `r` evaluates `request`: ask the reference runner for the witness's first
    round (inputs from a fresh seed, the reference's outputs on them) without waiting, so that it
    is made while the solution is evaluated, off the witness's path (`verify` takes it; `settle`
    drops it when no witness follows). Nothing when the witness will not run."""
    settle(sup)
    cfg = request.get("config") or {}
    if not enabled() or not _switched_on("FIB_WITNESS_PRESTAGE") or not (cfg.get("fresh_runner_per_solution", True) and cfg.get("profile_baseline", True)):
        return
    if device != "cpu" and graph_enabled():
        return  # the device-time round judges first; the coarse round, if it must, makes its own inputs
    rr = sup.reference_runner()
    if rr is None:
        return
    limit = _round_bytes(device, [r, rr])
    # at least the round of a claim that gets K_CALLS calls (a solution 8x faster than the
    # reference or less, whose round would otherwise find too few sets here and make its own,
    # the reference's outputs on them included, on the witness's path)
    predicted = _k_for(request, _prestage_claim(request, device), device, limit)
    k = max(predicted, _k_for(request, None, device, limit))
    if k < 1:
        return
    try:
        folder = _Folder(rr)
    except OSError:
        return  # the round makes its inputs itself (and says why not, if it cannot either)
    seed = int.from_bytes(os.urandom(8), "big") >> 2
    pre = _Prestaged(rr, {"type": "witness_inputs", "request": _ref_request(request), "seed": seed, "k": k,
                          "ahead": _answers_ahead(request, predicted, k), "chain": chains(device, k),
                          "folder": folder.name}, seed, folder, timeout)
    if not pre.sent:
        folder.remove()
        return
    sup._witness_prestaged = pre


def _answers_ahead(request: Dict[str, Any], predicted: int, k: int) -> int:
    """How many of a prestaged round's first sets get their answers (the reference's outputs, a
    check's `expected`) made ahead: those the predicted round takes, and more (up to k) as long as
    the reference's calls fit in half the solution's sampling budget, which the evaluation they
    run beside lasts at least: a slow reference's answers could otherwise outlast it and be
    waited for on the witness's path."""
    ref_ms = (request.get("reference_stats") or {}).get("center_ms")
    budget_ms = 500.0 * float((request.get("config") or {}).get("max_time_s") or 0.5)
    fit = int(budget_ms // ref_ms) if isinstance(ref_ms, (int, float)) and ref_ms > 0 else 0
    return max(1, predicted, min(k, fit))


def _prestage_claim(request: Dict[str, Any], device: str) -> Optional[float]:
    """The claim a prestaged round is made for before the solution claims anything: on a CPU the
    reference's latency over PRESTAGE_SPEEDUP (a cheap call's round has many calls, `_k_for`; a
    faster claim than this makes its own inputs; a round of more than CHECKED_CPU calls has the
    reference run at the check, for the checked calls only); elsewhere None (K_CALLS)."""
    ref = request.get("reference_stats") or {}
    lat = ref.get("center_ms")
    if device != "cpu" or not isinstance(lat, (int, float)) or not lat > 0:
        return None
    return max(float(lat) / PRESTAGE_SPEEDUP, ROUND_MS_CHEAP / max(K_CALLS, K_CALLS_CHEAP))


def settle(sup: Any) -> None:
    """Drop a prestaged round no witness took (the evaluation did not pass), after reading its
    answer: the reference runner's next exchange must not find it in the channel. Called before
    that next exchange (the next prestage, the next reference timing), so the failed evaluation's
    trace never waits for it."""
    pre = sup.__dict__.pop("_witness_prestaged", None)
    if pre is not None:
        pre.collect()
        pre.folder.remove()


def _checked_places(k: int, device: str) -> List[int]:
    """The calls of a round the reference runner checks: all of them, or on a CPU CHECKED_CPU of
    a longer round drawn at random once its calls have returned (checking is most of a cheap
    call's witness: 28 ms of 62 RMSNorm calls of 4096 x 4096 on the 2-core VM), as many as the
    GPU's device-time round checks. A solution skipping the work in half of the calls is caught
    with probability 1 - 2**-CHECKED_CPU (> 99.6%), and one wrong on a few inputs is the runner's
    trials' to find."""
    if device != "cpu" or k <= CHECKED_CPU:
        return list(range(k))
    return sorted(random.SystemRandom().sample(range(k), CHECKED_CPU))


class _Abort(Exception):
    """The witness cannot go on: (flag or 'failed', why)."""

    def __init__(self, kind: str, why: str) -> None:
        super().__init__(why)
        self.kind, self.why = kind, why


class _Witness:
    """One verification: the rounds, the null call, the numbers they gave (see `verify`)."""

    def __init__(self, sup: Any, r: Any, rr: Any, request: Dict[str, Any], k: int, cpu: bool, timeout: float,
                 max_bytes: int, device: str) -> None:
        self.sup, self.r, self.rr, self.k, self.cpu, self.timeout, self.max_bytes = sup, r, rr, k, cpu, timeout, max_bytes
        self.device = device
        # FIB_WITNESS_STEPPED=on: CPU rounds of many calls (cheap claims, where one batch of a round's
        # calls costs far less than its calls one by one) hand the inputs over call by call
        # (`_Steps`); a round of few costly calls keeps one hand-over (stepping it cost the fp8 MoE
        # 26 -> 518 ms a job). Off by default: its steps' noise in the null's subtraction let the
        # 20x forgery of a cheap call pass once in 4 runs of tests/security (session 19)
        self.stepped = cpu and device == "cpu" and k >= PAIRED_PASSES_MIN_CALLS and \
            os.environ.get("FIB_WITNESS_STEPPED", "off").strip().lower() == "on"
        self.chained = chains(device, k)  # see `_chained`
        self.request = request
        self.ref_request = _ref_request(request)
        self.out_bytes = outputs_extent(request, k)  # what a round's outputs file takes (CPU: made before it)
        # the most bytes a stepped round's calls may say they wrote (the supervisor copies them out)
        self.out_limit = min(max_bytes, 2 * self.out_bytes + (1 << 20)) if self.out_bytes else max_bytes
        self.costs: List[Tuple[float, float]] = []  # (wall ms, CPU ms) of each round's k calls
        self.nulls: List[Tuple[float, float]] = []
        self.round_nulls: List[Optional[float]] = []  # CPU: the fastest null measured right after each round
        # CPU, cheap rounds: the reference's CPU ms for a round of the same inputs, measured right
        # after the round's null where the round was over the bound (`_reference_after`)
        self.round_refs: List[Optional[float]] = []
        self.bad: List[str] = []
        self.checked = 0  # calls whose outputs the reference runner checked
        self.errors: Dict[str, float] = {}  # the reference runner's error figures over the rounds' calls
        self.parts: Dict[str, float] = {}  # wall ms of the witness's own steps
        self.runner_parts: Dict[str, Any] = {}  # the runners' own breakdown of their last round (diagnosis only)
        self._null_ready = False
        self._reference_ready = False
        self.prestaged = False  # the first round's inputs were made during the evaluation

    def _timed(self, part: str, handle: Any, msg: Dict[str, Any], **kw: Any) -> Tuple[Optional[Dict[str, Any]], Tuple[float, float], str]:
        t = time.perf_counter()
        try:
            return _exchange(handle, msg, self.timeout, **kw)
        finally:
            self.parts[part] = self.parts.get(part, 0.0) + (time.perf_counter() - t) * 1e3

    def _part(self, part: str, fn: Any, *args: Any, **kw: Any) -> Any:
        """`fn(*args, **kw)`, its wall ms added to `parts[part]` (the supervisor's own steps)."""
        t = time.perf_counter()
        try:
            return fn(*args, **kw)
        finally:
            self.parts[part] = self.parts.get(part, 0.0) + (time.perf_counter() - t) * 1e3

    def _take(self, pre: "_Prestaged") -> Tuple[Optional["_Folder"], int, Optional[Dict[str, Any]]]:
        """The prestaged first round's folder, seed and inputs for this round's `k` calls (its
        first `k` sets), or Nones where it cannot serve (its folder then removed)."""
        t = time.perf_counter()
        pre.collect()
        self.parts["inputs"] = (time.perf_counter() - t) * 1e3  # waiting for it, if at all
        res = pre.result
        rows = res.get("inputs") if isinstance(res, dict) and res.get("status") == "OK" else None
        if pre.handle is not self.rr or not isinstance(rows, list) or len(rows) < self.k:
            pre.folder.remove()
            return None, 0, None
        rows = rows[: self.k]
        try:
            if len(res["inputs"]) > self.k:  # a CPU claim that asks for fewer calls: the null maps these only
                pre.folder.truncate("inputs.bin", _extent(rows))
        except OSError:
            pre.folder.remove()
            return None, 0, None
        self.prestaged = True
        return pre.folder, pre.seed, {**res, "inputs": rows}

    def round(self, with_null: Any, pre: Optional["_Prestaged"] = None, with_reference: Optional[Any] = None) -> None:
        """k calls of the solution on fresh inputs, timed from outside; their outputs checked in
        the reference runner; then the null call on the same inputs if `with_null()` says so, and
        the reference on them if `with_reference()` then says so (`_reference_after`).
        `pre`: the inputs the reference runner made (and ran the reference on) during the
        evaluation, used where they serve."""
        fr, seed, made = self._take(pre) if pre is not None else (None, 0, None)
        if fr is None:
            seed = int.from_bytes(os.urandom(8), "big") >> 2
            try:
                fr = _Folder(self.rr)
            except OSError as e:  # the reference runner's scratch: the harness's side
                raise _Abort("unwitnessed", f"no scratch folder for the witness in the reference runner ({e})") from e
        try:
            fs = _Folder(self.r)
        except OSError as e:
            # the solution's own scratch refused it (filled to its quota, say): giving up with
            # "not witnessed" would let a solution choose not to be checked
            fr.remove()
            raise _Abort("failed", f"the solution's scratch refused the witness's folder ({e})") from e
        folders = [fr, fs]
        try:
            if made is None:
                made, _, why = self._timed("inputs", self.rr, {"type": "witness_inputs", "request": self.ref_request,
                                                               "seed": seed, "k": self.k, "folder": fr.name,
                                                               "chain": self.chained})
                if made is None and getattr(self.rr, "out_of_step", False):
                    # it did not answer in time, or out of turn, while this solution's runner ran:
                    # the claim stands unverified, so it does not stand (a runner that starves the
                    # reference runner must not get `unwitnessed`, which is not suspect)
                    raise _Abort("failed", f"the reference runner did not answer the witness's inputs ({why})")
                if made is None or made.get("status") != "OK":
                    raise _Abort("unwitnessed", f"the reference runner could not make witness inputs ({why or made})")
            # the CPU time from before the inputs exist in its scratch until its outputs are out of it
            steps: List[_Steps] = []  # a stepped round's hand-over (CPU, FIB_WITNESS_STEPPED=on), once made
            out_fd = self._part("hand_in", fs.make_room, "outputs.bin", min(self.out_bytes, self.max_bytes),
                                keep=self.stepped) if self.cpu else -1
            if self.stepped:
                hand_in = lambda: steps.append(fr.stepped_to(fs, made["inputs"], self.max_bytes, out_fd, self.out_limit))  # noqa: E731
                # the reference runner checks the bytes committed as each call returned
                hand_out = lambda: self._part("hand_out", steps[0].write_committed, fr, "outputs.bin")  # noqa: E731
            else:
                hand_in = lambda: self._part("hand_in", fr.copy_to, fs, made["inputs"], self.max_bytes,  # noqa: E731
                                             share=self.device != "cpu")
                hand_out = lambda: self._part("hand_out", fs.copy_file, "outputs.bin", fr, self.max_bytes)  # noqa: E731
            try:
                res, ms, why = self._timed(
                    "calls", self.r, {"type": "witness", "inputs": made["inputs"], "folder": fs.name, "stepped": self.stepped,
                                      "chain": self.chained},
                    cpu=self.cpu, before_send=hand_in,
                    during=(lambda: steps[0].run(self.r, self.timeout)) if self.stepped else None, after_reply=hand_out)
            finally:
                for st in steps:
                    st.close()
                if out_fd >= 0 and not steps:  # the steps were never made: theirs to close otherwise
                    os.close(out_fd)
            calls = res.get("calls") if isinstance(res, dict) else None
            if res is None or res.get("status") != "OK" or not isinstance(calls, list) or len(calls) != self.k:
                raise _Abort("failed", (why or res.get("message")) if isinstance(res, dict) else why)
            self.costs.append(ms)
            self.round_nulls.append(None)
            self.round_refs.append(None)
            self.runner_parts["solution"] = res.get("parts_ms")
            if not all(isinstance(row, list) for row in calls):  # the solution's runner's description
                self.bad.append("outputs not readable: not a list of outputs per call")
                return
            n_out = len((self.request.get("definition") or {}).get("outputs") or {})
            short = [i for i, row in enumerate(calls) if len(row) != n_out]
            if short:  # a call described with fewer outputs is checked on none (`chain_empty_rows`)
                self.bad.append(f"outputs not readable: call(s) {short[:5]} describe other than the definition's "
                                f"{n_out} output(s)")
                return
            names = {str(e.get("file")) for row in calls for e in row if isinstance(e, dict) and "file" in e}
            if res.get("late_error") or not names <= {"outputs.bin"}:
                self.bad.append(f"outputs not readable: {res.get('late_error') or sorted(names)}")
                return
            late = steps[0].misplaced(calls) if steps else []
            if late:
                self.bad.append(f"outputs not those committed as the calls returned: call(s) {late[:5]} described "
                                f"outside the bytes their runner said they had written when they returned")
                return
            picked = _checked_places(self.k, self.device)  # drawn now: after the calls returned
            self.checked += len(picked)
            verdict, _, why = self._timed("check", self.rr, {"type": "witness_check", "request": self.ref_request,
                                                             "seed": seed, "calls": [calls[i] for i in picked],
                                                             "places": picked, "folder": fr.name,
                                                             # what a chained call's inputs were moved by
                                                             "previous": [calls[i - 1] if i > 0 else None for i in picked]
                                                             if self.chained else None})
            if verdict is None or verdict.get("status") != "OK":
                # what it checks is the solution's (its outputs and their description): a check
                # that fails leaves the claim unverified, never trusted (`witness_check_overflow`)
                raise _Abort("failed", f"the reference runner could not check the witness outputs ({why or verdict})")
            self.bad += list(verdict.get("bad") or [])
            self.runner_parts["check"] = verdict.get("ms")
            merge_errors(self.errors, verdict)
            if not self.bad and with_null():
                self._null(fr, made["inputs"])
                if with_reference is not None and with_reference():
                    self._reference_after(fr, made["inputs"])
        finally:
            for f in folders:
                f.remove()

    def calibrate(self, reference_ms: float) -> Optional[float]:
        """CPU ms per call of the definition's reference in the reference runner now: a round of
        k calls on fresh inputs (the rounds' shape), timed as the rounds are, the least null of
        the rounds subtracted; None where it cannot be measured. The solution's runner is stopped
        meanwhile: nothing it left running can slow the yardstick that widens its bound."""
        paired = [n for n in self.round_nulls if n is not None]
        if not paired:
            return None
        if not self._prepare("calibration", "reference"):
            return None
        try:
            fr = _Folder(self.rr)
        except OSError:
            return None
        best: Optional[float] = None
        try:
            made, _, _ = self._timed("calibration", self.rr, {
                "type": "witness_inputs", "request": self.ref_request, "seed": int.from_bytes(os.urandom(8), "big") >> 2,
                "k": self.k, "folder": fr.name, "chain": self.chained})
            if made is None or made.get("status") != "OK":
                return None
            with supervise.held(self.r.proc.pid):
                for _ in range(2 if self.k * reference_ms <= CALIBRATION_TWICE_MS else 1):
                    # as the nulls subtracted were timed (the rounds' steps too where stepped)
                    res, ms = self._reference_round("calibration", fr, made["inputs"])
                    if res is None:
                        return None
                    best = ms[1] if best is None else min(best, ms[1])
        except OSError:
            return None
        finally:
            fr.remove()
        return None if best is None else max(0.0, best - min(paired)) / self.k

    def _null(self, fr: "_Folder", inputs: List[List[Dict[str, Any]]]) -> None:
        """The harness's share: the same request to the reference runner with a null call (the
        zero outputs, no call) on the same inputs file."""
        self._prepare("null", "null")
        # repeated on a CPU (its CPU time) and paired with this round; on a GPU one (wall time; not
        # re-measured on the H100); the solution's runner stopped meanwhile (nothing it left running
        # can slow the null, which is subtracted from its own time)
        with supervise.held(self.r.proc.pid):
            self._null_calls(fr, inputs)

    def _reference_round(self, part: str, fr: "_Folder", inputs: List[List[Dict[str, Any]]]) -> Tuple[Optional[Dict[str, Any]], Tuple[float, float]]:
        """The reference runner's prepared witness call (the null, or the reference for a
        calibration) on the inputs of `fr`, timed as the solution's round is: its outputs file
        made before, a stepped round's steps taken (their cost is the harness's share)."""
        fr.unlink("outputs.bin")  # the solution's (already checked) or the last call's
        if self.cpu:
            self._part(part, fr.make_room, "outputs.bin", min(self.out_bytes, self.max_bytes))
        steps = _Steps(-1, -1, inputs, -1, self.out_limit)
        res, ms, _ = self._timed(part, self.rr, {"type": "witness", "inputs": inputs, "folder": fr.name,
                                                 "stepped": self.stepped, "chain": self.chained}, cpu=self.cpu,
                                 during=(lambda: steps.run(self.rr, self.timeout, copy=False)) if self.stepped else None)
        return (res if res is not None and res.get("status") == "OK" else None), ms

    def _prepare(self, part: str, mode: str) -> bool:
        """The reference runner's witness set to call `mode` ("null" or "reference"), unless it
        already is: the null and the reference take turns after a cheap round over the bound."""
        if (self._null_ready if mode == "null" else self._reference_ready):
            return True
        prep, _, _ = self._timed(part, self.rr, {"type": "witness_prepare", "request": self.ref_request, "mode": mode})
        ok = prep is not None and prep.get("status") == "OK"
        self._null_ready, self._reference_ready = ok and mode == "null", ok and mode == "reference"
        return ok

    def _reference_after(self, fr: "_Folder", inputs: List[List[Dict[str, Any]]]) -> None:
        """The definition's reference on the round's own inputs in the reference runner, right
        after the round's null, timed as the null is (`round_refs`): how slow the machine is at
        this round's moment. CI's load comes and goes within a test; one calibration after the
        rounds read an unloaded moment (load 1.00) while all 8 rounds of an honest call were
        slowed (session 22). The solution's runner is stopped meanwhile."""
        if not self._prepare("calibration", "reference"):
            return
        with supervise.held(self.r.proc.pid):
            res, ms = self._reference_round("calibration", fr, inputs)
        if res is not None:
            self.round_refs[-1] = ms[1]

    def _null_calls(self, fr: "_Folder", inputs: List[List[Dict[str, Any]]]) -> None:
        for _ in range((NULL_CALLS if self.device == "cpu" else 1) if self._null_ready else 0):
            nres, nms = self._reference_round("null", fr, inputs)
            if nres is None:
                break
            self.runner_parts["null"] = nres.get("parts_ms")
            self.nulls.append(nms)
            if self.cpu:
                last = self.round_nulls[-1]
                self.round_nulls[-1] = nms[1] if last is None else min(last, nms[1])


def verify(sup: Any, r: Any, request: Dict[str, Any], result: Dict[str, Any], device: str, timeout: float) -> None:
    """The coarse rounds (see the module docstring) on a PASSED `result` of runner `r`; changes
    `result` in place when it does not stand. `sup` is the worker's Supervisor (its reference
    runner). On a GPU witness_graph.judge calls this only where its device-time round cannot
    judge."""
    if result.get("status") != "PASSED" or not enabled():
        return
    t_start = time.perf_counter()
    cfg = request.get("config") or {}
    if not (cfg.get("fresh_runner_per_solution", True) and cfg.get("profile_baseline", True)):
        return _flag(result, "unwitnessed", "no reference runner in this configuration: not witnessed", False)
    rr = sup.reference_runner()
    if rr is None:
        return _flag(result, "unwitnessed", "the reference runner could not be started: not witnessed", False)
    extra = result.setdefault("extra", {})
    lat = (result.get("performance") or {}).get("latency_ms")
    host = extra.get("host_ms") if device != "cpu" else None
    if isinstance(host, (int, float)) and math.isfinite(host):
        host = min(host, HOST_ALLOWANCE_MS_GPU)  # the runner's number: a launch's worth, no more
    claims = [x for x in (lat, host) if isinstance(x, (int, float)) and math.isfinite(x)]
    claim = max(claims) if claims else None
    max_bytes = _round_bytes(device, [r, rr])
    k = _k_for(request, claim, device, max_bytes)
    if k < 1:
        return _flag(result, "unwitnessed", f"one call's inputs and outputs are over the witness's {max_bytes >> 20} MiB "
                     f"a round: not witnessed", False)
    cpu = device == "cpu" and _usage_file(r) is not None and _usage_file(rr) is not None
    slack, abs_ms = (SLACK, cpu_allowance_ms(k)) if device == "cpu" else (SLACK_GPU, ABS_MS_GPU)
    clock = 1 if cpu else 0
    w = _Witness(sup, r, rr, request, k, cpu, timeout, max_bytes, device)
    null_key = null_cache_key(w.ref_request, k, cpu)
    # a CPU round's null is measured beside it (paired_per_call); a GPU's is kept for NULL_TTL_S
    cached_null = cached_null_of(sup, null_key) if not cpu else None

    def par() -> float:
        # the parallelism the solution showed in its rounds (CPU time over wall time: a solution
        # that spreads a call over threads spends more CPU time than its latency): the least of
        # its rounds, at most the CPUs there are. The largest let one round's CPU time after its
        # reply (counted until the reading settles; the wall time stops at the reply) widen the
        # bound of every round: `parallelism_inflate` burnt 8 ms after the first round's reply,
        # showed 2.0-2.4, and a 3.5x forged claim PASSED in 3 of 3 runs
        ratios = [c[1] / c[0] for c in w.costs if c[0] > 0]
        return min(max(1.0, min(ratios, default=1.0)), float(os.cpu_count() or 1)) if cpu else 1.0

    load = [1.0]  # the machine's slowdown since the claims were measured (CPU, `_Witness.calibrate`)
    reference_ms = (result.get("performance") or {}).get("reference_latency_ms")  # the reference runner's (own_reference)
    if not (isinstance(reference_ms, (int, float)) and math.isfinite(reference_ms) and reference_ms > 0):
        reference_ms = None
    # CPU, a cheap call's rounds: the reference runs right after each round over the unwidened
    # bound (`_Witness._reference_after`, `round_load`) and the least load it read widens the bound
    # (`least_round_load`); fewer calls a round: one calibration at the end
    per_round_load = cpu and k >= PAIRED_PASSES_MIN_CALLS and reference_ms is not None

    def bound(widened: bool = True) -> float:
        if claim is None:
            return math.inf
        n = null_per_call() if device != "cpu" else None
        return slack * claim * par() * (load[0] if widened else 1.0) + abs_ms + (SHARE_NOISE_GPU * n if n is not None else 0.0)

    def least_null() -> Optional[float]:
        """CPU: the least null measured beside a round, charged to every round (`paired_per_call`)."""
        return min((n for n in w.round_nulls if n is not None), default=None)

    def null_per_call() -> Optional[float]:
        if cpu:
            least = least_null()
            return least / k if least is not None else None
        nulls = [cached_null] if cached_null is not None else w.nulls
        return min(n[clock] for n in nulls) / k if nulls else None

    # CPU: two rounds less their nulls must pass where a round has many calls (an average over
    # many input draws, so the second fastest is as fair to a kernel whose cost depends on its
    # inputs as the fastest); with few, the fastest (fp8 MoE: fast on ~23% of draws, one of 8
    # rounds of 1-8 calls has ~88% odds of one, two only ~58%)
    need = PAIRED_PASSES if cpu and k >= PAIRED_PASSES_MIN_CALLS else 1

    def rounds() -> List[Tuple[float, Optional[float]]]:
        """CPU: each round's time with the null measured beside it (None: none was)."""
        return [(c[clock], n) for c, n in zip(w.costs, w.round_nulls)]

    def round_loads() -> List[Optional[float]]:
        """The machine's slowdown the reference read after each round (None: not run after it)."""
        least = least_null()
        return [None if x is None else round_load(x, least, k, reference_ms, abs_ms) for x in w.round_refs]

    def least_round_load() -> float:
        """The machine's slowdown the reference read after the rounds over the bound: the least of
        its readings (1 where it read none). One reference round is one draw of the machine's
        noise, and a forger's rounds over the bound get a draw each: two reference rounds in a row
        read 1.56x and 1.66x on the idle VM and `rewrite_stats_cheap` (a 20x forgery) PASSED at 17x
        with each round divided by the reading after it (session 22). A load that lasts, as CI's did
        through all 8 rounds, is in every reading."""
        return min((f for f in round_loads() if f is not None), default=1.0)

    def last_round_over() -> bool:
        """The round just measured, less the least null, is over the bound (`with_reference`)."""
        c, n = rounds()[-1]
        return n is not None and (c - least_null()) / k > bound(widened=False)

    def estimate(final: bool = False) -> float:
        if cpu:
            est = paired_per_call(rounds(), k, need)
            if final and math.isinf(est) and w.costs:  # rounds ran out before `need` (FIB_WITNESS_ROUNDS, a failed null)
                est = paired_per_call(rounds(), k, 1)
            return est
        return witnessed_per_call([c[clock] for c in w.costs], k, null_per_call())

    pre = sup.__dict__.pop("_witness_prestaged", None)
    try:
        # fewer calls a round, more rounds: the fastest round counts, and a call's cost can
        # depend on its inputs (the example's fp8 MoE at one token returns at once when no local
        # expert is routed to, ~half of fresh inputs, and takes 250x longer otherwise)
        # a round within the bound ends it; one above it is never the last while rounds remain
        # (the first rounds on a GPU ran 1.5-2x the later ones on the H200: page cache, allocator)
        for i in range(MAX_ROUNDS if k > 1 else max(MAX_ROUNDS, MAX_ROUNDS_ONE_CALL)):
            # the null call (cheap: the same inputs file) only where the raw time does not pass
            w.round(with_null=lambda: cached_null is None and estimate() > bound(), pre=pre if i == 0 else None,
                    with_reference=last_round_over if per_round_load else None)
            if per_round_load:
                load[0] = least_round_load()
            if w.bad or estimate() <= bound():
                break
            paired = [x for x in rounds() if x[1] is not None] if cpu else []
            if need > 1 and len(paired) >= CLEAR_AFTER and paired_per_call(paired, k) > CLEAR_FACTOR * bound():
                # every round so far far over the bound: more rounds would only cost. Not with few
                # calls a round, where the fastest round counts: a kernel whose cost depends on its
                # inputs needs its draws there (the fp8 MoE: fast on ~23% of them; three rounds
                # disputed it honest in 46% of evaluations whose claim came out low, eight in 12%)
                break
    except _Abort as e:
        if e.kind == "failed":
            _set_status(result, "RUNTIME_ERROR", f"witness_failed: the supervisor's witness calls of the solution did "
                        f"not complete ({e.why}); the result is not trusted", "witness_failed")
            result["healthy"] = False
            result["unhealthy_reason"] = "the witness calls failed"
            return
        return _flag(result, e.kind, e.why, False)
    if w.nulls and cached_null is None and not cpu:
        keep_null(sup, null_key, (min(n[0] for n in w.nulls), min(n[1] for n in w.nulls)))
    reference_now: Optional[float] = None
    # only where a round has few calls (a cheap call's rounds were each compared with the reference
    # as they ran, `per_round_load`)
    if cpu and not per_round_load and not w.bad and w.costs and claim is not None and estimate(final=True) > bound() and \
            reference_ms is not None:
        reference_now = w.calibrate(float(reference_ms))
        if reference_now is not None:
            # less the bound's own allowance for a call's residual share: with a cheap reference
            # that residual alone read as a slowdown (a 17 us reference witnessed at ~50 us a call
            # widened a 10 ms call's bound 3x on the idle VM)
            load[0] = min(LOAD_MAX, max(1.0, (reference_now - abs_ms) / reference_ms))
    null = null_per_call() if w.costs else None
    est = estimate(final=True) if w.costs else None
    extra["witness"] = {"calls": len(w.costs) * k, "k": k, "checked": w.checked, "clock": "cgroup_cpu" if cpu else "wall",
                        "round_ms": [[round(x, 4) for x in c] for c in w.costs],
                        "null_ms": round(null * k, 4) if null is not None else None,
                        "null_samples_ms": [[round(x, 4) for x in n] for n in w.nulls],
                        "round_null_ms": [None if n is None else round(n, 4) for n in w.round_nulls] if cpu else None,
                        "est_ms": None if est is None else round(est, 5), "bound_ms": round(bound(), 5),
                        "parallelism": round(par(), 2), "prestaged": w.prestaged,
                        "load": round(load[0], 3),
                        "round_load": [None if f is None else round(f, 3) for f in round_loads()] if per_round_load else None,
                        "round_reference_ms": [None if x is None else round(x, 4) for x in w.round_refs] if per_round_load else None,
                        "reference_now_ms": None if reference_now is None else round(reference_now, 5),
                        "bad_calls": len(w.bad), "errors": {k: float(f"{v:.6g}") for k, v in w.errors.items()},
                        "parts_ms": {p: round(v, 1) for p, v in w.parts.items()},
                        "runner_parts_ms": w.runner_parts,
                        "seconds": round(time.perf_counter() - t_start, 3)}
    if w.errors:
        _own_errors(result, w.errors)
    if w.bad:
        what = (f"{len(w.bad)} of {w.checked} calls the supervisor made on inputs drawn after the evaluation (of "
                f"{len(w.costs) * k}), checked in the reference runner, were wrong" if w.checked else
                f"the outputs of the {len(w.costs) * k} calls the supervisor made on inputs drawn after the evaluation "
                f"could not be read")
        _set_status(result, "INCORRECT_NUMERICAL", (
            f"witness_wrong: {what} (the runner's own checks had passed: they are not trusted): "
            + "; ".join(str(b) for b in w.bad[:3])), "witness_wrong")
        result["correctness"] = result.get("correctness") or {"max_abs": math.inf, "max_rel": math.inf}
        return
    if est is None or claim is None:
        return
    if est <= bound():
        return
    if null is not None and null > max(RESOLUTION * claim, UNRESOLVED_MS):
        # the harness's own share of a call (mapping the inputs, saving the outputs) dwarfs the
        # claimed call: its noise alone exceeds the slack, so the rounds cannot judge the claim
        return _flag(result, "witness_unresolved", (
            f"witness timing not judged: the harness's share of a call ({null * 1e3:.0f} us, handing over this "
            f"workload's inputs and outputs) is over {RESOLUTION:g}x the claimed latency ({claim * 1e3:.1f} us)"), False)
    if null is None:
        return _flag(result, "witness_unresolved", "witness timing not judged: the harness's share of a call (the "
                     "null call in the reference runner) could not be measured", False)
    slowed = (f"; the reference ran at {reference_now * 1e3:.1f} us a call beside it against its "
              f"{float(reference_ms) * 1e3:.1f} us, the bound widened {load[0]:.2f}x") if reference_now is not None else ""
    if per_round_load and any(x is not None for x in w.round_refs):
        slowed = (f"; the reference, run after each of {sum(x is not None for x in w.round_refs)} rounds over the "
                  f"bound, read the machine at least {load[0]:.2f}x slower than at the claim: the bound widened "
                  f"{load[0]:.2f}x")
    msg = (f"timing_disputed: the supervisor measured {len(w.costs) * k} calls of the solution from outside its "
           f"process at {est * 1e3:.1f} us each ({'CPU time of its cgroup' if cpu else 'wall time'}, the "
           f"harness's share subtracted), the runner claimed {lat * 1e3:.2f} us: more than {slack:g}x + "
           f"{abs_ms * 1e3:.0f} us apart{slowed}, the runner's measurement was tampered with")
    if device != "cpu" and gpu_dispute_flags_only():
        return _flag(result, "timing_disputed", msg)
    _set_status(result, "RUNTIME_ERROR", msg, "timing_disputed")
