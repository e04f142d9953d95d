"""The real FlashInfer Trace families on the CPU: validate, plan and run the public-dataset sample.

    python benchmarks/real_families_cpu.py [--sample /work/shared/real-sample] [--workloads-per-def N]
                                           [--synth-workloads] [--keep] [--cores N]

Per definition of the sample (paged/ragged GQA, MLA, DSA, fp8 MoE, sampling, GDN, GEMM, RMSNorm):

1. `flashinfer-bench validate --local SAMPLE --format json`: errors other than missing blobs
   (must be 0) and missing-blob errors (the sample ships no safetensors files);
2. `build_plan(SAMPLE, "cpu", config={"missing_blobs": "generate", "cpu": <config.yaml's cpu>})`:
   is the definition planned, how many of its workloads;
3. an actual CPU run: a temp copy of the sample (definitions, the N smallest workloads per
   definition by total tensor elements) plus one solution per definition, the definition's own
   reference as a value-returning Python solution (`reference_as_solution_<definition>`: solution
   names are dataset-wide unique), then `flashinfer-bench run --local TMP --device cpu
   --missing-blobs generate --results TMP_RESULTS --ignore-dataset-errors` (a subprocess; its
   output goes to TMP/run.log). The traces under TMP/traces give per definition #PASSED /
   #evaluated, the other statuses with the first 200 characters of the log, and the check that ran
   (`evaluation.correctness.extra.check.kind`); the run's plan notes give the pairs skipped by the
   CPU size limits (the real fp8 MoE, hidden 7168, is expected there: its weights alone exceed
   cpu.max_bytes).

`--synth-workloads` adds one small workload (axes only, inputs generated) to each definition with
no workload the CPU can run (DSA, GDN, sampling have none in the sample; MLA's caches are ~1M pages,
over the CPU limits), so their generators and checks run too.
Prints a markdown table, the run's wall time and exit status. The temp dir (under /tmp/rfb) is
removed unless --keep.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DEFAULT_SAMPLE = Path("/work/shared/real-sample")
SCRATCH = Path("/tmp/rfb")
SOLUTION_AUTHOR = "bench"
MISSING_BLOB = re.compile(r"not found under the dataset root|safetensors file .* (is )?missing|no such (blob|file)", re.I)

# --synth-workloads: small axes per op type (a definition takes the names it has; others get 4),
# chosen so that generated inputs satisfy the definitions' constraints (len_indptr = batch + 1,
# distinct page ids: num_kv_indices <= num_pages, causal: kv >= q per request).
SYNTH_AXES: Dict[str, Dict[str, int]] = {
    # top-k 2048 slots over a 256-page cache: rows padded with -1 (the generator's and reference's
    # convention); a bigger cache exceeds cpu.max_flops by the CPU limits' axis-product estimate
    "dsa_paged": {"num_tokens": 1, "num_pages": 256},
    "gdn": {"batch_size": 2},
    "sampling": {"batch_size": 1},
    "mla_paged": {"batch_size": 2, "len_indptr": 3, "num_pages": 64, "num_kv_indices": 48},
    "gqa_paged": {"batch_size": 2, "len_indptr": 3, "total_q": 8, "num_pages": 64, "num_kv_indices": 48},
    "gqa_ragged": {"len_indptr": 3, "total_q": 8, "total_kv": 16},
    "moe": {"seq_len": 4},
    "gemm": {"M": 4},
    "rmsnorm": {"batch_size": 4},
}


def load_config() -> Dict[str, Any]:
    import yaml

    return yaml.safe_load((REPO / "config.yaml").read_text())


def cell(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ").replace("\r", " ")


# ----------------------------------------------------------------------------- validate
def validate(sample: Path) -> Tuple[Dict[str, Counter], List[str], int]:
    """Per definition: Counter(other=errors other than missing blobs, blob=missing-blob errors,
    warning=warnings); the text of every error other than a missing blob; validate's exit status."""
    p = subprocess.run([sys.executable, "-m", "flashinfer_bench", "validate", "--local", str(sample), "--format", "json"],
                       capture_output=True, text=True)
    per_def: Dict[str, Counter] = defaultdict(Counter)
    stray: List[str] = []
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        stray.append(f"validate exit {p.returncode}, no JSON: {(p.stdout + p.stderr)[-500:]}")
        return per_def, stray, p.returncode
    for ds in report.get("datasets", []):
        for prob in ds.get("problems", []):
            path = Path(prob.get("path") or "")
            name = path.stem if path.suffix in (".json", ".jsonl") else None
            if prob["level"] != "error":
                if name:
                    per_def[name]["warning"] += 1
                continue
            blob = (prob.get("field") or "").endswith(".path") and bool(MISSING_BLOB.search(prob.get("message", "")))
            if name is None:
                stray.append(prob.get("text", str(prob)))
            else:
                per_def[name]["blob" if blob else "other"] += 1
                if not blob:
                    stray.append(prob.get("text", str(prob))[:300])
    return per_def, stray, p.returncode


