# Snakemake job: validate one dataset file and write its report (logic in flashinfer_bench.pipeline.jobs).
from flashinfer_bench.pipeline.jobs import validate_file_job

validate_file_job(snakemake.input[0], snakemake.output[0], snakemake.rule, snakemake.log[0])
