"""Our GPU latencies on real-family definitions (paged/ragged GQA) against Nsight Compute kernel times.

    python benchmarks/real_families_vs_ncu.py [--dataset dataset] [--definitions NAME ... | all]
        [--max-workloads 4] [--runs 2] [--ncu-calls 5] [--ncu-timeout 300] [--add-reference]
        [--no-ncu] [--out DIR]
    python benchmarks/real_families_vs_ncu.py --self-test      # CPU: CSV parser, ranking, table

Modelled on benchmarks/anchor_vs_ncu.py. For each definition (default: gqa_paged_decode_h32_kv8_d128_ps1,
gqa_paged_decode_h32_kv8_d128_ps64, gqa_ragged_prefill_causal_h32_kv8_d128; names absent from the
dataset are noted and skipped; when none is there, every definition with solutions and workloads):

1. up to --max-workloads workloads per definition, spread over its sizes (smallest, largest and
   evenly between, by total tensor elements); a workload's missing safetensors inputs are drawn
   from their generator specs, as `--missing-blobs generate` does;
2. every (solution, workload) evaluated through the warm worker (`evaluate_via_worker`, the
   evaluation settings of config.yaml for a CUDA device), once as warm-up per solution, then
   --runs times;
3. ncu on the same kernels, one ncu process per (definition, solution) (a crash or a timeout costs
   that solution only): `--ncu-child` builds each workload's inputs with `make_inputs(definition,
   workload, seed, device, dataset_root, None, family_settings(definition)["inputs"])` (valid
   kv_indptr / kv_indices / qo_indptr), makes one warm-up call, then a `torch.cuda._sleep` marker
   kernel and --ncu-calls calls inside cudaProfilerStart/Stop; ncu measures `gpu__time_duration.sum`
   with `--cache-control all --clock-control none`; one call's time is the sum of its kernels
   (median over the calls).

Prints per (definition, solution, workload axes): ours run1/run2 us, ncu us, kernels per call,
ours/ncu, within 10% or 1 us, status; per workload whether the order of the solutions by our
latency (every run) equals their order by ncu; summary lines. Our latency is the whole call
(launches and gaps between kernels included, as a caller sees it); ncu sums kernel time only, so a
many-kernel PyTorch solution can be host-bound and differ from ncu by more than the tolerance.
JSON rows and the traces go to $OUT (or --out). One failing evaluation never loses the table.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_DEFINITIONS = [
    "gqa_paged_decode_h32_kv8_d128_ps1",
    "gqa_paged_decode_h32_kv8_d128_ps64",
    "gqa_ragged_prefill_causal_h32_kv8_d128",
]
REFERENCE_PREFIX = "reference_as_solution_"
NCU_SEED = 1
Key = Tuple[str, str, str]  # (definition, solution, workload uuid)


def within(ours_us: float, ref_us: float, rel: float = 0.10, abs_us: float = 1.0) -> bool:
    return abs(ours_us - ref_us) <= max(rel * ref_us, abs_us)


# ----------------------------------------------------------------------------- dataset helpers
def workload_size(d: Any, axes: Dict[str, int]) -> float:
    """Total elements of every tensor input and output (inf when the axes do not fit)."""
    try:
        var = {k: v for k, v in axes.items() if k in d.var_axes}
        shapes = list(d.input_shapes_by_name(var).values()) + list(d.output_shapes_by_name(var).values())
    except Exception:  # noqa: BLE001
        return math.inf
    return float(sum(math.prod(s) for s in shapes if s is not None))


def spread(items: Sequence[Any], k: int) -> List[Any]:
    """k items spread over a sorted list: first, last and evenly between (all when k >= len)."""
    n = len(items)
    if k <= 0 or n <= k:
        return list(items)
    if k == 1:
        return [items[0]]
    idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})
    return [items[i] for i in idx]


def blobs_to_random(wl: Any, root: Path) -> Any:
    """Inputs whose safetensors file is missing become generated ones (as missing_blobs=generate)."""
    from flashinfer_bench.pipeline.plan import blobs_to_generators

    return blobs_to_generators(wl, root)


def reference_solution(d: Any) -> Any:
    """The definition's reference as a value-returning Python solution."""
    from flashinfer_bench.data import Solution

    return Solution.model_validate({
        "name": f"{REFERENCE_PREFIX}{d.name}", "definition": d.name, "author": "bench",
        "description": "the definition's reference as a solution",
        "spec": {"language": "python", "target_hardware": ["cuda"], "entry_point": "main.py::run",
                 "dependencies": [], "destination_passing_style": False},
        "sources": [{"path": "main.py", "content": d.reference}],
    })


