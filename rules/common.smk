# Parse-time planning: scan the dataset once (no torch) and expose the job tables to the rules.
import gc
import os
import sys
from pathlib import Path

from flashinfer_bench.pipeline.plan import benchmark_params, build_plan, canonical, definition_digest, trace_file
from flashinfer_bench.pipeline.settings import toolchain_fingerprint

DATASET = Path(config["dataset"]).resolve()
RESULTS = config["results"]
PLAN = build_plan(
    DATASET,
    device=config["device"],
    definitions=config.get("definitions") or None,
    solutions=config.get("solutions") or None,
    cpu_limits=config.get("cpu", {}),
    config=config,
)
DEVICE = PLAN.device
TOOLCHAIN = toolchain_fingerprint()
for _p in PLAN.problems:
    print(f"[flashinfer-bench] {_p.level}: {_p}", file=sys.stderr)
if not DATASET.is_dir():
    raise WorkflowError(f"dataset directory {DATASET} does not exist (config key 'dataset')")
for _p in PLAN.problems:
    if _p.path in ("--definitions", "--solutions"):
        raise WorkflowError(str(_p))

JOBS_BY_DEF = PLAN.jobs_by_definition()
DEF_DIGEST = {n: definition_digest(d) for n, d in PLAN.definitions.items()}
SKIPPED = [s.__dict__ for s in PLAN.skipped]
# Everything a benchmark job needs, computed once here: Snakemake calls each params function of
# each job (and inspects its signature) while building the DAG, so the rule has one params
# function that looks its job up in this table (DAG construction at 10,000 jobs: issue 8).
BENCH_PARAMS = benchmark_params(PLAN, config, DEF_DIGEST, RESULTS)
# Building a DAG of 10,000 jobs makes millions of objects; Python's cyclic GC rescans the heap
# ever more often as it grows (~15% of DAG construction). The plan lives for the whole run:
# freeze it out of the collector and collect the youngest generation less often.
gc.freeze()
gc.set_threshold(max(gc.get_threshold()[0], 20000), 10, 10)
# A GPU each on a GPU box. On the CPU one worker evaluates one job at a time, so a second
# concurrent benchmark job would only hold a core while it waits: `cpu_worker` (limited to 1 by
# the Snakefile for local runs) leaves the other cores to compile and validation jobs.
BENCH_RESOURCES = {"gpu": 1} if DEVICE.startswith("cuda") else {"cpu_worker": 1}
# Scheduling order: builds that benchmark jobs wait for, then benchmarks, then the rest (builds of
# CUDA solutions on a CPU machine, compiled only; validation reports) on the cores left free.
BENCHMARKED = {j.solution for j in PLAN.jobs}


def names_regex(names):
    """A wildcard constraint matching exactly these names (nothing when empty)."""
    import re

    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


wildcard_constraints:
    definition="[^/]+",
    solution="[^/]+",
    uuid="[^/]+",


PIPELINE_PKG = Path(workflow.basedir) / "flashinfer_bench" / "pipeline"
if not (PIPELINE_PKG / "thin_client.py").exists():  # installed wheel: the package holds it
    import flashinfer_bench.pipeline as _pl

    PIPELINE_PKG = Path(_pl.__file__).parent
# -S: no site-packages until a job needs them (both scripts are stdlib-only on their fast path)
THIN_CLIENT_CMD = f"{sys.executable} -S {PIPELINE_PKG / 'thin_client.py'}"
CACHE_DIR = config.get("cache_dir") or ""
# validate/compile/aggregate/report jobs: a plain command, not Snakemake's script: wrapper
JOB_CMD = f"{sys.executable} -S {PIPELINE_PKG / 'job_main.py'}"
# What the report lists besides traces (skipped pairs, plan problems); written by onstart, as it
# can be too long for a command line.
PLAN_NOTES = f"{RESULTS}/plan/notes.json"


def rel(path):
    """Dataset-relative paths in params: moving the dataset directory re-runs nothing."""
    return str(Path(path).relative_to(DATASET))


def benchmark_job_params(wildcards):
    return BENCH_PARAMS[wildcards.definition, wildcards.solution, wildcards.uuid]


def _signature_once(func):
    """Snakemake inspects a params/input function's signature on every call (3 times a job);
    hand it the signature computed once (its own hook for functions with dynamic signatures)."""
    try:
        import inspect

        from snakemake.common import overwrite_function_params

        overwrite_function_params(func, inspect.signature(func).parameters)
    except ImportError:  # another Snakemake version: correct, only slower
        pass
    return func


_signature_once(benchmark_job_params)


def trace_path(job):
    return trace_file(RESULTS, job)
