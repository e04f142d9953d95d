"""The device-time witness round of every trace in a traces file: claim, what the graph round
measured, its bound, its cost (witness_graph.py). Reads what anchor_vs_ncu.py or any run wrote.

    python benchmarks/witness_graph_summary.py anchor_traces.jsonl
"""
from __future__ import annotations

import json
import sys
from statistics import median


def main() -> None:
    rows = []
    for line in open(sys.argv[1]):
        t = json.loads(line)
        ev = t["evaluation"]
        ex = (ev.get("correctness") or {}).get("extra") or {}
        w = ex.get("witness") or {}
        g = w if w.get("clock") in ("graph_replay", "eager_replay") else (w.get("graph") or {})  # first, or beside the coarse round
        lat = (ev.get("performance") or {}).get("latency_ms")
        flags = ",".join(f for f in ex.get("flags") or [] if f in ("timing_disputed", "witness_coarse", "witness_eager", "witness_wrong", "unwitnessed",
                                                                    "below_launch_floor", "below_roofline_floor",
                                                                    "implausible_latency"))
        rows.append((t["solution"][:24], t["workload"]["axes"].get("batch_size"), lat, g, w, flags))
    print("| solution | batch | claim us | k x m | null ms | rounds ms | est us | bound us | est/claim | capture ms | graph s | coarse s | flags |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    ratios, costs = [], []
    for sol, b, lat, g, w, flags in rows:
        est = g.get("est_ms")
        r = est / lat if est is not None and lat else None
        if r is not None:
            ratios.append(r)
        if g.get("seconds") is not None:
            costs.append(g["seconds"])
        f = lambda x, m=1e3: "-" if x is None else f"{x * m:.2f}"  # noqa: E731
        print(f"| {sol} | {b} | {f(lat)} | {g.get('k', '-')}x{g.get('m', 1)} | {g.get('null_ms', '-')} | {g.get('round_ms', '-')} | {f(est)} | "
              f"{f(g.get('bound_ms'))} | {'-' if r is None else f'{r:.2f}'} | {g.get('capture_ms', '-')} | {g.get('seconds', '-')} | "
              f"{w.get('seconds', '-')} | {flags} |")
    if ratios:
        print(f"\nest/claim: median {median(ratios):.2f}, max {max(ratios):.2f}; graph round seconds: median {median(costs):.3f}, max {max(costs):.3f}")


if __name__ == "__main__":
    main()