def select(ts: Any, names: List[str], max_workloads: int, add_reference: bool, root: Path):
    """[(definition, [solutions], [workloads])] and notes about what was left out. When none of the
    named definitions has both solutions and workloads, every definition that has is taken."""
    notes: List[str] = []
    everything = names == ["all"]
    wanted = sorted(ts.definitions) if everything else [n for n in names if n in ts.definitions]
    missing = [] if everything else [n for n in names if n not in ts.definitions]
    if missing:
        notes.append(f"not in the dataset (skipped): {', '.join(missing)}")

    def pick(wanted: List[str], quiet: bool):
        out = []
        for name in wanted:
            d = ts.definitions[name]
            sols = list({s.name: s for s in ts.solutions_for(name)}.values())
            if add_reference and not any(s.name == f"{REFERENCE_PREFIX}{name}" for s in sols):
                sols.append(reference_solution(d))
            wls = [blobs_to_random(t.workload, root) for t in ts.workloads_for(name)]
            if not sols or not wls:
                if not quiet:
                    notes.append(f"{name}: {len(sols)} solutions, {len(wls)} workloads: nothing to measure")
                continue
            wls.sort(key=lambda w: (workload_size(d, w.axes), w.uuid))
            # one workload per distinct axes (inputs the sample gives as missing blobs are drawn:
            # equal axes measure the same thing), then spread over the sizes
            distinct = list({json.dumps(w.axes, sort_keys=True): w for w in reversed(wls)}.values())[::-1]
            chosen = spread(distinct, max_workloads)
            if len(chosen) < len(wls):
                notes.append(f"{name}: {len(chosen)} of {len(wls)} workloads ({len(distinct)} distinct axes; spread over sizes)")
            out.append((d, sols, chosen))
        return out

    out = pick(wanted, everything)
    if not out and not everything:
        notes.append("none of the requested definitions has solutions and workloads: taking every definition that has")
        out = pick(sorted(ts.definitions), True)
    return out, notes


def fmt_axes(d: Any, wl: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in wl.axes.items() if k in d.var_axes)


# ----------------------------------------------------------------------------- ncu child
def ncu_child(dataset: Path, cache_dir: Path, jobs_file: Path, manifest: Path, calls: int, device: str = "cuda:0") -> int:
    """Run under ncu. jobs_file: {"definition", "solution", "uuids", "add_reference"}. Per workload:
    inputs, one warm-up call (before any marker: a failure here leaves no section), then a marker
    kernel and `calls` calls inside cudaProfilerStart/Stop. The manifest lists the sections in
    order, written after each one so a crash keeps the finished ones. device "cpu" (a dry run of
    this code without a GPU) makes no profiler calls and no marker."""
    import torch

    from flashinfer_bench.bench.inputs import allocate_outputs, axis_values, make_inputs
    from flashinfer_bench.bench.loader import build_solution, load_runnable
    from flashinfer_bench.data import TraceSet
    from flashinfer_bench.data.op_types import family_settings

    job = json.loads(jobs_file.read_text())
    ts = TraceSet.from_path(dataset)
    definition = ts.definitions[job["definition"]]
    sol = ts.get_solution(job["solution"])
    if sol is None and job["solution"] == f"{REFERENCE_PREFIX}{definition.name}":
        sol = reference_solution(definition)
    specs = family_settings(definition)["inputs"]
    workloads = {t.workload.uuid: blobs_to_random(t.workload, dataset) for t in ts.workloads_for(definition.name)}
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    sections: List[Dict[str, Any]] = []
    errors: List[Dict[str, Any]] = []

    def flush() -> None:
        manifest.write_text(json.dumps({"sections": sections, "errors": errors}))

    try:
        b = build_solution(sol, definition, cache_dir)
        if b.get("status") != "OK":
            errors.append({"uuid": None, "error": f"build {b.get('status')}: {str(b.get('log', ''))[-500:]}"})
            flush()
            return 0
        run = load_runnable(b, definition)
    except Exception:  # noqa: BLE001
        errors.append({"uuid": None, "error": traceback.format_exc()[-1500:]})
        flush()
        return 0
    for uuid in job["uuids"]:
        try:
            wl = workloads[uuid]
            inputs = make_inputs(definition, wl, NCU_SEED, dev, dataset, None, specs)
            outs = allocate_outputs(definition, axis_values(definition, wl), dev) if getattr(run, "dps", False) else []
            args = list(inputs) + list(outs)
            run(*args)
            sync()
        except Exception:  # noqa: BLE001 - no marker issued: the sections stay aligned
            errors.append({"uuid": uuid, "error": traceback.format_exc()[-1500:]})
            flush()
            continue
        ok = True
        if cuda:
            torch.cuda.profiler.start()
            torch.cuda._sleep(1000)  # marker: a spin_kernel starts every section
        try:
            for _ in range(calls):
                run(*args)
                sync()
        except Exception:  # noqa: BLE001 - the marker was issued: keep the section, mark it broken
            ok = False
            errors.append({"uuid": uuid, "error": traceback.format_exc()[-1500:]})
        finally:
            if cuda:
                torch.cuda.profiler.stop()
        sections.append({"uuid": uuid, "ok": ok})
        flush()
        del inputs, outs, args
    flush()
    return 0


