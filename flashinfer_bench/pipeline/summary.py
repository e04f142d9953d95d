"""The plain-text summary the pipeline ends with (also printed by `flashinfer-bench run`)."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Dict, List

from flashinfer_bench.data import TraceSet


def _fmt_us(ms: float) -> str:
    if ms is None or not math.isfinite(ms):
        return "-"
    return f"{ms * 1e3:.2f}"


def plain_summary(ts: TraceSet, skipped: List[Dict], problems: List[str]) -> str:
    s = ts.summary()
    lines = [
        f"Traces: {s['traces']} total, {s['passed']} passed, {s['failed']} failed"
        + (f" ({', '.join(f'{k} {v}' for k, v in sorted(s['by_status'].items()))})" if s["by_status"] else ""),
    ]
    for dname in sorted(ts.definitions):
        for hw in sorted({t.evaluation.environment.hardware for t in ts.traces_for(dname) if t.evaluation}):
            traces = ts.traces_for(dname, hardware=hw)
            latest: Dict = {}
            for t in traces:  # newest trace per (solution, workload)
                k = (t.solution, t.workload.uuid)
                if k not in latest or t.evaluation.timestamp >= latest[k].evaluation.timestamp:
                    latest[k] = t
            lines.append("")
            lines.append(f"{dname} on {hw}")
            lines.append(f"  {'solution':34s} {'workload':28s} {'status':20s} {'latency us':>11s} {'speedup':>8s}")
            for (sol, uuid), t in sorted(latest.items(), key=lambda kv: (kv[0][0] or "", _axis_order(kv[1]))):
                ev = t.evaluation
                lat = ev.performance.latency_ms if ev.performance else None
                sp = f"{ev.performance.speedup_factor:.2f}x" if ev.performance else "-"
                lines.append(f"  {sol:34s} {uuid:28s} {ev.status.value:20s} {_fmt_us(lat):>11s} {sp:>8s}")
            wins = Counter(t.solution for t in ts.best_traces(dname, hw).values())
            if wins:
                lines.append("  wins: " + ", ".join(f"{k} {v}" for k, v in wins.most_common()))
    if skipped:
        lines.append("")
        lines.append(f"Skipped ({len(skipped)}):")
        reasons = defaultdict(list)
        for x in skipped:
            reasons[(x.get("solution"), x.get("reason"))].append(x.get("workload"))
        for (sol, why), wls in sorted(reasons.items(), key=lambda kv: str(kv[0])):
            lines.append(f"  {sol}: {why} [{len(wls)} workload(s)]")
    if problems:
        lines.append("")
        lines.append(f"Dataset problems ({len(problems)}):")
        lines += [f"  {p}" for p in problems]
    return "\n".join(lines) + "\n"


def _axis_order(t) -> tuple:
    return tuple(sorted(t.workload.axes.items()))
