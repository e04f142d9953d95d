# Snakemake job: merge this run's traces of one definition into the dataset's traces/ JSONL.
from pathlib import Path

from flashinfer_bench.pipeline.jobs import aggregate_job

aggregate_job(
    definition=snakemake.wildcards.definition,
    trace_files=list(snakemake.input),
    dataset=str(Path(snakemake.config["dataset"]).resolve()),
    out=snakemake.output[0],
    save_results=snakemake.params.save_results,
    log=snakemake.log[0],
)