# ----------------------------------------------------------------------------- ncu CSV
from anchor_vs_ncu import _to_us  # noqa: E402  (one reader of ncu's units)


def parse_ncu(text: str, sections: List[Dict[str, Any]], calls: int) -> Tuple[Dict[str, Dict[str, Any]], List[str]]:
    """ncu --csv output -> {uuid: {us, kernels_per_call, kernel, per_call_us}}, warnings.

    Kernels are ordered by ID; each spin_kernel (the marker) opens a section, matched in order with
    the manifest's sections. One call's time is the sum of its kernels: when a section holds a
    multiple of `calls` kernels, the median of the per-call sums, else their mean."""
    warnings: List[str] = []
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return {}, ["no CSV rows in the ncu output"]
    head = rows[0]
    ix = {k: i for i, k in enumerate(head)}
    for col in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"):
        if col not in ix:
            return {}, [f"ncu CSV has no {col!r} column (header: {head[:16]})"]
    kernels = []
    for r in rows[1:]:
        if len(r) != len(head) or r[ix["Metric Name"]] != "gpu__time_duration.sum":
            continue
        try:
            kernels.append((int(r[ix["ID"]]), r[ix["Kernel Name"]], _to_us(r[ix["Metric Value"]], r[ix["Metric Unit"]])))
        except ValueError:
            warnings.append(f"unreadable row: {r[:3]}")
    kernels.sort()
    groups: List[List[Tuple[str, float]]] = []
    for _, name, us in kernels:
        if "spin_kernel" in name:
            groups.append([])
        elif groups:
            groups[-1].append((name, us))
    if len(groups) != len(sections):
        warnings.append(f"{len(groups)} marker sections in the ncu output, {len(sections)} in the manifest")
    out: Dict[str, Dict[str, Any]] = {}
    for sec, g in zip(sections, groups):
        if not sec.get("ok", True):
            continue
        if not g:
            warnings.append(f"{sec['uuid']}: no kernels after the marker")
            continue
        total = sum(us for _, us in g)
        if len(g) % calls == 0:
            k = len(g) // calls
            per_call = [sum(us for _, us in g[i * k:(i + 1) * k]) for i in range(calls)]
            us = statistics.median(per_call)
        else:
            k = len(g) / calls
            per_call = []
            us = total / calls
            warnings.append(f"{sec['uuid']}: {len(g)} kernels is not a multiple of {calls} calls: mean per call")
        names = []
        for n, _ in g:
            short = n.split("(")[0][:48]
            if short not in names:
                names.append(short)
        out[sec["uuid"]] = {"us": us, "kernels_per_call": k, "kernel": "+".join(names[:3]) + ("+..." if len(names) > 3 else ""),
                            "per_call_us": per_call}
    return out, warnings


def run_ncu_one(dataset: Path, cache_dir: Path, definition: str, solution: str, uuids: List[str], calls: int,
                timeout: float, work: Path, device: str = "cuda:0") -> Tuple[Dict[str, Dict[str, Any]], List[str]]:
    """One ncu process for one (definition, solution); results by workload uuid, and messages."""
    td = Path(tempfile.mkdtemp(prefix="ncu-", dir=work))
    log, manifest, jobs = td / "ncu.csv", td / "sections.json", td / "job.json"
    jobs.write_text(json.dumps({"definition": definition, "solution": solution, "uuids": uuids}))
    cmd = [
        "ncu", "--profile-from-start", "off", "--metrics", "gpu__time_duration.sum", "--cache-control", "all",
        "--clock-control", "none", "--csv", "--print-units", "base", "--log-file", str(log),
        sys.executable, str(Path(__file__).resolve()), "--ncu-child", "--dataset", str(dataset),
        "--cache-dir", str(cache_dir), "--jobs", str(jobs), "--manifest", str(manifest), "--ncu-calls", str(calls),
        "--device", device,
    ]
    msgs: List[str] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # ncu and the profiled child: this session only
        output, _ = proc.communicate()
        msgs.append(f"ncu timed out after {timeout:.0f} s (--ncu-timeout)")
    wall = time.perf_counter() - t0
    msgs.append(f"[ncu] {definition} / {solution}: exit {proc.returncode} after {wall:.1f} s")
    if proc.returncode != 0:
        msgs.append((output or "")[-1500:])
    man: Dict[str, Any] = {"sections": [], "errors": []}
    if manifest.exists():
        try:
            man = json.loads(manifest.read_text())
        except json.JSONDecodeError:
            msgs.append("unreadable manifest")
    for e in man.get("errors", []):
        msgs.append(f"  child error ({e.get('uuid')}): {str(e.get('error'))[-600:]}")
    if not log.exists():
        msgs.append("  no ncu report")
        return {}, msgs
    res, warns = parse_ncu(log.read_text(errors="replace"), man.get("sections", []), calls)
    msgs += [f"  {w}" for w in warns]
    return res, msgs


