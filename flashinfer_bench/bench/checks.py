"""Per-family correctness checks, chosen by a declared setting (`check.kind`), never by a name.

- `elementwise` (default): every output against the reference with `correctness.compare`.
- `matched_ratio` (low-bit fp8/fp4 kernels, like upstream's LowBit evaluator): each output passes
  when at least `required` (default 0.95) of its elements meet |out-ref| <= atol + rtol*|ref|; a
  non-finite mismatch (NaN/inf where the reference is finite, or the other way round) always fails.
- `sampling`: a sampler never agrees elementwise with a reference sampler, so its samples are
  judged against the filtered distribution (top-k, renormalise, top-p, renormalise, min-p; in
  float64). Every trial's samples must lie in the filtered support (with a tie tolerance); then
  `statistical` draws `samples` (default 10000; a slow sampler stops at `budget_s` once it gave
  `min_samples`) samples for each of the first `max_rows` (default 8) rows and runs Pearson's
  chi-square goodness-of-fit test per row (tokens sorted by expected probability, adjacent ones
  merged until every bin expects >= 5 and there are at most ~1000 bins). A row is rejected when
  its p-value is below alpha / rows_tested (Bonferroni), so a correct sampler fails an evaluation
  with probability at most alpha (default 1e-3), up to the chi-square approximation, which the
  bin floor keeps good: at alpha 0.05 a correct sampler failed 14, 15 and 15 of 300 evaluations
  (vocab 1000; top-k/top-p rows, full rows, near-flat full rows).
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from ..data import Definition
from .correctness import OutputCheck, compare, is_exact, mismatch_count

CHECK_KINDS = ("elementwise", "matched_ratio", "sampling")

TIE_REL = 1e-6        # a token this close (relative) to the smallest kept probability is allowed
TIE_P = 1e-5          # a token whose prefix mass is this close to top_p is allowed
MIN_EXPECTED = 5.0    # chi-square bins expect at least this many samples
MAX_BINS = 1000
BATCH_ELEMENTS = 1 << 22  # probability elements per call of the statistical test
_ROW_CHUNK_ELEMENTS = 1 << 24  # float64 elements sorted at a time by the support check
CHI_SQUARE_TEST = "chi-square goodness of fit, Bonferroni over rows"


class CheckSpecError(ValueError):
    """A `check` setting that cannot apply to this definition (the message names the field)."""


@dataclass
class CheckResult:
    ok: bool
    reason: str
    kind: str
    numbers: Dict[str, Any] = field(default_factory=dict)
    checks: List[OutputCheck] = field(default_factory=list)


Tols = Mapping[str, Tuple[float, float]]


class Checker:
    """Judges a trial's outputs; `timed_bad` is the cheap, sync-free variant for timed calls."""

    kind: str = ""
    compares_to_reference: bool = True
    # `timed_bad` of several calls' outputs stacked along a new first dimension is the sum of
    # their counts (true of element-by-element checks): the witness checks a round in one pass
    counts_add_up: bool = False

    def __init__(self, definition: Definition) -> None:
        self.definition = definition
        self.out_names = list(definition.outputs)

    def check_trial(
        self, outputs: Sequence[torch.Tensor], ref_outputs: Sequence[torch.Tensor],
        inputs: Sequence[Any], tols: Tols,
    ) -> CheckResult:
        raise NotImplementedError

    def timed_bad(
        self, outputs: Sequence[torch.Tensor], ref_outputs: Sequence[torch.Tensor],
        inputs: Sequence[Any], tols: Tols,
    ) -> torch.Tensor:
        """`ref_outputs`: the reference's outputs; for a check that does not compare to the
        reference, what `expected(inputs)` made ahead of time, or nothing (made now)."""
        raise NotImplementedError

    def expected(self, inputs: Sequence[Any]) -> Optional[Any]:
        """What a check that does not compare to the reference derives from the inputs alone,
        made before the outputs exist (the witness makes it while the solution runs, off its
        path); None where there is nothing to make ahead."""
        return None


def _zero(outputs: Sequence[Any]) -> torch.Tensor:
    dev = next((o.device for o in outputs if isinstance(o, torch.Tensor)), torch.device("cpu"))
    return torch.zeros((), dtype=torch.int64, device=dev)


