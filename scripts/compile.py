# Snakemake job: build one solution into the artifact cache; writes the BuildResult digest.
from pathlib import Path

from flashinfer_bench.pipeline.jobs import compile_job

dataset = Path(snakemake.config["dataset"]).resolve()
p = snakemake.params
compile_job(
    solution_file=str(dataset / p.solution_file),
    definition_file=str(dataset / p.definition_file),
    out=snakemake.output[0],
    cache_dir=snakemake.config.get("cache_dir") or None,
    log_path=snakemake.log[0],
)