# ----------------------------------------------------------------------------- ranking + table
def order(lat: Dict[str, Optional[float]]) -> Optional[List[str]]:
    """Solution names fastest first; None when any latency is missing."""
    if not lat or any(v is None for v in lat.values()):
        return None
    return [k for k, _ in sorted(lat.items(), key=lambda kv: (kv[1], kv[0]))]


def rankings(rows: List[Dict[str, Any]], runs: int) -> List[Dict[str, Any]]:
    """Per (definition, workload) with >= 2 solutions: the order by ncu and by ours in every run."""
    by_wl: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for r in rows:
        by_wl.setdefault((r["definition"], r["uuid"]), []).append(r)
    out = []
    for (dname, uuid), rs in sorted(by_wl.items(), key=lambda kv: (kv[0][0], kv[1][0].get("size", 0), kv[0][1])):
        rs = [r for r in rs if r.get("ncu_us") is not None]
        if len(rs) < 2:
            continue
        want = order({r["solution"]: r["ncu_us"] for r in rs})
        got = [order({r["solution"]: (r["ours_us"][k] if k < len(r["ours_us"]) else None) for r in rs}) for k in range(runs)]
        ok = all(g == want for g in got) and want is not None
        # an inversion between solutions whose ncu times are within 10%/1 us of each other is a tie
        ties_only = ok or all(g is not None and _only_tie_swaps(g, want, {r["solution"]: r["ncu_us"] for r in rs}) for g in got)
        out.append({"definition": dname, "uuid": uuid, "axes": rs[0]["axes"], "ncu_order": want, "ours_orders": got,
                    "agree": ok, "agree_up_to_ties": ties_only})
    return out


def _only_tie_swaps(got: List[str], want: Optional[List[str]], ncu: Dict[str, float]) -> bool:
    if want is None:
        return False
    pos = {s: i for i, s in enumerate(want)}
    for i in range(len(got)):
        for j in range(i + 1, len(got)):
            a, b = got[i], got[j]
            if pos[a] > pos[b] and not within(ncu[a], ncu[b]):
                return False
    return True