# ----------------------------------------------------------------------------- temp dataset
def workload_size(d: Any, axes: Dict[str, int]) -> float:
    """Total elements of every tensor input and output (inf when the axes do not fit)."""
    try:
        var = {k: v for k, v in axes.items() if k in d.var_axes}
        shapes = list(d.input_shapes_by_name(var).values()) + list(d.output_shapes_by_name(var).values())
    except Exception:  # noqa: BLE001 - a bad workload sorts last; validate reports it
        return math.inf
    return float(sum(math.prod(s) for s in shapes if s is not None))


def solution_json(d: Any) -> Dict[str, Any]:
    return {
        "name": f"reference_as_solution_{d.name}",
        "definition": d.name,
        "author": SOLUTION_AUTHOR,
        "description": "The definition's reference implementation as a value-returning PyTorch solution.",
        "spec": {
            "language": "python",
            "target_hardware": ["cuda"],
            "entry_point": "main.py::run",
            "dependencies": [],
            "destination_passing_style": False,
        },
        "sources": [{"path": "main.py", "content": d.reference}],
    }


def synth_workload(d: Any) -> Dict[str, Any]:
    axes = dict(SYNTH_AXES.get(d.op_type, {}))
    axes = {a: axes.get(a, 4) for a in d.var_axes}
    if "len_indptr" in axes and "batch_size" in axes:
        axes["len_indptr"] = axes["batch_size"] + 1
    return {"definition": d.name, "solution": None, "evaluation": None,
            "workload": {"uuid": f"synth-{d.name}", "axes": axes, "inputs": {}}}


def add_synth_workloads(tmp: Path, info: Dict[str, Dict[str, Any]], names: List[str]) -> None:
    """Append one small axes-only workload to each named definition's workload file."""
    from flashinfer_bench.data import Definition

    for f in sorted((tmp / "definitions").rglob("*.json")):
        try:
            d = Definition.model_validate(json.loads(f.read_text()))
        except Exception:  # noqa: BLE001
            continue
        if d.name not in names:
            continue
        wl = synth_workload(d)
        out = tmp / "workloads" / d.op_type / f"{d.name}.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as fh:
            fh.write(json.dumps(wl) + "\n")
        info[d.name]["synth"] = True
        info[d.name]["kept"].append((wl["workload"]["axes"], workload_size(d, wl["workload"]["axes"])))


