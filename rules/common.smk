# Parse-time planning: scan the dataset once (no torch) and expose the job tables to the rules.
import json
import sys
from pathlib import Path

from flashinfer_bench.pipeline.plan import build_plan, canonical, definition_digest, evaluator_version
from flashinfer_bench.pipeline.settings import evaluation_for, toolchain_fingerprint

DATASET = Path(config["dataset"]).resolve()
RESULTS = config["results"]
PLAN = build_plan(
    DATASET,
    device=config["device"],
    definitions=config.get("definitions") or None,
    solutions=config.get("solutions") or None,
    cpu_limits=config.get("cpu", {}),
)
DEVICE = PLAN.device
TOOLCHAIN = toolchain_fingerprint()
EVALUATOR = evaluator_version()
for _p in PLAN.problems:
    print(f"[flashinfer-bench] {_p.level}: {_p}", file=sys.stderr)
if not DATASET.is_dir():
    raise WorkflowError(f"dataset directory {DATASET} does not exist (config key 'dataset')")
for _p in PLAN.problems:
    if _p.path in ("--definitions", "--solutions"):
        raise WorkflowError(str(_p))

JOBS_BY_DEF = {d: PLAN.jobs_of(d) for d in PLAN.selected_definitions()}
DEF_DIGEST = {n: definition_digest(d) for n, d in PLAN.definitions.items()}
SKIPPED = [s.__dict__ for s in PLAN.skipped]


wildcard_constraints:
    definition="[^/]+",
    solution="[^/]+",
    uuid="[^/]+",


THIN_CLIENT_CMD = f"{sys.executable} {Path(workflow.basedir) / 'flashinfer_bench' / 'pipeline' / 'thin_client.py'}"
if not Path(THIN_CLIENT_CMD.split(" ", 1)[1]).exists():  # installed wheel: the package holds it
    import flashinfer_bench.pipeline as _pl

    THIN_CLIENT_CMD = f"{sys.executable} {Path(_pl.__file__).parent / 'thin_client.py'}"
CACHE_DIR = config.get("cache_dir") or ""


def rel(path):
    """Dataset-relative paths in params: moving the dataset directory re-runs nothing."""
    return str(Path(path).relative_to(DATASET))


def trace_path(job):
    return f"{RESULTS}/traces/{job.definition}/{job.solution}/{job.uuid}.json"