def report(rows: List[Dict[str, Any]], runs: int, ncu_ran: bool) -> Dict[str, Any]:
    f = lambda v, p=2: f"{v:.{p}f}" if isinstance(v, (int, float)) and v is not None else "-"  # noqa: E731
    print("\n| definition | solution | workload axes | " + " | ".join(f"ours run{k + 1} us" for k in range(runs))
          + " | ncu us | kernels/call | ours/ncu | within 10%/1us | run diff | status |")
    print("|---|---|---|" + "---:|" * runs + "---:|---:|---:|:-:|---:|---|")
    n_within = n_points = 0
    for r in sorted(rows, key=lambda r: (r["definition"], r.get("size", 0), r["uuid"], r["solution"])):
        us = (list(r["ours_us"]) + [None] * runs)[:runs]  # an interrupted run leaves fewer
        ncu = r.get("ncu_us")
        ok = None
        first = next((u for u in us if u), None)
        if ncu and first:
            n_points += 1
            ok = all(within(u, ncu) for u in us if u)
            n_within += ok
        diff = "-"
        pts = [u for u in us if u]
        if len(pts) >= 2:
            diff = f"{100 * (max(pts) - min(pts)) / min(pts):.1f}%"
        kpc = r.get("kernels_per_call")
        kpc_s = "-" if kpc is None else (str(kpc) if isinstance(kpc, int) else f"{kpc:.1f}")
        status = "/".join(dict.fromkeys(s or "-" for s in r["statuses"])) or "not run"
        if r.get("flags"):
            status += " " + ",".join(r["flags"])
        if r.get("ncu_note"):
            status += f" (ncu: {r['ncu_note']})"
        print(f"| {r['definition']} | {r['solution']} | {r['axes']} | " + " | ".join(f(u) for u in us)
              + f" | {f(ncu)} | {kpc_s} | {f(first / ncu) if (first and ncu) else '-'} | "
              f"{'-' if ok is None else ('yes' if ok else 'NO')} | {diff} | {status} |")
    ranks = rankings(rows, runs)
    if ranks:
        print("\nranking per workload (fastest first):")
    for x in ranks:
        verdict = "agree" if x["agree"] else ("DISAGREE (only ncu ties swapped)" if x["agree_up_to_ties"] else "DISAGREE")
        print(f"  {x['definition']} [{x['axes']}] ({x['uuid'] if len(x['uuid']) <= 24 else x['uuid'][:8]}): ncu {x['ncu_order']}; ours {x['ours_orders']} {verdict}")
    agree = sum(x["agree"] for x in ranks)
    agree_ties = sum(x["agree_up_to_ties"] for x in ranks)
    print("\nsummary")
    if not ncu_ran:
        print("  ncu did not run (not on PATH, --no-ncu, or it failed): no comparison")
    print(f"  within 10% or 1 us of ncu: {n_within}/{n_points} points")
    print(f"  ranking agrees with ncu: {agree}/{len(ranks)} workloads ({agree_ties}/{len(ranks)} counting swaps of "
          "solutions within 10%/1 us of each other under ncu as ties)")
    failed = [r for r in rows if any(s != "PASSED" for s in r["statuses"])]
    if failed:
        print(f"  evaluations not PASSED: {len(failed)} (definition, solution, workload) points; first log per solution:")
        first = {}
        for r in failed:
            first.setdefault((r["definition"], r["solution"]), r)
        for r in list(first.values())[:8]:
            print(f"    {r['definition']} / {r['solution']} [{r['axes']}]: {r['statuses']}: {(r.get('log') or '')[-300:]!r}")
    return {"within": n_within, "points": n_points, "rank_agree": agree, "rank_total": len(ranks), "rankings": ranks}


# ----------------------------------------------------------------------------- self-test (CPU)
_SYNTH_CSV = '''==PROF== Connected to process 1234
==PROF== Profiling "spin_kernel": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1234","python","h","spin_kernel(long)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,002,336"
"1","1234","python","h","_decode_kernel","1","7","(128, 1, 1)","(8, 32, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","4,000"
"2","1234","python","h","_decode_kernel","1","7","(128, 1, 1)","(8, 32, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","4,200"
"3","1234","python","h","_decode_kernel","1","7","(128, 1, 1)","(8, 32, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","3,900"
"4","1234","python","h","spin_kernel(long)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000,000"
"5","1234","python","h","void at::native::gather_kernel<int>(float*)","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","2.5"
"6","1234","python","h","ampere_bf16_gemm","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","10"
"7","1234","python","h","void at::native::gather_kernel<int>(float*)","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","2.5"
"8","1234","python","h","ampere_bf16_gemm","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","12"
"9","1234","python","h","void at::native::gather_kernel<int>(float*)","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.0025"
"10","1234","python","h","ampere_bf16_gemm","1","7","(128, 1, 1)","(4, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","11"
"11","1234","python","h","spin_kernel(long)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000,000"
"12","1234","python","h","bad_kernel","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","500"
"13","1234","python","h","spin_kernel(long)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,000,000"
"14","1234","python","h","odd_kernel","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","3000"
"15","1234","python","h","odd_kernel","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","3000"
==PROF== Disconnected from process 1234
'''


