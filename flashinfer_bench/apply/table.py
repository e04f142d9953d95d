"""The dispatch table: which solution wins each measured var-axis key, on one hardware.

Pure data work over a TraceSet (no torch), done once at enable. Rule for "best" (documented in
ApplyConfig): the fastest PASSED solution by median latency wins a key outright only when its
latency interval does not overlap the runner-up's. Intervals are [p10, p90] from
`correctness.extra` when recorded, else median +- IQR/2, else the median alone. When intervals
overlap, every solution whose interval reaches the fastest's is tied, and the tie goes to the one
that is fastest on the most keys of the definition (then lower median): a local difference that is
noise should not split the table across many artifacts.
"""
from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple

from flashinfer_bench.data import Definition, EvaluationStatus, Trace, TraceSet

from .config import ApplyConfig

Key = Tuple[int, ...]


@dataclass(frozen=True)
class Candidate:
    """One solution's measurements on one key (several workloads of a key are pooled by median)."""

    solution: str
    latency_ms: float
    lo_ms: float
    hi_ms: float
    workloads: int


@dataclass
class DefinitionTable:
    definition: str
    var_axes: Tuple[str, ...]
    winners: Dict[Key, str] = field(default_factory=dict)
    candidates: Dict[Key, List[Candidate]] = field(default_factory=dict)
    # solution that is fastest on the most keys (used by on_miss="definition_best")
    best: Optional[str] = None
    # measured keys where no solution was measurably faster than the reference: the fallback
    # serves them (and the calls nearest to them)
    fallback_keys: Set[Key] = field(default_factory=set)

    def nearest(self, key: Key, max_distance: float) -> Optional[Tuple[Key, Optional[str]]]:
        """The measured key closest to `key` in log2 space, if within max_distance, with its
        winner (None: the fallback serves it)."""
        best: Optional[Tuple[float, float, Key]] = None
        for k in [*self.winners, *self.fallback_keys]:
            d = log2_distance(key, k)
            tie = sum(abs(_lg(a) - _lg(b)) for a, b in zip(key, k))
            cand = (d, tie, k)
            if best is None or cand < best:
                best = cand
        if best is None or best[0] > max_distance:
            return None
        return best[2], self.winners.get(best[2])


def _lg(v: int) -> float:
    return math.log2(max(int(v), 1))


def log2_distance(a: Key, b: Key) -> float:
    """Max over axes of |log2 a_i - log2 b_i| (0 counts as 1); an empty key has distance 0."""
    return max((abs(_lg(x) - _lg(y)) for x, y in zip(a, b)), default=0.0)


def _interval(t: Trace) -> Tuple[float, float, float]:
    ev = t.evaluation
    assert ev is not None and ev.performance is not None
    lat = float(ev.performance.latency_ms)
    extra = ev.extra
    lo, hi = extra.get("latency_ms_p10"), extra.get("latency_ms_p90")
    if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo <= lat <= hi:
        return lat, float(lo), float(hi)
    iqr = extra.get("iqr_ms")
    if isinstance(iqr, (int, float)) and iqr >= 0:
        return lat, lat - iqr / 2.0, lat + iqr / 2.0
    return lat, lat, lat


def beats_reference(t: Trace) -> bool:
    """Was this solution measurably faster than the definition's reference here? Its p90 (else
    its median + IQR/2) below the reference's median - IQR/2, and the evaluator did not call the
    speedup noise. apply() never routes a call to a solution that is not (issue 17: an interpreted
    Triton solution measured at 0.005x made a model 1.45x slower)."""
    ev = t.evaluation
    perf = ev.performance if ev is not None else None
    if perf is None or not (perf.reference_latency_ms > 0 and perf.speedup_factor > 1.0):
        return False
    extra = ev.extra
    if "speedup_within_noise" in (extra.get("flags") or []):
        return False
    _, _, hi = _interval(t)
    ref_iqr = extra.get("reference_iqr_ms")
    ref_lo = perf.reference_latency_ms - (float(ref_iqr) / 2.0 if isinstance(ref_iqr, (int, float)) else 0.0)
    return hi < ref_lo


def usable_traces(
    ts: TraceSet, definition: Definition, hardware: str, cfg: ApplyConfig, exclude: Set[str]
) -> Iterable[Trace]:
    """PASSED traces of this definition on this hardware whose solution we can build, none
    marked suspect, none of another version of its solution (`TraceSet.is_stale`)."""
    allow = set(cfg.solutions) if cfg.solutions is not None else None
    for t in ts.traces_for(definition.name, hardware=hardware):
        ev = t.evaluation
        if t.solution is None or ev is None or ev.status != EvaluationStatus.PASSED:
            continue
        if t.solution in exclude or (allow is not None and t.solution not in allow):
            continue
        if ts.get_solution(t.solution) is None:
            continue
        perf = ev.performance
        if perf is None or not (perf.latency_ms > 0 and math.isfinite(perf.latency_ms)):
            continue
        if ev.extra.get("suspect"):  # its numbers are disputed (report/best.py): never dispatched to
            continue
        if ts.is_stale(t):  # it measured the solution's code before an edit: not what would run
            continue
        c = ev.correctness
        if cfg.max_atol is not None and (c is None or not c.max_absolute_error <= cfg.max_atol):
            continue
        if cfg.max_rtol is not None and (c is None or not c.max_relative_error <= cfg.max_rtol):
            continue
        yield t


def build_table(
    ts: TraceSet,
    definition: Definition,
    hardware: str,
    cfg: ApplyConfig,
    exclude: Optional[Set[str]] = None,
) -> DefinitionTable:
    var_axes = tuple(definition.var_axes)
    table = DefinitionTable(definition.name, var_axes)
    pooled: Dict[Key, Dict[str, List[Tuple[float, float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    measured: Set[Key] = set()
    for t in usable_traces(ts, definition, hardware, cfg, exclude or set()):
        try:
            key = tuple(int(t.workload.axes[a]) for a in var_axes)
        except KeyError:
            continue
        measured.add(key)
        if cfg.require_speedup and not beats_reference(t):
            continue
        pooled[key][t.solution].append(_interval(t))  # type: ignore[index]
    table.fallback_keys = measured - set(pooled)
    for key, per_sol in pooled.items():
        cands = []
        for sol, ivs in per_sol.items():
            cands.append(
                Candidate(
                    sol,
                    statistics.median(i[0] for i in ivs),
                    statistics.median(i[1] for i in ivs),
                    statistics.median(i[2] for i in ivs),
                    len(ivs),
                )
            )
        cands.sort(key=lambda c: (c.latency_ms, c.solution))
        table.candidates[key] = cands
    raw_wins = Counter(c[0].solution for c in table.candidates.values())
    for key, cands in table.candidates.items():
        fastest = cands[0]
        if not cfg.noise_aware:
            table.winners[key] = fastest.solution
            continue
        tied = [c for c in cands if c.lo_ms <= fastest.hi_ms]
        win = min(tied, key=lambda c: (-raw_wins[c.solution], c.latency_ms, c.solution))
        table.winners[key] = win.solution
    if table.winners:
        wins = Counter(table.winners.values())
        table.best = min(wins, key=lambda s: (-wins[s], -raw_wins[s], s))
    return table
