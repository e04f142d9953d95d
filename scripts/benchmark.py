# Snakemake job: a thin client asking the device's worker to evaluate one (solution, workload).
from pathlib import Path

from flashinfer_bench.pipeline.jobs import benchmark_job

dataset = Path(snakemake.config["dataset"]).resolve()
p = snakemake.params
benchmark_job(
    build_json=snakemake.input.build,
    out=snakemake.output[0],
    definition_file=str(dataset / p.definition_file),
    solution_file=str(dataset / p.solution_file),
    workload_json=p.workload,
    evaluation_json=p.evaluation,
    device=p.device,
    dataset=str(dataset),
    cache_dir=snakemake.config.get("cache_dir") or None,
    log=snakemake.log[0],
)