def self_test() -> int:
    calls = 3
    sections = [{"uuid": "w1", "ok": True}, {"uuid": "w2", "ok": True}, {"uuid": "w3", "ok": False}, {"uuid": "w4", "ok": True}]
    res, warns = parse_ncu(_SYNTH_CSV, sections, calls)
    checks = []

    def expect(what: str, cond: bool) -> None:
        checks.append((what, cond))
        print(f"  {'ok  ' if cond else 'FAIL'} {what}")

    print("self-test: ncu CSV parser on a synthetic report")
    expect("w1: 1 kernel/call, median of 4.0/4.2/3.9 us = 4.0", res.get("w1", {}).get("kernels_per_call") == 1
           and abs(res["w1"]["us"] - 4.0) < 1e-9)
    expect("w2: 2 kernels/call summed (ns, us, ms units): median of 12.5/14.5/13.5 = 13.5",
           res.get("w2", {}).get("kernels_per_call") == 2 and abs(res["w2"]["us"] - 13.5) < 1e-9)
    expect("w2 kernel names shortened", res.get("w2", {}).get("kernel", "").startswith("void at::native::gather_kernel<int>"))
    expect("w3 (broken section) left out, later sections stay aligned", "w3" not in res and "w4" in res)
    expect("w4: 2 kernels for 3 calls -> mean per call 2.0 us, warned", abs(res.get("w4", {}).get("us", 0) - 2.0) < 1e-9
           and any("not a multiple" in w for w in warns))
    res2, warns2 = parse_ncu(_SYNTH_CSV, sections[:2], calls)
    expect("more markers than manifest sections: warned, matched ones kept", set(res2) == {"w1", "w2"}
           and any("marker sections" in w for w in warns2))
    expect("no CSV -> empty, warned", parse_ncu("==PROF== nothing\n", sections, calls)[0] == {})
    expect("_to_us units", _to_us("1,500", "nsecond") == 1.5 and _to_us("2", "msecond") == 2000 and _to_us("3", "usecond") == 3)
    expect("within 10% or 1 us", within(10.9, 10.0) and within(1.9, 1.0) and not within(12.0, 10.0))
    expect("spread picks smallest, largest and between", spread(list(range(10)), 4) == [0, 3, 6, 9] and spread([1, 2], 4) == [1, 2])

    print("\nself-test: table and ranking on synthetic rows")
    rows = [
        {"definition": "gqa_paged_decode_x", "solution": "torch", "uuid": "w1", "axes": "batch_size=1", "size": 1,
         "ours_us": [30.0, 31.0], "statuses": ["PASSED", "PASSED"], "ncu_us": 20.0, "kernels_per_call": 9},
        {"definition": "gqa_paged_decode_x", "solution": "triton", "uuid": "w1", "axes": "batch_size=1", "size": 1,
         "ours_us": [5.0, 5.1], "statuses": ["PASSED", "PASSED"], "ncu_us": 4.6, "kernels_per_call": 1},
        {"definition": "gqa_paged_decode_x", "solution": "torch", "uuid": "w2", "axes": "batch_size=64", "size": 2,
         "ours_us": [49.0, 48.5], "statuses": ["PASSED", "PASSED"], "ncu_us": 48.0, "kernels_per_call": 9},
        {"definition": "gqa_paged_decode_x", "solution": "triton", "uuid": "w2", "axes": "batch_size=64", "size": 2,
         "ours_us": [48.0, 49.5], "statuses": ["PASSED", "PASSED"], "ncu_us": 47.0, "kernels_per_call": 1},
        {"definition": "gqa_paged_decode_x", "solution": "broken", "uuid": "w2", "axes": "batch_size=64", "size": 2,
         "ours_us": [None, None], "statuses": ["RUNTIME_ERROR", "RUNTIME_ERROR"], "ncu_us": None, "log": "boom"},
    ]
    s = report(rows, 2, True)
    expect("points: 4, within: 3 (torch at batch 1 is host-bound)", s["points"] == 4 and s["within"] == 3)
    expect("ranking: w1 agrees, w2 disagrees in run 2 (a tie under ncu)", s["rank_total"] == 2 and s["rank_agree"] == 1
           and s["rankings"][1]["agree_up_to_ties"])
    bad = [w for w, c in checks if not c]
    print(f"\nself-test: {len(checks) - len(bad)}/{len(checks)} passed")
    return 1 if bad else 0


