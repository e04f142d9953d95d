# Snakemake job: a thin client asking the device's worker to evaluate one (solution, workload).
from flashinfer_bench.pipeline.jobs import benchmark_job

p = snakemake.params
benchmark_job(
    build_json=snakemake.input.build,
    out=snakemake.output[0],
    definition_file=p.definition_file,
    solution_file=p.solution_file,
    workload_json=p.workload,
    evaluation_json=p.evaluation,
    device=p.device,
    dataset=p.dataset,
    cache_dir=p.cache_dir or None,
    log=snakemake.log[0],
)