class ElementwiseChecker(Checker):
    """Every output within tolerance of the reference (`correctness.compare`)."""

    kind = "elementwise"
    counts_add_up = True

    def check_trial(self, outputs, ref_outputs, inputs, tols) -> CheckResult:
        checks = [compare(n, o, r, *tols[n]) for n, o, r in zip(self.out_names, outputs, ref_outputs)]
        bad = [c for c in checks if not c.ok]
        return CheckResult(not bad, bad[0].reason if bad else "", self.kind, {}, checks)

    def timed_bad(self, outputs, ref_outputs, inputs, tols) -> torch.Tensor:
        total = _zero(outputs)
        for n, o, r in zip(self.out_names, outputs, ref_outputs):
            total = total + mismatch_count(o, r, *tols[n]).to(total.device)
        return total


def _allowed_bad(numel: int, required: float) -> int:
    """Most failing elements an output may have (one rule for the trial and the timed checks)."""
    return numel - math.ceil(required * numel - 1e-9)


def _nonfinite_mismatch(out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Device-side count of elements whose non-finite status or value disagrees with the reference."""
    if is_exact(out.dtype) and is_exact(ref.dtype):
        return torch.zeros((), dtype=torch.int64, device=out.device)
    o, r = out.detach().reshape(-1).float(), ref.detach().reshape(-1).float()
    fo, fr = torch.isfinite(o), torch.isfinite(r)
    same = (o == r) | (torch.isnan(o) & torch.isnan(r))
    return ((fo != fr) | (~fr & ~same)).sum()


class MatchedRatioChecker(Checker):
    """Low-bit kernels: a small share of elements may miss the tolerance, non-finite ones never."""

    kind = "matched_ratio"

    def __init__(self, definition: Definition, required: float) -> None:
        super().__init__(definition)
        self.required = required

    def check_trial(self, outputs, ref_outputs, inputs, tols) -> CheckResult:
        checks: List[OutputCheck] = []
        ratios: Dict[str, float] = {}
        reason = ""
        for n, o, r in zip(self.out_names, outputs, ref_outputs):
            c = compare(n, o, r, *tols[n])
            ratio = 1.0 - c.n_bad / c.numel if c.numel else 1.0
            ratios[n] = ratio
            if c.nonfinite_mismatch:
                ok, why = False, c.reason
            elif c.n_bad > _allowed_bad(c.numel, self.required):
                atol, rtol = tols[n]
                ok, why = False, (
                    f"output {n!r}: matched ratio {ratio:.4f} < required {self.required:g} "
                    f"({c.n_bad} of {c.numel} elements fail |out-ref| > {atol:g} + {rtol:g}*|ref|; "
                    f"max abs error {c.max_abs:.3g})"
                )
            else:
                ok, why = True, ""
            checks.append(dataclasses.replace(c, ok=ok, reason=why))
            reason = reason or why
        numbers = {
            "matched_ratio": min(ratios.values(), default=1.0),
            "matched_ratios": ratios,
            "required": self.required,
        }
        return CheckResult(not reason, reason, self.kind, numbers, checks)

    def timed_bad(self, outputs, ref_outputs, inputs, tols) -> torch.Tensor:
        total = _zero(outputs)
        for n, o, r in zip(self.out_names, outputs, ref_outputs):
            if tuple(o.shape) != tuple(r.shape):
                total = total + 1
                continue
            over = mismatch_count(o, r, *tols[n]).to(total.device) > _allowed_bad(r.numel(), self.required)
            over = over | (_nonfinite_mismatch(o, r).to(total.device) > 0)
            total = total + over.to(torch.int64)
        return total


# ---------------------------------------------------------------------------------- sampling
def _row_values(x: Any, rows: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A per-row parameter (tensor of [rows], 0-d tensor or Python scalar) as a [rows] tensor.
    A Python scalar is filled on the device (a host-to-device copy could synchronise)."""
    if not isinstance(x, torch.Tensor):
        return torch.full((rows,), x, dtype=dtype, device=device)
    t = x.to(device=device, dtype=dtype).reshape(-1)
    return t.expand(rows) if t.numel() == 1 else t


def _filter(
    probs: torch.Tensor, k: Optional[torch.Tensor], p: Optional[torch.Tensor],
    min_p: Optional[torch.Tensor], want_dist: bool,
) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor]]:
    """(normalised probs, smallest allowed probability per row, exact filtered distribution).

    Top-k, renormalise, top-p, renormalise, min-p, in float64 and without host synchronisation.
    Every filter keeps a most-probable prefix of the sorted row, so the tolerant support is the
    set of tokens at least as probable as the last token of the tolerant prefix.
    """
    pn = probs.double()
    pn = pn / pn.sum(-1, keepdim=True)
    vocab = pn.shape[-1]
    sp, order = torch.sort(pn, dim=-1, descending=True)
    rank = torch.arange(vocab, device=pn.device)[None, :]
    first = rank == 0
    keep = torch.ones_like(sp, dtype=torch.bool)
    tol = keep.clone()
    if k is not None:
        kk = k.to(torch.int64)
        kk = torch.where((kk <= 0) | (kk >= vocab), vocab, kk)[:, None]
        keep = rank < kk
        tol = sp >= sp.gather(1, kk - 1) * (1 - TIE_REL)
    if p is not None:
        dk = torch.where(keep, sp, 0.0)
        dk = dk / dk.sum(-1, keepdim=True)
        before = torch.cumsum(dk, -1) - dk
        pp = p.double()[:, None]
        keep = keep & ((before < pp) | (pp >= 1) | first)
        tol = tol & (((before < pp + TIE_P) & (pp > 0)) | (pp >= 1) | first)
    if min_p is not None:
        floor = min_p.double()[:, None] * sp[:, :1]
        keep = keep & ((sp >= floor) | first)
        tol = tol & ((sp >= floor * (1 - TIE_REL)) | first)
    n_tol = tol.sum(-1, keepdim=True).clamp(min=1)
    smallest = sp.gather(1, n_tol - 1).squeeze(1) * (1 - TIE_REL)
    dist = None
    if want_dist:
        ds = torch.where(keep, sp, 0.0)
        dist = torch.zeros_like(pn).scatter_(1, order, ds / ds.sum(-1, keepdim=True))
    return pn, smallest, dist