# ----------------------------------------------------------------------------- main
def eval_config(args: argparse.Namespace, work: Path, cache_dir: Path, device: str, definition: Any):
    """EvalConfig from config.yaml's settings for a CUDA device (as `flashinfer-bench run` uses)."""
    import yaml

    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.pipeline.settings import evaluation_for

    cfg = yaml.safe_load(Path(args.config).read_text()) if args.config else {}
    ev = evaluation_for(cfg or {}, definition.name, "cpu" if device == "cpu" else "cuda", definition.op_type)
    kw = {k: v for k, v in ev.items() if k in EvalConfig.model_fields}
    kw.update(device=device, worker_dir=str(work / "w"), cache_dir=str(cache_dir), idle_timeout_s=300)
    if args.max_time_s:
        kw["max_time_s"] = args.max_time_s
    return EvalConfig(**kw)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(REPO / "dataset"))
    ap.add_argument("--definitions", nargs="+", default=DEFAULT_DEFINITIONS, metavar="NAME",
                    help="definitions to measure ('all': every definition with solutions and workloads)")
    ap.add_argument("--solutions", nargs="+", default=None, metavar="NAME", help="only these solutions (default: all)")
    ap.add_argument("--max-workloads", type=int, default=4, help="per definition, spread over sizes (default 4)")
    ap.add_argument("--add-reference", action="store_true",
                    help="also measure the definition's reference as a solution (reference_as_solution_<def>)")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--config", default=str(REPO / "config.yaml"), help="evaluation settings (default: the repo's config.yaml)")
    ap.add_argument("--max-time-s", type=float, default=None, help="EvalConfig.max_time_s (default: the config's)")
    ap.add_argument("--out", default=os.environ.get("OUT"))
    ap.add_argument("--no-ncu", action="store_true")
    ap.add_argument("--ncu-calls", type=int, default=5, help="profiled calls per (solution, workload)")
    ap.add_argument("--ncu-timeout", type=float, default=300.0, help="seconds per ncu process (one per definition and solution)")
    ap.add_argument("--self-test", action="store_true", help="CPU only: test the ncu CSV parser, ranking and table")
    ap.add_argument("--ncu-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--jobs", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--manifest", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.ncu_child:
        return ncu_child(Path(args.dataset), Path(args.cache_dir), Path(args.jobs), Path(args.manifest), args.ncu_calls,
                         args.device)
    # SIGTERM (a `timeout`, a cancelled job) unwinds like Ctrl-C: the table of what was measured is
    # printed, the worker stopped, the temp dir removed
    signal.signal(signal.SIGTERM, _interrupt)

    work = Path(tempfile.mkdtemp(prefix="fib-real-ncu-"))
    try:
        return measure(args, work)
    finally:
        # our worker (its own worker_dir) stops now rather than idling; then the temp dir goes
        try:
            from flashinfer_bench.bench.client import shutdown_worker
            from flashinfer_bench.bench.config import EvalConfig

            shutdown_worker(args.device, EvalConfig(device=args.device, worker_dir=str(work / "w")))
        except Exception:  # noqa: BLE001 - best effort
            pass
        for _ in range(5):  # the exiting worker may still be removing its files
            shutil.rmtree(work, ignore_errors=True)
            if not work.exists():
                break
            time.sleep(0.5)


def measure(args: argparse.Namespace, work: Path) -> int:
    from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker, warm_worker
    from flashinfer_bench.bench.loader import build_solution
    from flashinfer_bench.data import TraceSet

    t_start = time.perf_counter()
    dataset = Path(args.dataset).resolve()
    cache_dir = Path(args.cache_dir) if args.cache_dir else work / "cache"
    ts = TraceSet.from_path(dataset)
    plan, notes = select(ts, args.definitions, args.max_workloads, args.add_reference, dataset)
    if args.solutions:  # only these solutions (a definition left with none is dropped)
        plan = [(d, [s for s in sols if s.name in args.solutions], wls) for d, sols, wls in plan]
        plan = [x for x in plan if x[1]]
    print(f"dataset {dataset}: {len(ts.definitions)} definitions, {len(ts.all_solutions())} solutions")
    for n in notes:
        print(f"  note: {n}")
    if not plan:
        print("nothing to measure")
        return 1
    for d, sols, wls in plan:
        print(f"  {d.name}: solutions {[s.name for s in sols]}; workloads {[fmt_axes(d, w) for w in wls]}")

    rows: Dict[Key, Dict[str, Any]] = {}
    traces: List[str] = []
    cfgs = {}
    ready: Dict[str, Any] = {}
    try:
        for d, _, _ in plan:
            cfgs[d.name] = eval_config(args, work, cache_dir, args.device, d)
        any_cfg = next(iter(cfgs.values()))
        t0 = time.perf_counter()
        info = warm_worker(args.device, any_cfg) or {}
        ready = info.get("ready") or {}
        print(f"worker and runner up in {time.perf_counter() - t0:.1f} s: {json.dumps(ready.get('env'))[:300]}")
    except Exception:  # noqa: BLE001 - evaluations then report their own failures
        print(f"worker start failed:\n{traceback.format_exc()[-1500:]}")

    builds: Dict[Tuple[str, str], Dict[str, Any]] = {}
    for d, sols, wls in plan:
        for sol in sols:
            t0 = time.perf_counter()
            try:
                builds[d.name, sol.name] = build_solution(sol, d, cache_dir)
            except Exception:  # noqa: BLE001
                builds[d.name, sol.name] = {"status": "COMPILE_ERROR", "log": traceback.format_exc()}
            print(f"build {sol.name}: {builds[d.name, sol.name].get('status')} in {time.perf_counter() - t0:.1f} s")
            for wl in wls:
                rows[d.name, sol.name, wl.uuid] = {
                    "definition": d.name, "solution": sol.name, "language": sol.spec.language.value, "uuid": wl.uuid,
                    "axes": fmt_axes(d, wl), "size": workload_size(d, wl.axes), "ours_us": [], "statuses": [],
                    "ref_us": [], "flags": [], "wall_s": [],
                }

    def evaluate(d: Any, sol: Any, wl: Any) -> Dict[str, Any]:
        t0 = time.perf_counter()
        out: Dict[str, Any] = {}
        try:
            cfg = cfgs.get(d.name)
            if cfg is None:
                raise RuntimeError("no evaluation config (see above)")
            tr = evaluate_via_worker(d, sol, wl, builds[d.name, sol.name], cfg, dataset_root=dataset)
        except Exception:  # noqa: BLE001 - one failure must not lose the table
            return {"status": "CLIENT_ERROR", "log": traceback.format_exc()[-1500:], "wall_s": time.perf_counter() - t0}
        out["wall_s"] = time.perf_counter() - t0
        ev = tr.evaluation
        out["status"] = ev.status.value
        out["trace"] = tr.model_dump_json()
        if ev.performance is not None:
            x = (ev.correctness.extra if ev.correctness is not None else None) or {}
            out.update(us=ev.performance.latency_ms * 1e3, ref_us=(ev.performance.reference_latency_ms or 0) * 1e3 or None,
                       flags=x.get("flags") or [], check=(x.get("check") or {}).get("kind") if isinstance(x.get("check"), dict) else None)
        else:
            out["log"] = (ev.log or "")[-1500:]
        return out

    ncu_ran = False
    try:
        jobs = [(d, sol, wl) for d, sols, wls in plan for sol in sols for wl in wls]
        t0 = time.perf_counter()
        seen = set()
        for d, sol, wl in jobs:  # warm-up: loads each solution, JIT caches, reference outputs
            if (d.name, sol.name) not in seen:
                seen.add((d.name, sol.name))
                r = evaluate(d, sol, wl)
                print(f"warm-up {sol.name}: {r.get('status')} {r.get('wall_s', 0):.2f} s")
        print(f"warm-up done in {time.perf_counter() - t0:.1f} s")
        for k in range(args.runs):
            t0 = time.perf_counter()
            for d, sol, wl in jobs:
                r = evaluate(d, sol, wl)
                row = rows[d.name, sol.name, wl.uuid]
                row["ours_us"].append(r.get("us"))
                row["statuses"].append(r.get("status"))
                row["ref_us"].append(r.get("ref_us"))
                row["wall_s"].append(r.get("wall_s"))
                row["flags"] = sorted(set(row["flags"]) | set(r.get("flags") or []))
                if r.get("check"):
                    row["check"] = r["check"]
                if r.get("trace"):
                    traces.append(r["trace"])
                if r.get("status") != "PASSED":
                    row["log"] = r.get("log", "")
                    print(f"  run {k + 1} {sol.name} [{row['axes']}]: {r.get('status')}\n{r.get('log', '')[-600:]}")
            print(f"run {k + 1}: {len(jobs)} evaluations in {time.perf_counter() - t0:.1f} s")
        try:
            shutdown_worker(args.device, next(iter(cfgs.values())))
        except Exception:  # noqa: BLE001
            pass

        if not args.no_ncu and shutil.which("ncu"):
            for d, sols, wls in plan:
                for sol in sols:
                    if builds[d.name, sol.name].get("status") != "OK":
                        continue
                    try:
                        res, msgs = run_ncu_one(dataset, cache_dir, d.name, sol.name, [w.uuid for w in wls], args.ncu_calls,
                                                args.ncu_timeout, work, args.device)
                    except Exception:  # noqa: BLE001 - keep the table
                        res, msgs = {}, [f"[ncu] {d.name} / {sol.name} failed:\n{traceback.format_exc()[-1500:]}"]
                    for m in msgs:
                        print(m)
                    ncu_ran = ncu_ran or bool(res)
                    for wl in wls:
                        row = rows[d.name, sol.name, wl.uuid]
                        got = res.get(wl.uuid)
                        if got:
                            row.update(ncu_us=got["us"], kernels_per_call=got["kernels_per_call"], kernel=got["kernel"],
                                       ncu_per_call_us=got["per_call_us"])
                        else:
                            row["ncu_note"] = "no measurement"
        elif not args.no_ncu:
            print("[ncu] not on PATH: no comparison")

    except KeyboardInterrupt as e:
        print(f"\ninterrupted ({e or 'Ctrl-C'}): the table shows what was measured")

    summary = report(list(rows.values()), args.runs, ncu_ran)
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "real_families_vs_ncu.json").write_text(json.dumps(
            {"rows": list(rows.values()), "summary": summary, "notes": notes, "worker": ready}, indent=1, default=str))
        (out / "real_families_traces.jsonl").write_text("".join(t + "\n" for t in traces))
        print(f"wrote {out / 'real_families_vs_ncu.json'} and real_families_traces.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
