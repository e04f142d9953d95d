"""Which (solution, workload) pairs are not evaluated on this device, and why.

One set of rules for both doors (issue 16): the pipeline's plan and `Benchmark.run_all()` skip
the same pairs with the same reasons instead of recording RUNTIME_ERROR or TIMEOUT traces."""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple

from ..compile.toolchain import missing_toolchain
from ..data import Definition, Solution

GPU_LANGS = {"cuda", "cpp"}
INTERPRETED_LANGS = {"triton", "tilelang"}
# the pipeline's config.yaml `cpu:` limits (tests/bench/test_skips.py keeps the two equal)
DEFAULT_CPU_LIMITS: Dict[str, float] = {
    "max_elements": 8388608, "max_elements_interpreted": 524288, "max_flops": 2.0e9, "max_bytes": 536870912,
}


class SkipRules:
    """The skip rules for the pairs of one run on `device` (the plan's and run_all's): a missing
    toolchain, a CUDA solution on a CPU, a workload above the CPU size limits. Each language's
    toolchain is looked up once and the size check made once per (definition, workload axes,
    interpreted or not): it depends on the solution only through that (a plan of 10k jobs would
    otherwise repeat it per solution)."""

    def __init__(self, device: str, cpu_limits: Optional[Dict[str, float]] = None) -> None:
        self.device = device
        self.limits = DEFAULT_CPU_LIMITS if cpu_limits is None else cpu_limits
        self._missing: Dict[str, Optional[str]] = {}
        self._cpu: Dict[Tuple[str, Tuple[Tuple[str, int], ...], bool], Optional[str]] = {}

    def reason(self, d: Definition, s: Solution, axes: Dict[str, int]) -> Optional[str]:
        """Why `s` is not evaluated on this workload (None: it is)."""
        lang = s.spec.language.value
        if lang not in self._missing:
            self._missing[lang] = missing_toolchain(lang)
        if self._missing[lang]:
            return self._missing[lang]
        if self.device != "cpu":
            return None
        if lang in GPU_LANGS:
            return f"{lang} solution needs a GPU (compiled only)"
        key = (d.name, tuple(sorted(axes.items())), lang in INTERPRETED_LANGS)
        if key not in self._cpu:
            self._cpu[key] = cpu_skip_reason(d, s, axes, self.limits)
        return self._cpu[key]


def cpu_skip_reason(d: Definition, s: Solution, axes: Dict[str, int], limits: Dict[str, float]) -> Optional[str]:
    """Why a workload is too big to evaluate on the CPU (None when it fits).

    Native code: only tensors whose size varies with the workload count (a fixed 4096x4096 weight
    is cheap to make and to read). Interpreted languages (Triton under TRITON_INTERPRET, TileLang)
    get a lower limit and count every tensor: the interpreter's time grows with all the data a
    call touches (a GEMM with a 4096x4096 weight takes ~8 s a call at M=1).
    """
    var = {k: v for k, v in axes.items() if k in d.var_axes}
    try:
        values = d.axis_values(var)
    except ValueError:
        return None
    interpreted = s.spec.language.value in INTERPRETED_LANGS
    n = 0
    for specs in (d.inputs, d.outputs):
        for spec in specs.values():
            if spec.shape and (interpreted or any(a in d.var_axes for a in spec.shape)):
                n = max(n, math.prod(values[a] for a in spec.shape))
    key = "max_elements_interpreted" if interpreted else "max_elements"
    limit = limits.get(key)
    if limit is not None and n > limit:
        return f"{n} elements is above the CPU limit cpu.{key}={int(limit)}"
    limit = limits.get("max_bytes")
    if limit is not None:
        nbytes = d.bytes_moved(var)
        if nbytes > limit:
            return f"{nbytes / 2**20:.0f} MiB of tensors is above the CPU limit cpu.max_bytes={limit / 2**20:.0f} MiB"
    flops = d.flop_count(var)
    estimated = flops is None
    if estimated:
        flops = work_estimate(d, values)
    limit = limits.get("max_flops")
    if flops is not None and limit is not None and flops > limit:
        what = "estimated operations (no `flops` in the definition)" if estimated else "FLOP"
        return f"{flops:.3g} {what} is above the CPU limit cpu.max_flops={limit:.3g}"
    return None


def work_estimate(d: Definition, values: Dict[str, int]) -> float:
    """Operations a definition without a `flops` field likely needs: the largest product of the
    axes two of its tensors span together (a GEMM's A[M,K] and B[N,K] give M*N*K; an elementwise
    op gives its tensor's size). Twice that, as a multiply-add counts two."""
    shapes = [set(s.shape) for s in list(d.inputs.values()) + list(d.outputs.values()) if s.shape]
    best = 0
    for i, a in enumerate(shapes):
        for b in shapes[i:]:
            best = max(best, math.prod(values[x] for x in a | b))
    return 2.0 * best
