"""The plain-text summary the pipeline ends with (also printed by `flashinfer-bench run`)."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Dict, List

from flashinfer_bench.data import TraceSet
from flashinfer_bench.report.units import fmt_speedup, fmt_us, shorten, workload_label

WIDTH = 100  # as the report's text (report/render.py)


def plain_summary(ts: TraceSet, skipped: List[Dict], problems: List[str]) -> str:
    """The summary without the report extra (pandas): every (solution, workload) result of each
    definition and device in the units and names of the report (microseconds, speedups with
    significant digits, workloads by their axes), lines cut to WIDTH columns."""
    s = ts.summary()
    lines = [
        f"Traces: {s['traces']} total, {s['passed']} passed, {s['failed']} failed"
        + (f" ({', '.join(f'{k} {v}' for k, v in sorted(s['by_status'].items()))})" if s["by_status"] else ""),
        "Latency in microseconds (us); speedup = reference latency / solution latency.",
    ]
    for dname in sorted(ts.definitions):
        for hw in sorted({t.evaluation.environment.hardware for t in ts.traces_for(dname) if t.evaluation}):
            traces = ts.traces_for(dname, hardware=hw)
            latest: Dict = {}
            for t in traces:  # newest trace per (solution, workload)
                k = (t.solution, t.workload.uuid)
                if k not in latest or t.evaluation.timestamp >= latest[k].evaluation.timestamp:
                    latest[k] = t
            rows = []
            for (sol, uuid), t in sorted(latest.items(), key=lambda kv: (kv[0][0] or "", _axis_order(kv[1]))):
                ev = t.evaluation
                perf = ev.performance
                rows.append((sol or "", ev.status.value, fmt_us(perf.latency_ms) if perf else "",
                             fmt_speedup(perf.speedup_factor) if perf else "", workload_label(dict(t.workload.axes), uuid)))
            head = ("solution", "status", "latency (us)", "vs ref", "workload")
            w = [min(max(len(r[i]) for r in rows + [head]), cap) for i, cap in enumerate((28, 19, 12, 8))]
            lines.append("")
            lines.append(shorten(f"{dname} on {hw}", WIDTH))
            room = max(WIDTH - 2 - sum(x + 2 for x in w), 20)  # the workload, last, wraps after its commas
            for r in [head] + rows:
                cells = [shorten(x, w[i]) for i, x in enumerate(r[:4])]
                left = "  " + "  ".join(c.ljust(w[i]) if i < 2 else c.rjust(w[i]) for i, c in enumerate(cells)) + "  "
                parts = _wrap_commas(r[4], room)
                lines.append((left + parts[0]).rstrip())
                lines += [" " * len(left) + " " + x for x in parts[1:]]
            wins = Counter(t.solution for t in ts.best_traces(dname, hw).values())
            if wins:
                lines.append(shorten("  wins: " + ", ".join(f"{k} {v}" for k, v in wins.most_common()), WIDTH))
    if skipped:
        lines.append("")
        lines.append(f"Skipped ({len(skipped)}):")
        reasons = defaultdict(list)
        for x in skipped:
            reasons[(x.get("solution"), x.get("reason"))].append(x.get("workload"))
        for (sol, why), wls in sorted(reasons.items(), key=lambda kv: str(kv[0])):
            lines.append(shorten(f"  {sol}: {why} [{len(wls)} workload(s)]", WIDTH))
    if problems:
        lines.append("")
        lines.append(f"Dataset problems ({len(problems)}):")
        lines += [shorten(f"  {p}", WIDTH) for p in problems]
    return "\n".join(lines) + "\n"


def _wrap_commas(text: str, width: int) -> List[str]:
    """A list of axes in lines of at most `width` characters, broken after a comma."""
    out: List[str] = []
    for part in re.findall(r"[^,]+,?", text) or [""]:
        if out and len(out[-1]) + len(part) <= width:
            out[-1] += part
        else:
            out.append(shorten(part, width))
    return out


def _axis_order(t) -> tuple:
    return tuple(sorted(t.workload.axes.items()))
