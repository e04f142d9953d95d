"""One (solution, workload) evaluation, inside the runner process.

Order: load the reference and the solution -> correctness on `num_trials` seeds (outputs poisoned,
inputs compared with a pristine copy afterwards, the reference run on clones) -> time the
reference (cached per workload) and the solution with the same protocol (`timing.py`), the
solution's timed inputs refreshed in place before every call and a random share of its timed
outputs re-checked against a reference computed on that very input -> an audit for work that
outlives the call (CUDA) -> roofline -> tamper checks. Returns a plain dict of measurements; the
supervisor turns it into a Trace.
"""
from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import random
import threading
import time
import traceback
import types
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..data import Definition, ShapeError, Workload
from ..data.charge import DATASET_ERROR, ENVIRONMENT_ERROR, says_out_of_memory
from ..data.op_types import family_settings
from . import timing
from .checks import CheckSpecError, make_checker
from .config import EvalConfig
from .correctness import (  # compare and mismatch_count stay bound here: the guard watches them (patch_harness)
    TrialSummary,
    compare,
    mismatch_count,
    check_structure,
    normalize_outputs,
    tolerance_for,
)
from .environment import DeviceEnvironment, now_iso
from .inputs import (
    InputError,
    SafetensorsCache,
    allocate_outputs,
    axis_values,
    clone_inputs,
    derive_seed,
    make_generator,
    make_inputs,
    poison_,
    InputRefresher,
    random_input_mask,
    same_bytes,
    tensor_bytes,
)
from .loader import load_runnable
from .roofline import load_or_measure_peaks, roofline
from .speedup import reusable_reference, speedup_noise

HARNESS_VERSION = "fib-bench-2"
# Flags that make a trace suspect (the others are information).
SUSPECT_FLAGS = {
    "below_roofline_floor", "background_work", "background_threads", "timer_patched", "l2_persistence_set",
    "below_launch_floor",
}
NO_FASTER_THAN_REFERENCE = 1.05
HOST_BOUND_MIN_MS = 0.2
HOST_BOUND_RATIO = 20.0
# a reference's timing is reused for this long by later solutions of the same workload
REF_TIMING_TTL_S = 600.0
# share of timed calls whose outputs are re-checked against the reference (besides the forced ones)
TIMED_CHECK_SHARE = 0.1


_urandom = os.urandom  # bound at import: the re-check draws do not go through a patched os.urandom


def _fresh_uniform() -> float:
    """A uniform draw in [0, 1) from the OS, unpredictable from inside the process."""
    return int.from_bytes(_urandom(7), "big") / float(1 << 56)


class EvalFailure(Exception):
    """Ends an evaluation with a non-PASSED status."""

    def __init__(self, status: str, message: str, correctness: Optional[Dict[str, Any]] = None, flags: Sequence[str] = ()):
        super().__init__(message)
        self.status = status
        self.message = message
        self.correctness = correctness
        self.flags = list(flags)


def _tb() -> str:
    return traceback.format_exc(limit=20)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        timing._cuda_sync()


def native_threads() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return threading.active_count()


def _is_out_of_memory(e: BaseException) -> bool:
    return isinstance(e, torch.OutOfMemoryError) or says_out_of_memory(str(e))