def _chi_square(obs: torch.Tensor, dist: torch.Tensor) -> Tuple[float, int]:
    """(p-value, bins) of Pearson's test of one row's counts against its filtered distribution.

    Counts outside the support are not binned (they fail the support check). Tokens sorted by
    expected count: each expecting >= m is a bin; the rest are cut into runs of about 2m (each run
    then expects more than m, as every token in it expects less than m); a short last run joins
    its neighbour. m = max(5, n / 1000), so there are at most ~1000 bins.
    """
    inside = dist > 0
    n = float(obs[inside].sum())
    if n == 0:
        return 1.0, 0
    e, idx = torch.sort(dist[inside] * n, descending=True)
    o = obs[inside][idx]
    m = max(MIN_EXPECTED, n / MAX_BINS)
    n_head = int((e >= m).sum())
    tail_e, tail_o = e[n_head:], o[n_head:]
    bid = torch.div(torch.cumsum(tail_e, 0) - tail_e, 2 * m, rounding_mode="floor").long()
    bins_e = torch.cat([e[:n_head], torch.bincount(bid, tail_e)])
    bins_o = torch.cat([o[:n_head], torch.bincount(bid, tail_o)])
    if len(bins_e) > 1 and float(bins_e[-1]) < m:
        bins_e = torch.cat([bins_e[:-2], bins_e[-2:].sum(0, keepdim=True)])
        bins_o = torch.cat([bins_o[:-2], bins_o[-2:].sum(0, keepdim=True)])
    if len(bins_e) < 2:
        return 1.0, len(bins_e)
    stat = ((bins_o - bins_e) ** 2 / bins_e).sum()
    df = torch.tensor((len(bins_e) - 1) / 2, dtype=torch.float64)
    return float(torch.special.gammaincc(df, stat / 2)), len(bins_e)


@dataclass(frozen=True)
class Support:
    """A sampling check's filtered support of one input set (`SamplingChecker.expected`)."""

    pn: torch.Tensor
    smallest: torch.Tensor