def build_temp_dataset(sample: Path, tmp: Path, per_def: int) -> Dict[str, Dict[str, Any]]:
    """Copy definitions, keep the `per_def` smallest workloads of each, add the reference-as-solution.
    Returns per definition: kept workload axes, total workloads in the sample, synthesized or not."""
    from flashinfer_bench.data import Definition

    info: Dict[str, Dict[str, Any]] = {}
    defs: Dict[str, Any] = {}
    for f in sorted((sample / "definitions").rglob("*.json")):
        rel = f.relative_to(sample)
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(f, tmp / rel)
        try:
            d = Definition.model_validate(json.loads(f.read_text()))
        except Exception as e:  # noqa: BLE001 - validate reports it; nothing to run
            print(f"note: {rel} does not load ({type(e).__name__}); no solution added")
            continue
        defs[d.name] = d
        info[d.name] = {"op_type": d.op_type, "kept": [], "total": 0, "synth": False}
        sdir = tmp / "solutions" / SOLUTION_AUTHOR / d.op_type / d.name
        sdir.mkdir(parents=True, exist_ok=True)
        sol = solution_json(d)
        (sdir / f"{sol['name']}.json").write_text(json.dumps(sol, indent=2))
    for f in sorted((sample / "workloads").rglob("*.jsonl")):
        lines = [ln for ln in f.read_text().splitlines() if ln.strip()]
        ranked = []
        for i, ln in enumerate(lines):
            try:
                obj = json.loads(ln)
                d = defs.get(obj.get("definition"))
                size = workload_size(d, obj["workload"]["axes"]) if d is not None else math.inf
            except (json.JSONDecodeError, KeyError, TypeError):
                obj, size = None, math.inf
            ranked.append((size, i, ln, obj))
        ranked.sort(key=lambda x: (x[0], x[1]))
        keep = sorted(ranked[:per_def], key=lambda x: x[1])  # file order among the kept
        out = tmp / f.relative_to(sample)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(ln + "\n" for _, _, ln, _ in keep))
        for size, _, _, obj in ranked:
            if obj and obj.get("definition") in info:
                info[obj["definition"]]["total"] += 1
        for size, _, _, obj in keep:
            if obj and obj.get("definition") in info:
                info[obj["definition"]]["kept"].append((obj["workload"]["axes"], size))
    return info


# ----------------------------------------------------------------------------- run + traces
def run_pipeline(tmp: Path, results: Path, log: Path, cores: Optional[int], env: Dict[str, str], echo: bool,
                 def_overrides: Optional[Dict[str, Any]] = None) -> Tuple[int, float]:
    cmd = [sys.executable, "-m", "flashinfer_bench", "run", "--local", str(tmp), "--device", "cpu",
           "--missing-blobs", "generate", "--results", str(results), "--ignore-dataset-errors"]
    if cores:
        cmd += ["--cores", str(cores)]
    if def_overrides:
        # Not `-- --config definition_evaluation=...`: Snakemake reads nested values as strings
        # and the package coerces only two levels deep (check.samples stays '128', a config
        # error). A second --configfile replaces the CLI's own (argparse `store`), so this one
        # repeats what the CLI writes (.flashinfer-bench-run.json) and adds the overrides.
        cfg_file = results.parent / "run-config.json"
        cfg_file.write_text(json.dumps({
            "dataset": str(tmp), "results": str(results), "save_results": True, "device": "cpu",
            "missing_blobs": "generate", "definition_evaluation": def_overrides,
        }, indent=1))
        cmd += ["--", "--configfile", str(cfg_file)]
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                cwd=str(tmp.parent), env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            fh.flush()
            if echo:
                print("  | " + line.rstrip(), flush=True)
        rc = proc.wait()
    return rc, time.perf_counter() - t0


def read_traces(tmp: Path) -> Dict[str, List[Dict[str, Any]]]:
    out: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for f in sorted((tmp / "traces").rglob("*.jsonl")):
        for ln in f.read_text().splitlines():
            if ln.strip():
                try:
                    t = json.loads(ln)
                except json.JSONDecodeError:
                    continue
                out[t.get("definition", f.stem)].append(t)
    return out


def read_skipped(results: Path) -> Tuple[Optional[List[Dict[str, Any]]], List[str]]:
    notes = results / "plan" / "notes.json"
    if not notes.is_file():
        return None, []
    try:
        obj = json.loads(notes.read_text())
    except json.JSONDecodeError:
        return None, []
    return obj.get("skipped", []), obj.get("problems", [])


def check_kind(t: Dict[str, Any]) -> Optional[str]:
    ev = t.get("evaluation") or {}
    x = ((ev.get("correctness") or {}).get("extra") or {}).get("check")
    if isinstance(x, dict):
        return x.get("kind")
    return x if isinstance(x, str) else None