class BytesLRU:
    """Least-recently-used cache bounded by the bytes of the tensors it holds."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._d: "OrderedDict[Any, Tuple[Any, int]]" = OrderedDict()
        self._bytes = 0

    def get(self, key: Any) -> Any:
        if key in self._d:
            self._d.move_to_end(key)
            return self._d[key][0]
        return None

    def put(self, key: Any, value: Any, nbytes: int) -> None:
        if key in self._d:
            self._bytes -= self._d.pop(key)[1]
        self._d[key] = (value, nbytes)
        self._bytes += nbytes
        while self._bytes > self.max_bytes and len(self._d) > 1:
            _, (_, b) = self._d.popitem(last=False)
            self._bytes -= b

    def clear(self) -> None:
        self._d.clear()
        self._bytes = 0


def _backend_flags() -> Dict[str, Any]:
    return {
        "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_tf32": torch.backends.cudnn.allow_tf32,
        "fp16_reduced": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "bf16_reduced": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    }


def _set_backend_flags(f: Dict[str, Any]) -> None:
    torch.backends.cuda.matmul.allow_tf32 = f["matmul_tf32"]
    torch.backends.cudnn.allow_tf32 = f["cudnn_tf32"]
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = f["fp16_reduced"]
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = f["bf16_reduced"]


class RunnerState:
    """What a runner keeps between evaluations: device, caches, the sampler, the peaks."""

    def __init__(self, device: torch.device, physical_index: Optional[int], cache_dir: Path) -> None:
        self.device = device
        self.cuda = device.type == "cuda"
        if self.cuda:
            torch.cuda.set_device(device)
            torch.cuda.init()
            torch.ones(1, device=device).sum().item()
        else:
            # one intra-op thread: CPU timings of small ops are dominated by thread hand-offs, and
            # wildly so on a shared machine (FIB_CPU_THREADS overrides)
            torch.set_num_threads(max(1, int(os.environ.get("FIB_CPU_THREADS", "1"))))
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        self.backend_flags = _backend_flags()
        self.env = DeviceEnvironment(device, physical_index)
        self.sampler: Any = timing.CudaSampler(device) if self.cuda else timing.HostSampler()
        try:
            self.peaks: Optional[Dict[str, Any]] = load_or_measure_peaks(device, self.env.static["hardware"], cache_dir)
        except (RuntimeError, OSError, ValueError) as e:  # e.g. too little free memory at start
            self.peaks = None
            self.env.static["peaks_error"] = f"{type(e).__name__}: {e}"
        self.runnables: Dict[str, Any] = {}
        self.references: Dict[str, Callable[..., Any]] = {}
        if self.cuda:
            total = torch.cuda.get_device_properties(device).total_memory
            self.sets = BytesLRU(min(4 << 30, total // 10))
        else:
            self.sets = BytesLRU(512 << 20)
        self.ref_timing: Dict[str, Dict[str, Any]] = {}
        self.st_cache = SafetensorsCache()
        self.event_overhead_ms: Optional[float] = None
        self.calibration: Dict[str, Any] = {}
        if self.cuda:
            self.calibration = timing.calibrate_overhead(self.sampler, device)
            self.event_overhead_ms = self.calibration["overhead_ms"]

    def release_memory(self, drop_inputs: bool = False) -> None:
        """Hand cached GPU memory back to the device after an evaluation: runners of other
        solutions share the GPU (a parked runner once held 45 GiB of its caching allocator and made
        the next solution's reference run out of memory). `drop_inputs` also drops the cached
        input sets (a runner being parked)."""
        if drop_inputs:
            self.sets.clear()
        if self.cuda:
            torch.cuda.empty_cache()

    # ------------------------------------------------------------------ loading
    def reference(self, definition: Definition) -> Callable[..., Any]:
        key = hashlib.sha256(definition.reference.encode()).hexdigest()
        fn = self.references.get(key)
        if fn is None:
            mod = types.ModuleType(f"fib_reference_{key[:12]}")
            try:
                code = compile(definition.reference, f"<reference of {definition.name}>", "exec")
                exec(code, mod.__dict__)  # noqa: S102 - the definition's reference is dataset code we run by design
            except BaseException as e:  # noqa: BLE001 - any failure of the reference's import is reported
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise EvalFailure(
                    "RUNTIME_ERROR", f"{DATASET_ERROR}the reference of {definition.name} failed to load:\n{_tb()}",
                    flags=["dataset_error"],
                ) from e
            fn = mod.__dict__.get("run")
            if not callable(fn):
                raise EvalFailure(
                    "RUNTIME_ERROR", f"{DATASET_ERROR}the reference of {definition.name} defines no run()", flags=["dataset_error"]
                )
            self.references[key] = fn
        return fn

    def runnable(self, build: Dict[str, Any], definition: Definition) -> Any:
        key = f"{build.get('hash')}:{build.get('artifact_dir')}"
        r = self.runnables.get(key)
        if r is None:
            r = load_runnable(build, definition)
            self.runnables[key] = r
        return r

    def health(self) -> Tuple[bool, str]:
        """Can this process still measure? (CUDA errors are sticky; leaked memory starves later runs.)"""
        try:
            if self.cuda:
                timing._cuda_sync()
                x = torch.ones(1 << 16, device=self.device)
                if float(x.sum()) != float(1 << 16):
                    return False, "a trivial kernel gave a wrong sum"
                del x
                gc.collect()
                free, total = torch.cuda.mem_get_info(self.device)
                if free < 0.25 * total:
                    torch.cuda.empty_cache()
                    free, total = torch.cuda.mem_get_info(self.device)
                    if free < 0.25 * total:
                        return False, f"only {free / 2**30:.1f} of {total / 2**30:.1f} GiB of GPU memory free"
            else:
                float(torch.ones(16).sum())
        except RuntimeError as e:  # CUDA errors surface as RuntimeError subclasses
            return False, f"health check failed: {e}"
        return True, ""


def _as_tensor(x: Any, device: torch.device) -> Any:
    if isinstance(x, (int, float, bool)) and not isinstance(x, torch.Tensor):
        return torch.tensor(x, device=device)
    return x


class _NoOutputs:
    """Stands in for a runnable where only the reference is timed (no outputs to allocate)."""

    dps = False


_NO_OUTPUTS = _NoOutputs()


@dataclass
class _Set:
    inputs: List[Any]
    outputs: List[torch.Tensor]


class EvalRun:
    """One evaluation. `run()` returns the measurement dict."""

    def __init__(self, state: RunnerState, req: Dict[str, Any]) -> None:
        self.state = state
        self.device = state.device
        self.definition = Definition.model_validate(req["definition"])
        self.workload = Workload.model_validate(req["workload"])
        self.cfg = EvalConfig.model_validate(req["config"])
        self.build = req.get("build") or {}
        # the reference's timing, measured by the worker's reference runner (where no solution
        # ever ran) and handed in by the supervisor; None: time it here
        self.given_reference = req.get("reference_stats")
        self.seed = int(req["seed"])
        # the timed inputs' contents and order: a secret of this evaluation (recorded in the trace
        # afterwards to reproduce it), so a solution cannot regenerate them from the config's seed
        self.timing_seed = int.from_bytes(_urandom(8), "big") >> 2
        self.dataset_root = Path(req["dataset_root"]) if req.get("dataset_root") else None
        self.flags: List[str] = []
        self.extra: Dict[str, Any] = {}
        self.notes: List[str] = []
        self.phases: Dict[str, float] = {}
        self._phase_mark = 0.0
        self.n_out = len(self.definition.outputs)
        self.out_names = list(self.definition.outputs)
        # what the definition's family declares (data/op_types.py) under the config's overrides
        fam = family_settings(self.definition, self.cfg.inputs, self.cfg.check, self.cfg.tolerance)
        self.specs: Dict[str, Dict[str, Any]] = fam["inputs"]
        self.check_spec = fam["check"]
        self.tols = {
            n: tolerance_for(self.definition, n, self.cfg.rtol, self.cfg.atol, fam["tolerance"]) for n in self.out_names
        }
        self.corr: Optional[Dict[str, Any]] = None
        self._key: Optional[str] = None

    # ------------------------------------------------------------------ helpers
    def _wl_key(self) -> str:
        """Identity of (definition, workload) for the caches."""
        if self._key is None:
            w = json.dumps(self.workload.model_dump(mode="json"), sort_keys=True)
            self._key = hashlib.sha256((self.definition.model_dump_json() + w).encode()).hexdigest()
        return self._key

    def _call_reference(self, ref: Callable[..., Any], inputs: Sequence[Any], clone: bool = True) -> List[Any]:
        """The reference's outputs on `inputs` (on a copy of them unless `clone` is False: the
        caller's own copy that nothing reads afterwards)."""
        _set_backend_flags(self.state.backend_flags)
        try:
            res = ref(*(clone_inputs(inputs) if clone else inputs))
        except BaseException as e:  # noqa: BLE001 - record whatever the reference raised
            if isinstance(e, KeyboardInterrupt):
                raise
            if _is_out_of_memory(e):
                raise EvalFailure(
                    "RUNTIME_ERROR", f"{ENVIRONMENT_ERROR}the definition's reference needs more device memory than "
                    f"{self.device} has free for this workload:\n{_tb()}", flags=["environment_error"],
                ) from e
            raise EvalFailure(
                "RUNTIME_ERROR", f"{DATASET_ERROR}the definition's reference raised on this workload:\n{_tb()}",
                flags=["dataset_error"],
            ) from e
        outs, prob = normalize_outputs(res, self.out_names)
        if prob is not None:
            raise EvalFailure(
                "RUNTIME_ERROR", f"{DATASET_ERROR}the definition's reference is inconsistent with its outputs: {prob.message}",
                flags=["dataset_error"],
            )
        return [_as_tensor(o, self.device) for o in outs]

    def _trial_set(self, ref: Callable[..., Any], index: int) -> Tuple[List[Any], List[Any], float]:
        seed_i = derive_seed(self.seed, self.workload.uuid, index)
        key = (self._wl_key(), seed_i, str(self.device))
        hit = self.state.sets.get(key)
        if hit is not None:
            return hit
        try:
            pristine = make_inputs(
                self.definition, self.workload, seed_i, self.device, self.dataset_root, self.state.st_cache, self.specs
            )
        except (InputError, ShapeError) as e:
            raise EvalFailure(
                "RUNTIME_ERROR", f"{DATASET_ERROR}cannot make the workload's inputs: {e}",
                flags=["dataset_error"],
            ) from e
        self._check_constraints(pristine, index)
        _sync(self.device)
        t0 = timing._perf_counter()
        ref_out = self._call_reference(ref, pristine)
        _sync(self.device)
        ref_wall_ms = (timing._perf_counter() - t0) * 1e3
        val = (pristine, ref_out, ref_wall_ms)
        self.state.sets.put(key, val, tensor_bytes(pristine) + tensor_bytes(ref_out))
        return val

    def _bind_axes(self) -> None:
        """The workload's axis values and output shapes (a ShapeError when they do not fit)."""
        self.axes = axis_values(self.definition, self.workload)
        self.out_shapes = self.definition.output_shapes_by_name(
            {k: v for k, v in self.axes.items() if k in self.definition.var_axes}
        )

    def _refresher(self, sets: List["_Set"]) -> InputRefresher:
        """New content for the random inputs of the timed calls, from this evaluation's secret seed."""
        mask = random_input_mask(self.definition, self.workload, self.specs)
        if not any(mask):
            self.notes.append("no random tensor input: timed inputs rotate addresses but not content")
        return InputRefresher(
            sets[0].inputs, mask, make_generator(derive_seed(self.timing_seed, self.workload.uuid, 10_001), self.device),
            random.Random(derive_seed(self.timing_seed, self.workload.uuid, 10_003)),
        )

    def _record_check(self, result: Any) -> None:
        """Which check ran and its figures, in the trace (the worst over trials for numbers that
        are minima/maxima is kept by the checker's own naming: last write wins per key)."""
        rec = self.extra.setdefault("check", {"kind": result.kind})
        rec.update(result.numbers)

    def _check_constraints(self, inputs: Sequence[Any], index: int) -> None:
        """The definition's constraints on the actual inputs (those reading tensor values could
        not all be checked before the run)."""
        if not self.definition.constraints:
            return
        report = self.definition.constraint_report(self.axes, dict(zip(self.definition.inputs, inputs)))
        if report.failed:
            raise EvalFailure(
                "RUNTIME_ERROR",
                f"{DATASET_ERROR}the inputs of input set {index} violate the definition's "
                "constraints: " + "; ".join(f"constraints[{f.index}]: {f.message}" for f in report.failed),
                flags=["dataset_error"],
            )

    def _poison_allocator(self) -> None:
        """Make the allocator's next same-size blocks hold NaN, so an unwritten returned tensor fails."""
        tmp = allocate_outputs(self.definition, self.axes, self.device)
        for t in tmp:
            poison_(t)
        del tmp

    def _call_solution(self, runnable: Any, args: Sequence[Any], outs: Sequence[torch.Tensor]) -> List[Any]:
        """Call in the solution's native convention (no adapter copies inside the timed window)."""
        if runnable.dps:
            runnable(*args, *outs)
            return list(outs)
        res = runnable(*args)
        items, prob = normalize_outputs(res, self.out_names)
        if prob is not None:
            raise EvalFailure(prob.status, prob.message)
        return [_as_tensor(o, self.device) if not isinstance(o, torch.Tensor) else o for o in items]

    # ------------------------------------------------------------------ phases
    def _correctness(self, runnable: Any, ref: Callable[..., Any]) -> Tuple[TrialSummary, float]:
        summary = TrialSummary()
        ref_wall = []
        for i in range(self.cfg.num_trials):
            pristine, ref_out, ref_ms = self._trial_set(ref, i)
            ref_wall.append(ref_ms)
            args = clone_inputs(pristine)
            outs: List[torch.Tensor] = []
            if runnable.dps:
                outs = allocate_outputs(self.definition, self.axes, self.device)
                for o in outs:
                    poison_(o)
            else:
                self._poison_allocator()
            _sync(self.device)
            try:
                outputs = self._call_solution(runnable, args, outs)
                _sync(self.device)
            except EvalFailure:
                raise
            except BaseException as e:  # noqa: BLE001 - untrusted code: record whatever it raised
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise EvalFailure("RUNTIME_ERROR", f"the solution raised (trial {i}):\n{_tb()}") from e
            prob = check_structure(outputs, self.definition, self.out_shapes, self.device)
            if prob is not None:
                raise EvalFailure(prob.status, f"trial {i}: {prob.message}")
            mutated = [
                n for n, a, p in zip(self.definition.inputs, args, pristine)
                if isinstance(p, torch.Tensor) and not same_bytes(a, p)
            ]
            result = self.checker.check_trial(
                [_as_tensor(o, self.device) for o in outputs], ref_out, pristine, self.tols
            )
            for c in result.checks:
                summary.add(c)
            self._record_check(result)
            corr = {"max_abs": summary.max_abs, "max_rel": summary.max_rel}
            if mutated:
                raise EvalFailure(
                    "INCORRECT_NUMERICAL",
                    f"trial {i}: the solution modified its input(s) {mutated}; inputs must be left unchanged",
                    corr, ["inputs_mutated"],
                )
            if not result.ok:
                raise EvalFailure("INCORRECT_NUMERICAL", f"trial {i}: {result.reason}", corr)
        if hasattr(self.checker, "statistical"):
            pristine, _, _ = self._trial_set(ref, 0)

            def sample(tiled: List[Any]) -> torch.Tensor:
                tiled_axes = self.definition.bind_axes({
                    n: (tuple(x.shape) if isinstance(x, torch.Tensor) else None) for n, x in zip(self.definition.inputs, tiled)
                })
                outs = allocate_outputs(self.definition, tiled_axes, self.device) if runnable.dps else []
                res = self._call_solution(runnable, clone_inputs(tiled), outs)
                _sync(self.device)
                return res[self.checker.output_index]

            try:
                result = self.checker.statistical(sample, pristine)
            except EvalFailure:
                raise
            except BaseException as e:  # noqa: BLE001 - untrusted code runs inside
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise EvalFailure("RUNTIME_ERROR", f"the solution raised during the statistical check:\n{_tb()}") from e
            self._record_check(result)
            if not result.ok:
                raise EvalFailure("INCORRECT_NUMERICAL", result.reason, {"max_abs": summary.max_abs, "max_rel": summary.max_rel})
        if summary.low_signal:
            self.flags.append("low_signal_reference")
            self.notes.append(f"reference output(s) {summary.low_signal} are below 10*atol everywhere")
        self.extra["rel_l2_error"] = summary.rel_l2
        return summary, min(ref_wall) if ref_wall else math.nan

    def _timing_sets(self, runnable: Any, ref: Callable[..., Any]) -> List[_Set]:
        base, _, _ = self._trial_set(ref, 0)
        per_set = tensor_bytes(base) + (
            sum(o.numel() * o.element_size() for o in allocate_outputs(self.definition, self.axes, torch.device("meta")))
            if runnable.dps else 0
        )
        if self.state.cuda:
            free, _ = torch.cuda.mem_get_info(self.device)
            budget = free // 4
        else:
            budget = 256 << 20
        n = max(2, min(self.cfg.input_sets, budget // max(per_set, 1)))
        if n < self.cfg.input_sets:
            self.notes.append(f"{n} timing input sets instead of {self.cfg.input_sets} (memory)")
        sets = []
        for _ in range(n):
            outs = allocate_outputs(self.definition, self.axes, self.device) if runnable.dps else []
            sets.append(_Set(clone_inputs(base), outs))
        self.extra["input_sets"] = n
        return sets

    def _time_reference(self, ref: Callable[..., Any], sets: List[_Set], refresh: InputRefresher) -> Dict[str, Any]:
        key = f"{self._wl_key()}:{self.seed}:{self.device}:{self.cfg.timing_key()}"
        if self.given_reference:
            return {**self.given_reference, "source": "reference_runner"}
        hit = self.state.ref_timing.get(key)
        if hit is not None and time.monotonic() - hit["at"] < REF_TIMING_TTL_S:
            return {**hit["stats"], "cached": True}
        rng = random.Random(derive_seed(self.timing_seed, self.workload.uuid, 10_002))
        counter = [0]

        def prepare() -> Sequence[Any]:
            s = sets[counter[0] % len(sets)]
            counter[0] += 1
            refresh(s.inputs, rng)
            return s.inputs

        def call(*args: Any) -> Any:
            _set_backend_flags(self.state.backend_flags)
            return ref(*args)

        if self.state.cuda:
            self.state.sampler.reset_gate()
        stats = self._measure(call, prepare, None, budget_share=0.5).to_dict()
        if reusable_reference(stats):
            self.state.ref_timing[key] = {"at": time.monotonic(), "stats": stats}
        return {**stats, "cached": False}

    def _measure(
        self, fn: Callable[..., Any], prepare: Callable[[], Sequence[Any]], after: Any, budget_share: float = 1.0
    ) -> timing.TimingStats:
        c = self.cfg
        return timing.measure(
            self.state.sampler, fn, prepare, after,
            warmup_runs=c.warmup_runs, warmup_min_s=c.warmup_min_s, warmup_max_s=c.warmup_max_s,
            iterations=c.iterations, max_time_s=c.max_time_s * budget_share, max_samples=c.max_samples,
            target_rel_ci=c.target_rel_ci, hard_limit_s=max(10.0, 0.8 * c.timeout_s),
        )

    def _time_solution(
        self, runnable: Any, ref: Callable[..., Any], sets: List[_Set], refresh: InputRefresher
    ) -> Tuple[timing.TimingStats, Dict[str, Any]]:
        rng = random.Random(derive_seed(self.timing_seed, self.workload.uuid, 20_002))
        do_check = self.cfg.check_timed_outputs
        # Which timed calls are re-checked is decided after each call returned, from fresh OS
        # randomness: while a call runs nothing in this process says whether it will be checked
        # (issue 15). Every call until 3 were checked, then half of them until 8 were (outputs cached
        # by address are stale from the second pass over the buffers on), then a share.
        counter = [0]
        pending: Dict[str, Any] = {}
        dev = self.device
        acc = {"bad": torch.zeros((), dtype=torch.int64, device=dev), "mut": torch.zeros((), dtype=torch.int64, device=dev)}
        n_checked = [0]
        clean = clone_inputs(sets[0].inputs)  # the inputs no refresh touches (structured, scalars)

        def prepare() -> Sequence[Any]:
            i = counter[0]
            counter[0] += 1
            s = sets[i % len(sets)]
            offsets = refresh(s.inputs, rng)
            pending.clear()
            pending["set"] = s
            pending["offsets"] = offsets
            for o in s.outputs:
                poison_(o)
            return list(s.inputs) + list(s.outputs)

        def call(*args: Any) -> Any:
            return self._call_solution(runnable, args[: len(self.definition.inputs)], args[len(self.definition.inputs):])

        def after(outputs: Any) -> None:
            if not do_check or "set" not in pending:
                return
            p = 1.0 if n_checked[0] < 3 else 0.5 if n_checked[0] < 8 else TIMED_CHECK_SHARE
            if _fresh_uniform() >= p:
                return
            s: _Set = pending["set"]
            offsets = pending["offsets"]
            pending["pristine"] = [
                refresh.window(j, offsets[j], x) if j in offsets else clean[j] for j, x in enumerate(s.inputs)
            ]
            # the reference of a checked call is computed only now that the call has returned: while
            # the solution ran, the expected answer to these inputs existed nowhere in this process
            # (a solution that scrapes it from memory finds nothing to copy; issue 9)
            if self.checker.compares_to_reference:
                pending["ref"] = self._call_reference(ref, pending["pristine"])
            n_checked[0] += 1
            bad = acc["bad"]
            structured = all(
                isinstance(o, torch.Tensor)
                and tuple(o.shape) == tuple(self.out_shapes[n] or ())
                and o.dtype == self.definition.outputs[n].dtype.to_torch()
                for n, o in zip(self.out_names, outputs)
            )
            if structured:
                bad += self.checker.timed_bad(outputs, pending.get("ref"), pending["pristine"], self.tols)
            else:
                bad += 1
            for a, p in zip(s.inputs, pending["pristine"]):
                if isinstance(p, torch.Tensor):
                    acc["mut"] += (
                        a.reshape(-1).view(torch.uint8) != p.reshape(-1).view(torch.uint8)
                    ).any().to(torch.int64)

        if self.state.cuda:
            self.state.sampler.reset_gate()
            self.state.sampler.l2.zero_limit()
        stats = self._measure(call, prepare, after)
        _sync(self.device)
        info = {"checked": n_checked[0], "bad": int(acc["bad"]), "mutated": int(acc["mut"]), "p_check": TIMED_CHECK_SHARE}
        if self.state.cuda:
            lim = self.state.sampler.l2.limit()
            if lim:
                self.flags.append("l2_persistence_set")
                self.notes.append(f"the solution set a persisting-L2 limit of {lim} bytes")
                self.state.sampler.l2.zero_limit()
        return stats, info

    def _audit(self, runnable: Any, ref: Callable[..., Any], sol_ms: float) -> None:
        """Work that outlives the call: outputs incomplete when our stream is done, lag, threads.

        Pass 1 snapshots the outputs in stream order right after the call: if they differ from the
        reference, the call returned (and its stream finished) before its work was done. Pass 2
        (CUDA) times a device-wide synchronize right after the call's stream finished against one
        on an idle device: a difference means work on another stream that the window missed.
        """
        pristine, ref_out, _ = self._trial_set(ref, 0)
        cuda = self.state.cuda
        threads_before = {t.ident for t in threading.enumerate()}
        native_before = native_threads()

        def fresh() -> Tuple[List[Any], List[torch.Tensor]]:
            args = clone_inputs(pristine)
            outs = allocate_outputs(self.definition, self.axes, self.device) if runnable.dps else []
            for o in outs:
                poison_(o)
            _sync(self.device)
            return args, outs

        incomplete = 0
        for _ in range(3):
            args, outs = fresh()
            outputs = self._call_solution(runnable, args, outs)
            if cuda and torch.cuda.current_stream(self.device) != self.state.sampler.stream:
                torch.cuda.set_stream(self.state.sampler.stream)
            snap = [o.clone() if isinstance(o, torch.Tensor) else o for o in outputs]
            _sync(self.device)
            if all(isinstance(o, torch.Tensor) for o in snap) and int(self.checker.timed_bad(snap, ref_out, pristine, self.tols)) > 0:
                incomplete += 1
        new_threads = [t for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
        if incomplete:
            raise EvalFailure(
                "INCORRECT_NUMERICAL",
                f"in {incomplete} of 3 audit calls the outputs were not complete when the call's stream "
                f"finished: the solution returns before its work is done (side stream, thread or lazy work)",
                None, ["background_work"],
            )
        if cuda:
            lags: List[float] = []
            idle: List[float] = []
            end = timing._Event()
            for _ in range(3):
                args, outs = fresh()
                self._call_solution(runnable, args, outs)
                timing._record(end, self.state.sampler.stream)
                timing._ev_sync(end)
                t0 = timing._perf_counter()
                timing._cuda_sync()
                lags.append((timing._perf_counter() - t0) * 1e3)
                t0 = timing._perf_counter()
                timing._cuda_sync()
                idle.append((timing._perf_counter() - t0) * 1e3)
            lag = sorted(lags)[1] - sorted(idle)[1]
            self.extra["post_call_lag_ms"] = lag
            if lag > max(0.05, 0.5 * sol_ms):
                self.flags.append("background_work")
                self.notes.append(
                    f"the device stayed busy {lag * 1e3:.1f} us after the call's stream finished "
                    f"(solution median {sol_ms * 1e3:.1f} us): work on another stream is not in the timed window"
                )
        new_threads += [
            t for t in threading.enumerate()
            if t.ident not in threads_before and t.is_alive() and t not in new_threads
        ]
        if new_threads:
            self.flags.append("background_threads")
            self.notes.append(f"the call left {len(new_threads)} new Python thread(s) running: {[t.name for t in new_threads]}")
        grown = native_threads() - native_before
        if grown > 0:
            self.notes.append(f"native thread count grew by {grown} during the audit calls")
            self.extra["native_threads_grown"] = grown

    # ------------------------------------------------------------------ main
    def _phase(self, name: str) -> None:
        """Wall seconds of each phase, in the trace: where an evaluation's time goes."""
        now = timing._perf_counter()
        self.phases[name] = round(now - self._phase_mark, 4)
        self._phase_mark = now

    def run(self) -> Dict[str, Any]:
        state = self.state
        result: Dict[str, Any] = {"healthy": True}
        env: Dict[str, Any] = {"start_time": now_iso(), "clocks_start": state.env.clocks(), "seed": self.seed}
        t_begin = self._phase_mark = timing._perf_counter()
        status, message, corr, perf = "PASSED", "", None, None
        _set_backend_flags(state.backend_flags)
        try:
            try:
                self._bind_axes()
            except ShapeError as e:
                raise EvalFailure("RUNTIME_ERROR", f"the workload does not fit the definition: {e}") from e
            try:
                self.checker = make_checker(self.check_spec, self.definition)
            except CheckSpecError as e:
                raise EvalFailure("RUNTIME_ERROR", f"configuration error (not the solution's): {e}", flags=["config_error"]) from e
            ref = state.reference(self.definition)
            try:
                runnable = state.runnable(self.build, self.definition)
                self._phase("load")
            except BaseException as e:  # noqa: BLE001 - importing untrusted code
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise EvalFailure("RUNTIME_ERROR", f"the solution failed to load:\n{_tb()}") from e
            summary, _ = self._correctness(runnable, ref)
            self._phase("correctness")
            corr = {"max_abs": summary.max_abs, "max_rel": summary.max_rel}
            self.corr = corr
            sets = self._timing_sets(runnable, ref)
            refresh = self._refresher(sets)
            self._phase("timing_setup")
            ref_stats: Optional[Dict[str, Any]] = None
            if self.cfg.profile_baseline:
                ref_stats = self._time_reference(ref, sets, refresh)
                self._phase("reference_timing")
            try:
                stats, chk = self._time_solution(runnable, ref, sets, refresh)
                self._phase("timing")
            except EvalFailure:
                raise
            except BaseException as e:  # noqa: BLE001 - untrusted code
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise EvalFailure("RUNTIME_ERROR", f"the solution raised while being timed:\n{_tb()}") from e
            del sets
            self.extra.update(checked_timed_calls=chk["checked"], timed_check_rate=chk["p_check"], timing_seed=self.timing_seed)
            if self.cfg.check_timed_outputs and chk["checked"] == 0:
                raise EvalFailure(
                    "INCORRECT_NUMERICAL",
                    "none of the timed calls was re-checked (the first 3 always are): the re-check was "
                    "disarmed, so the timed outputs are unverified",
                    corr, ["recheck_disarmed"],
                )
            if chk["mutated"]:
                raise EvalFailure(
                    "INCORRECT_NUMERICAL",
                    f"the solution modified its inputs in {chk['mutated']} of {chk['checked']} checked timed calls",
                    corr, ["inputs_mutated"],
                )
            if chk["bad"]:
                raise EvalFailure(
                    "INCORRECT_NUMERICAL",
                    f"{chk['bad']} wrong output elements in the {chk['checked']} re-checked timed calls: the timed "
                    f"calls returned stale or wrong answers (e.g. outputs cached by input address or fingerprint)",
                    corr, ["stale_output"],
                )
            try:
                self._audit(runnable, ref, stats.center_ms)
            except EvalFailure:
                raise
            except BaseException as e:  # noqa: BLE001 - untrusted code
                if isinstance(e, KeyboardInterrupt):
                    raise
                raise EvalFailure("RUNTIME_ERROR", f"the solution raised during the audit calls:\n{_tb()}") from e
            self._phase("audit")
            lat = stats.center_ms
            ref_lat = ref_stats["center_ms"] if ref_stats else 0.0
            speedup = ref_lat / lat if (ref_stats and lat > 0) else 0.0
            perf = {"latency_ms": lat, "reference_latency_ms": ref_lat, "speedup_factor": speedup}
            self._timing_extra(stats, ref_stats)
            rf = roofline(self.definition, self.axes, lat, state.peaks, apply_floor=state.cuda)
            self.flags += rf.pop("flags")
            self.extra.update(rf)
            if state.cuda and lat <= 0:
                self.flags.append("below_roofline_floor")
                self.notes.append("no measurable device time inside the timed window")
            if state.cuda and stats.host_ms > max(HOST_BOUND_MIN_MS, HOST_BOUND_RATIO * max(lat, 0.0)):
                # the gate hides host work; a call whose host side dwarfs its device time may be
                # doing real work on the CPU that the device latency does not show
                self.flags.append("host_bound")
                self.notes.append(f"host time per call {stats.host_ms * 1e3:.0f} us vs device {lat * 1e3:.1f} us")
            if ref_stats and speedup <= NO_FASTER_THAN_REFERENCE:
                self.flags.append("no_faster_than_reference")
            noise = speedup_noise(stats.rel_ci, ref_stats)
            if ref_stats and noise is not None:
                self.extra["speedup_noise"] = noise
                if abs(speedup - 1.0) <= noise:
                    # the two latencies cannot be told apart: say so instead of a bare 1.0Nx (issue 17)
                    self.flags.append("speedup_within_noise")
                    self.notes.append(f"speedup {speedup:.3f}x is inside the combined measurement noise (+-{noise * 100:.1f}%)")
        except EvalFailure as f:
            status, message = f.status, f.message
            corr = None
            if status == "INCORRECT_NUMERICAL":
                corr = f.correctness or self.corr or {"max_abs": math.inf, "max_rel": math.inf}
            perf = None
            self.flags += [x for x in f.flags if x not in self.flags]
        patched = timing.tampered()
        if patched:
            self.flags.append("timer_patched")
            self.notes.append(f"the solution replaced {patched}; the originals were used and are restored")
            timing.restore_timing_functions()
            result["healthy"] = False
            result["unhealthy_reason"] = f"timing functions replaced: {patched}"
        if _backend_flags() != state.backend_flags:
            self.notes.append("the solution changed torch backend precision flags; restored")
            _set_backend_flags(state.backend_flags)
        if "background_work" in self.flags or "background_threads" in self.flags:
            # something of the solution may still be running in this process
            result["healthy"] = False
            result["unhealthy_reason"] = "the solution left work running after its call"
        if status != "PASSED" or patched:
            ok, why = state.health()
            if not ok:
                result["healthy"] = False
                result["unhealthy_reason"] = why
        self.flags = list(dict.fromkeys(self.flags))
        self.extra.update(
            seed=self.seed, num_trials=self.cfg.num_trials, flags=self.flags,
            suspect=any(f in SUSPECT_FLAGS for f in self.flags), harness_version=HARNESS_VERSION,
            rtol=max(t[1] for t in self.tols.values()) if self.tols else None,
            atol=max(t[0] for t in self.tols.values()) if self.tols else None,
            tolerances={n: {"atol": a, "rtol": r} for n, (a, r) in self.tols.items()},
            runner_seconds=timing._perf_counter() - t_begin, phase_s=self.phases,
        )
        if self.notes:
            self.extra["notes"] = self.notes
        env.update(end_time=now_iso(), clocks_end=state.env.clocks())
        result.update(status=status, message=message, correctness=corr, performance=perf, extra=self.extra, env=env)
        return result

    def reference_only(self) -> Dict[str, Any]:
        """Time only the definition's reference on this workload (the reference runner's job: no
        solution is ever loaded in its process). Returns {"status": "OK", "reference_stats": ...}
        or {"status": <failure>, "message": ...}."""
        try:
            self._bind_axes()
            ref = self.state.reference(self.definition)
            sets = self._timing_sets(_NO_OUTPUTS, ref)
            stats = self._time_reference(ref, sets, self._refresher(sets))
        except EvalFailure as e:
            return {"status": e.status, "message": e.message, "flags": list(e.flags)}
        except ShapeError as e:
            return {"status": "RUNTIME_ERROR", "message": f"{DATASET_ERROR}the workload does not fit the definition: {e}",
                    "flags": ["dataset_error"]}
        return {"status": "OK", "reference_stats": {k: v for k, v in stats.items() if k != "cached"}}

    def _timing_extra(self, stats: timing.TimingStats, ref_stats: Optional[Dict[str, Any]]) -> None:
        e = self.extra
        e.update(
            timer=stats.timer, samples=stats.samples, latency_stat="trimmed_mean_20", latency_ms_median=stats.median_ms,
            latency_ms_p10=stats.p10_ms, latency_ms_p90=stats.p90_ms,
            iqr_ms=stats.iqr_ms, rel_iqr=stats.rel_iqr, rel_ci=stats.rel_ci, noisy=stats.noisy,
            converged=stats.converged, warmup_calls=stats.warmup_calls, host_ms=stats.host_ms,
            latency_ms_mean=stats.mean_ms, latency_ms_min=stats.min_ms, gate_mode=stats.gate_mode,
            gate_misses=stats.gate_misses, timing_wall_s=stats.wall_s,
        )
        if self.state.event_overhead_ms is not None:
            # latency_ms = CUDA-event time - this overhead (see timing.calibrate_overhead)
            e["event_overhead_ms"] = self.state.event_overhead_ms
            e["overhead_source"] = self.state.calibration.get("source")
            e["latency_ms_event"] = stats.center_ms + self.state.event_overhead_ms
        if self.state.cuda:
            e["l2_flush_bytes"] = self.state.sampler.flush_bytes
            if self.state.sampler.flush_note:
                e["l2_flush_note"] = self.state.sampler.flush_note
            if not self.state.sampler.l2.available:
                e["l2_persist_reset"] = self.state.sampler.l2.note or "unavailable"
        if ref_stats:
            e.update(
                reference_iqr_ms=ref_stats["iqr_ms"], reference_samples=ref_stats["samples"],
                reference_latency_ms_median=ref_stats["median_ms"],
                reference_noisy=ref_stats["noisy"], reference_converged=ref_stats.get("converged"),
                reference_rel_ci=ref_stats.get("rel_ci"),
                reference_cached=ref_stats.get("cached", False), reference_source=ref_stats.get("source", "this runner"),
                reference_gate_mode=ref_stats["gate_mode"],
            )
        if stats.noisy:
            self.flags.append("noisy")