class SamplingChecker(Checker):
    """Samples must come from the filtered distribution: support per trial, chi-square once."""

    kind = "sampling"
    compares_to_reference = False

    def __init__(
        self, definition: Definition, probs: str, filters: Dict[str, Optional[str]], output: str,
        samples: int, alpha: float, max_rows: int, min_samples: int = 100, budget_s: float = 20.0,
    ) -> None:
        super().__init__(definition)
        names = list(definition.inputs)
        self.probs_index = names.index(probs)
        self.filter_index = {f: (names.index(n) if n else None) for f, n in filters.items()}
        self.output = output
        self.output_index = self.out_names.index(output)
        self.samples, self.alpha, self.max_rows = samples, alpha, max_rows
        self.min_samples, self.budget_s = min(min_samples, samples), budget_s
        row_axis = definition.inputs[probs].shape[0]
        # inputs that carry one value per probability row: tiled with the rows in `statistical`
        self.row_inputs = {
            i for i, spec in enumerate(definition.inputs.values()) if spec.shape and spec.shape[0] == row_axis
        }

    def _params(self, inputs: Sequence[Any], rows: Optional[int] = None) -> Tuple[torch.Tensor, Dict[str, Optional[torch.Tensor]]]:
        probs = inputs[self.probs_index]
        if rows is not None:
            probs = probs[:rows]
        n = probs.shape[0]
        params: Dict[str, Optional[torch.Tensor]] = {}
        for f, i in self.filter_index.items():
            if i is None:
                params[f] = None
                continue
            x = inputs[i]
            if rows is not None and i in self.row_inputs and isinstance(x, torch.Tensor):
                x = x[:rows]
            params[f] = _row_values(x, n, torch.int64 if f == "top_k" else torch.float64, probs.device)
        return probs, params

    def _support(self, probs: torch.Tensor, params: Dict[str, Optional[torch.Tensor]], want_dist: bool):
        """`_filter` over row chunks, to bound the float64 temporaries."""
        rows, vocab = probs.shape
        step = max(1, _ROW_CHUNK_ELEMENTS // max(vocab, 1))
        parts = []
        for s in range(0, rows, step):
            sl = {f: (v[s : s + step] if v is not None else None) for f, v in params.items()}
            parts.append(_filter(probs[s : s + step], sl["top_k"], sl["top_p"], sl["min_p"], want_dist))
        pn = torch.cat([x[0] for x in parts])
        smallest = torch.cat([x[1] for x in parts])
        dist = torch.cat([x[2] for x in parts]) if want_dist else None
        return pn, smallest, dist

    @staticmethod
    def _bad_mask(samples: torch.Tensor, pn: torch.Tensor, smallest: torch.Tensor) -> torch.Tensor:
        """[rows, per_row] True where a sample is out of range or outside the tolerant support."""
        s = samples.reshape(pn.shape[0], -1).to(torch.int64)
        vocab = pn.shape[1]
        pt = pn.gather(1, s.clamp(0, max(vocab - 1, 0)))
        return (s < 0) | (s >= vocab) | ~((pt >= smallest[:, None]) & (pt > 0))

    def _shape_problem(self, samples: Any, rows: int) -> str:
        if not isinstance(samples, torch.Tensor):
            return f"output {self.output!r} is a {type(samples).__name__}, not a tensor of token ids"
        if samples.dtype.is_floating_point or samples.dtype.is_complex or samples.dtype == torch.bool:
            return f"output {self.output!r} has dtype {samples.dtype}; token ids must be integers"
        if rows and samples.numel() % rows:
            return f"output {self.output!r} has {samples.numel()} samples for {rows} probability rows"
        return ""

    def check_trial(self, outputs, ref_outputs, inputs, tols) -> CheckResult:
        probs, params = self._params(inputs)
        samples = outputs[self.output_index]
        rows = probs.shape[0]
        problem = self._shape_problem(samples, rows)
        if problem:
            return CheckResult(False, problem, self.kind, {}, [])
        if rows == 0 or samples.numel() == 0:
            return CheckResult(True, "", self.kind, {"out_of_support": 0}, [])
        pn, smallest, _ = self._support(probs, params, False)
        bad = self._bad_mask(samples, pn, smallest)
        n_bad = int(bad.sum())
        numbers = {"out_of_support": n_bad}
        if not n_bad:
            return CheckResult(True, "", self.kind, numbers, [])
        return CheckResult(False, self._support_reason(bad, samples, pn, smallest), self.kind, numbers, [])

    def _support_reason(self, bad: torch.Tensor, samples: torch.Tensor, pn: torch.Tensor, smallest: torch.Tensor) -> str:
        n_bad = int(bad.sum())
        row, j = (int(v) for v in torch.nonzero(bad)[0])
        tok = int(samples.reshape(pn.shape[0], -1)[row, j])
        vocab = pn.shape[1]
        head = f"{n_bad} of {bad.numel()} samples lie outside the filtered support; first: row {row}"
        if not 0 <= tok < vocab:
            return f"{head}: sample {tok} is not a token id in [0, {vocab})"
        return (
            f"{head}: token {tok} has probability {float(pn[row, tok]):.4g}, below the smallest allowed "
            f"{float(smallest[row]):.4g} after top-k/top-p/min-p filtering"
        )

    def expected(self, inputs: Sequence[Any]) -> Support:
        """The filtered support (the sort a top-p filter needs is most of a check's cost)."""
        probs, params = self._params(inputs)
        pn, smallest, _ = self._support(probs, params, False)
        return Support(pn, smallest)

    def timed_bad(self, outputs, ref_outputs, inputs, tols) -> torch.Tensor:
        probs = inputs[self.probs_index]
        samples = outputs[self.output_index]
        if self._shape_problem(samples, probs.shape[0]):
            return torch.ones((), dtype=torch.int64, device=probs.device)
        if probs.shape[0] == 0 or samples.numel() == 0:
            return torch.zeros((), dtype=torch.int64, device=samples.device)
        sup = ref_outputs if isinstance(ref_outputs, Support) else self.expected(inputs)
        return self._bad_mask(samples.to(sup.pn.device), sup.pn, sup.smallest).sum().to(samples.device)

    def statistical(self, sample: Callable[[List[Any]], torch.Tensor], inputs: Sequence[Any]) -> CheckResult:
        """Draw `samples` per row for the first `max_rows` rows and test each row's counts."""
        rows = min(self.max_rows, inputs[self.probs_index].shape[0])
        probs, params = self._params(inputs, rows)
        vocab = probs.shape[1]
        numbers: Dict[str, Any] = {
            "test": CHI_SQUARE_TEST, "alpha": self.alpha, "rows_tested": rows, "samples_per_row": 0,
        }
        if rows == 0 or vocab == 0:
            return CheckResult(True, "", self.kind, numbers, [])
        pn, smallest, dist = self._support(probs, params, True)
        reps = max(1, min(self.samples, BATCH_ELEMENTS // (rows * vocab)))
        tiled = [
            x[:rows].repeat_interleave(reps, dim=0) if i in self.row_inputs and isinstance(x, torch.Tensor) else x
            for i, x in enumerate(inputs)
        ]
        counts = torch.zeros(rows, vocab, dtype=torch.int64, device=pn.device)
        n_bad = torch.zeros((), dtype=torch.int64, device=pn.device)
        first_bad: Optional[str] = None
        drawn = 0
        t0 = time.monotonic()
        # a slow sampler (a per-row Python loop, an interpreted kernel on a CPU) stops at the time
        # budget once it has given `min_samples`: fewer samples make a weaker test; the bins keep
        # expecting >= 5, where the chi-square approximation (and so the false-failure rate) holds
        # roughly (measured slightly heavy-tailed at ~2000 samples: 13/200 at alpha 0.05)
        while drawn < self.samples and not (drawn >= self.min_samples and time.monotonic() - t0 > self.budget_s):
            out = sample(list(tiled))
            problem = self._shape_problem(out, rows * reps)
            if problem:
                return CheckResult(False, f"statistical check: {problem}", self.kind, numbers, [])
            s = out.to(pn.device).reshape(rows, -1).to(torch.int64)
            bad = self._bad_mask(s, pn, smallest)
            if first_bad is None and bool(bad.any()):
                first_bad = self._support_reason(bad, s, pn, smallest)
            n_bad += bad.sum()
            counts.view(-1).scatter_add_(
                0, (s.clamp(0, vocab - 1) + torch.arange(rows, device=s.device)[:, None] * vocab).reshape(-1),
                (~((s < 0) | (s >= vocab))).to(torch.int64).reshape(-1),
            )
            drawn += s.shape[1]
        numbers["samples_per_row"] = drawn
        numbers["out_of_support"] = int(n_bad)
        obs, dist = counts.cpu().double(), dist.cpu()
        p_values: List[float] = []
        tvds: List[float] = []
        for r in range(rows):
            p_values.append(_chi_square(obs[r], dist[r])[0])
            tvds.append(0.5 * float((obs[r] / drawn - dist[r]).abs().sum()))
        numbers.update(p_value=min(p_values), p_values=p_values, tvd_max=max(tvds), tvds=tvds)
        if first_bad is not None:
            return CheckResult(False, f"statistical check: {first_bad}", self.kind, numbers, [])
        level = self.alpha / rows
        worst = min(range(rows), key=lambda r: p_values[r])
        if p_values[worst] < level:
            return CheckResult(
                False,
                f"row {worst}: the samples do not follow the filtered distribution ({CHI_SQUARE_TEST}): "
                f"p-value {p_values[worst]:.3g} < {level:.3g} (alpha {self.alpha:g} / {rows} rows), total "
                f"variation distance {tvds[worst]:.3g} over {drawn} samples",
                self.kind, numbers, [],
            )
        return CheckResult(True, "", self.kind, numbers, [])


# ---------------------------------------------------------------------------------- spec
_KEYS = {
    "elementwise": {"kind"},
    "matched_ratio": {"kind", "required"},
    "sampling": {"kind", "probs", "top_k", "top_p", "min_p", "output", "samples", "alpha", "max_rows",
                 "min_samples", "budget_s"},
}


def _number(spec: Mapping[str, Any], key: str, default: float) -> float:
    v = spec.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise CheckSpecError(f"check.{key}: must be a number, got {v!r}")
    return float(v)


def _positive(spec: Mapping[str, Any], key: str, default: float) -> float:
    v = _number(spec, key, default)
    if v <= 0:
        raise CheckSpecError(f"check.{key}: must be > 0, got {v!r}")
    return v


def _count(spec: Mapping[str, Any], key: str, default: int) -> int:
    v = spec.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise CheckSpecError(f"check.{key}: must be a positive integer, got {v!r}")
    return v


def _sampling(spec: Mapping[str, Any], definition: Definition) -> SamplingChecker:
    probs = spec.get("probs", "probs")
    if not isinstance(probs, str) or probs not in definition.inputs:
        raise CheckSpecError(
            f"check.probs: the definition has no input {probs!r} (inputs: {list(definition.inputs)})"
        )
    pshape = definition.inputs[probs].shape
    if pshape is None or len(pshape) != 2:
        raise CheckSpecError(f"check.probs: input {probs!r} must have shape [rows, vocab], has {pshape}")
    filters: Dict[str, Optional[str]] = {}
    for f in ("top_k", "top_p", "min_p"):
        name = spec.get(f, f)
        if name is not None and not isinstance(name, str):
            raise CheckSpecError(f"check.{f}: must be an input name or null, got {name!r}")
        if name is not None and name not in definition.inputs:
            if f in spec:  # named explicitly: a typo would silently drop the filter
                raise CheckSpecError(f"check.{f}: the definition has no input {name!r} (inputs: {list(definition.inputs)})")
            name = None
        if name is not None:
            shape = definition.inputs[name].shape
            if shape and (len(shape) != 1 or shape[0] != pshape[0]):
                raise CheckSpecError(
                    f"check.{f}: input {name!r} must be a scalar or have shape [{pshape[0]}], has {shape}"
                )
        filters[f] = name
    outs = list(definition.outputs)
    output = spec.get("output")
    if output is None:
        if len(outs) != 1:
            raise CheckSpecError(f"check.output: the definition has outputs {outs}; name the one holding the samples")
        output = outs[0]
    if output not in definition.outputs:
        raise CheckSpecError(f"check.output: the definition has no output {output!r} (outputs: {outs})")
    if not definition.outputs[output].dtype.is_int:
        raise CheckSpecError(f"check.output: output {output!r} has dtype {definition.outputs[output].dtype}; token ids are integers")
    alpha = _number(spec, "alpha", 1e-3)
    if not 0 < alpha < 1:
        raise CheckSpecError(f"check.alpha: must be in (0, 1), got {alpha:g}")
    return SamplingChecker(
        definition, probs, filters, output, _count(spec, "samples", 10000), alpha, _count(spec, "max_rows", 8),
        _count(spec, "min_samples", 100), _positive(spec, "budget_s", 20.0)
    )


def make_checker(spec: Optional[Mapping[str, Any]], definition: Definition) -> Checker:
    """The checker a `check` setting declares (None: elementwise); CheckSpecError names the bad field."""
    if spec is None:
        return ElementwiseChecker(definition)
    if not isinstance(spec, Mapping):
        raise CheckSpecError(f"check: must be a mapping with a 'kind', got {type(spec).__name__}")
    kind = spec.get("kind")
    if kind not in CHECK_KINDS:
        raise CheckSpecError(f"check.kind: must be one of {CHECK_KINDS}, got {kind!r}")
    unknown = sorted(set(spec) - _KEYS[kind])
    if unknown:
        raise CheckSpecError(f"check.{unknown[0]}: unknown key for kind {kind!r} (known: {sorted(_KEYS[kind])})")
    if kind == "elementwise":
        return ElementwiseChecker(definition)
    if kind == "matched_ratio":
        required = _number(spec, "required", 0.95)
        if not 0 < required <= 1:
            raise CheckSpecError(f"check.required: must be in (0, 1], got {required:g}")
        return MatchedRatioChecker(definition, required)
    return _sampling(spec, definition)