def fmt_axes(axes: Dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in axes.items())


# ----------------------------------------------------------------------------- main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", default=str(DEFAULT_SAMPLE), help="the real-sample dataset (default: %(default)s)")
    ap.add_argument("--workloads-per-def", type=int, default=2, metavar="N",
                    help="keep the N smallest workloads per definition (total tensor elements; default 2)")
    ap.add_argument("--synth-workloads", action="store_true",
                    help="add one small axes-only workload (inputs generated) to each definition with no workload "
                    "that fits the CPU (DSA, GDN, sampling: none in the sample; MLA: every cache is ~1M pages)")
    ap.add_argument("--sampling-samples", type=int, default=128, metavar="N",
                    help="with --synth-workloads: draws per row of the sampling check on the synthesized sampling "
                    "workload (default %(default)s; 0 = the shipped 10000, which times out on a CPU)")
    ap.add_argument("--keep", action="store_true", help="keep the temp dataset, results and log")
    ap.add_argument("--cores", type=int, default=None, help="passed to flashinfer-bench run (default: its own)")
    ap.add_argument("--echo", action="store_true", help="also print the run's output as it streams")
    args = ap.parse_args()

    sample = Path(args.sample).resolve()
    if not (sample / "definitions").is_dir():
        print(f"error: {sample} has no definitions/", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    cfg = load_config()
    cpu_cfg = cfg.get("cpu") or {}

    from flashinfer_bench.data import Definition
    from flashinfer_bench.pipeline.plan import build_plan

    # 1. validate
    val, stray, val_rc = validate(sample)
    # 2. plan the sample as a run would (no solutions in the sample: workloads only)
    plan_cfg = {"missing_blobs": "generate", "cpu": cpu_cfg}
    # build_plan reads the CPU size limits from `cpu_limits` (the Snakefile passes config["cpu"]
    # there), not from config["cpu"]: pass both.
    plan = build_plan(sample, "cpu", cpu_limits=cpu_cfg, config=plan_cfg)
    names: Dict[str, str] = {}
    for f in sorted((sample / "definitions").rglob("*.json")):
        try:
            d = Definition.model_validate(json.loads(f.read_text()))
            names[d.name] = d.op_type
        except Exception:  # noqa: BLE001
            names[f.stem] = f.parent.name + " (does not load)"

    # 3. the CPU run
    SCRATCH.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="real-families-", dir=SCRATCH))
    tmp, results, log = work / "dataset", work / "results", work / "run.log"
    tmp.mkdir()
    info = build_temp_dataset(sample, tmp, args.workloads_per_def)
    tmp_plan = build_plan(tmp, "cpu", cpu_limits=cpu_cfg, config=plan_cfg)
    if args.synth_workloads:
        planned_jobs = {j.definition for j in tmp_plan.jobs}
        add_synth_workloads(tmp, info, [n for n in info if n not in planned_jobs])
        tmp_plan = build_plan(tmp, "cpu", cpu_limits=cpu_cfg, config=plan_cfg)
    env = dict(os.environ)
    # our own worker and cache: other runs on this machine (and other code versions) keep theirs
    env["FIB_WORKER_DIR"] = str(work / "workers")
    env["FIB_CACHE_PATH"] = str(work / "cache")
    env.setdefault("FIB_PRESTART", "0")
    overrides: Dict[str, Any] = {}
    if args.synth_workloads and args.sampling_samples:
        # the statistical sampling check draws `samples` per row through the solution; the real
        # reference sorts a 128256-wide row in Python per row (~0.15 s on this CPU): 10,000 draws
        # would take ~25 min, far over the CPU timeout. Fewer draws, one row.
        for name, inf in info.items():
            if inf.get("synth") and inf["op_type"] == "sampling":
                overrides[name] = {"check": {"kind": "sampling", "samples": args.sampling_samples, "max_rows": 1}}
    rc, wall = run_pipeline(tmp, results, log, args.cores, env, args.echo, overrides)
    traces = read_traces(tmp)
    skipped_run, plan_problems = read_skipped(results)
    skipped = skipped_run if skipped_run is not None else [s.__dict__ for s in tmp_plan.skipped]
    skipped_by_def: Dict[str, List[Dict[str, Any]]] = defaultdict(list)
    for s in skipped:
        skipped_by_def[s["definition"]].append(s)

    # the table
    print()
    print(f"sample {sample}: {len(names)} definitions; validate exit {val_rc}; run on "
          f"{args.workloads_per_def} smallest workloads per definition{' (+ synthesized)' if args.synth_workloads else ''}")
    print()
    print("| definition | op_type | validate errors (not blobs) | missing-blob errors | planned | workloads planned "
          "| run: workloads (axes) | PASSED / evaluated | skipped (CPU limits) | check | other statuses: first 200 chars of log |")
    print("|---|---|---:|---:|:-:|---:|---|---:|---:|---|---|")
    tot_pass = tot_eval = tot_skip = 0
    notes: List[str] = []
    for name in sorted(names):
        v = val.get(name, Counter())
        planned = name in plan.definitions
        n_wl = len(plan.workloads.get(name, {}))
        inf = info.get(name, {"kept": [], "total": 0, "synth": False})
        parts = [fmt_axes(a) for a, _ in inf["kept"]]
        if inf.get("synth"):  # the synthesized workload is the last one
            parts[-1] = "synth " + parts[-1]
        kept = "; ".join(parts) or "none in sample"
        ts = traces.get(name, [])
        statuses = Counter((t.get("evaluation") or {}).get("status", "?") for t in ts)
        n_pass = statuses.get("PASSED", 0)
        checks = sorted({c for c in (check_kind(t) for t in ts) if c})
        sk = skipped_by_def.get(name, [])
        others = []
        for st, n in sorted(statuses.items()):
            if st == "PASSED":
                continue
            first = next(t for t in ts if (t.get("evaluation") or {}).get("status") == st)
            logtxt = ((first.get("evaluation") or {}).get("log") or "").strip()
            others.append(f"{st} x{n}: {logtxt[:200]}")
        if sk:
            notes.append(f"{name}: skipped {len(sk)}: {sk[0]['reason']}")
        tot_pass += n_pass
        tot_eval += len(ts)
        tot_skip += len(sk)
        print(
            f"| {name} | {names[name]} | {v.get('other', 0)} | {v.get('blob', 0)} | {'yes' if planned else 'NO'} | "
            f"{n_wl}/{inf['total']} | {cell(kept)} | {n_pass}/{len(ts)} | {len(sk)} | {', '.join(checks) or '-'} | "
            f"{cell(' ; '.join(others)) or '-'} |"
        )
    print()
    print(f"validate errors other than missing blobs: {len(stray)} (must be 0)")
    for t in stray[:10]:
        print(f"  {t}")
    print(f"run: {tot_pass}/{tot_eval} traces PASSED, {tot_skip} pairs skipped by the CPU limits")
    for n in notes:
        print(f"  {n}")
    for p in plan_problems:
        if "error" in p.lower() and "not found under the dataset root" not in p:
            print(f"  plan problem: {p[:300]}")
    print(f"run wall time: {wall:.1f} s; exit status {rc}" + ("" if rc == 0 else " (NOT 0)"))
    print(f"total {time.perf_counter() - t_start:.1f} s")
    if rc != 0:
        print("--- last 40 lines of the run log ---")
        print("\n".join(log.read_text(errors="replace").splitlines()[-40:]))

    # the run's worker (ours alone: FIB_WORKER_DIR above) would idle out in 120 s; stop it now
    try:
        from flashinfer_bench.bench.client import shutdown_worker
        from flashinfer_bench.bench.config import EvalConfig

        shutdown_worker("cpu", EvalConfig(worker_dir=str(work / "workers"), device="cpu"))
    except Exception:  # noqa: BLE001 - best effort
        pass
    if args.keep:
        print(f"kept {work} (dataset/, results/, run.log)")
    else:
        shutil.rmtree(work, ignore_errors=True)
    ok = not stray and rc == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
