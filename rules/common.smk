# Parse-time planning: scan the dataset once (no torch) and expose the job tables to the rules.
import gc
import os
import sys
from pathlib import Path

from snakemake_interface_executor_plugins.settings import DeploymentMethod

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


# What the jobs' command lines take from their environment (`$FIB_RUN_*` in each rule's shell):
# not params, so that moving the dataset or the artifact cache re-runs nothing, and not Snakefile
# variables, which `snakemake --lint` flags in a shell command. A cluster job's Snakemake parses
# this file again and sets the same values. Jobs run the Python that runs Snakemake, with -S
# (site-packages only when a job needs them: scripts/_job.py), unless `--sdm conda` has each
# job activate the rules' conda environment (envs/flashinfer-bench.yaml).
_conda = workflow.deployment_settings is not None and DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
os.environ["FIB_RUN_PYTHON"] = "python" if _conda else sys.executable
os.environ["FIB_RUN_SCRIPTS"] = str(Path(workflow.basedir) / "scripts")
os.environ["FIB_RUN_DATASET"] = str(DATASET)
os.environ["FIB_RUN_CACHE"] = config.get("cache_dir") or ""


envvars:
    "FIB_RUN_PYTHON",
    "FIB_RUN_SCRIPTS",
    "FIB_RUN_DATASET",
    "FIB_RUN_CACHE",


# The report and validation jobs read the plan's notes (skipped pairs, problems) from this file,
# written by onstart: too long for a command line.
PLAN_NOTES = f"{RESULTS}/plan/notes.json"
PROBLEMS_BY_FILE = PLAN.problems_by_file()


def rel(path):
    """Dataset-relative paths in params: moving the dataset directory re-runs nothing."""
    return str(Path(path).relative_to(DATASET))


def benchmark_job_params(wildcards):
    return BENCH_PARAMS[wildcards.definition, wildcards.solution, wildcards.uuid]


def compile_params():
    """The compile rules' params: what re-runs a build (content hash, definition digest,
    toolchain) and the dataset-relative files the job reads."""
    return dict(
        content_hash=lambda wc: PLAN.solutions[wc.solution].content_hash(),
        definition_digest=lambda wc: DEF_DIGEST[PLAN.solutions[wc.solution].definition],
        toolchain=TOOLCHAIN,
        solution_file=lambda wc: rel(PLAN.solution_files[wc.solution]),
        definition_file=lambda wc: rel(PLAN.definition_files[PLAN.solutions[wc.solution].definition]),
        device=DEVICE,
    )


def trace_path(job):
    return trace_file(RESULTS, job)
