# Snakemake job: build one solution into the artifact cache; writes the BuildResult digest.
from flashinfer_bench.pipeline.jobs import compile_job

p = snakemake.params
compile_job(p.solution_file, p.definition_file, snakemake.output[0], p.cache_dir or None, snakemake.log[0])
