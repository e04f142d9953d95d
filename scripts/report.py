# Snakemake job: write the plain summary and the HTML report of the dataset's traces.
from pathlib import Path

from flashinfer_bench.pipeline.jobs import report_job

report_job(
    dataset=str(Path(snakemake.config["dataset"]).resolve()),
    aggregates=list(snakemake.input.aggregates),
    builds=list(snakemake.input.builds),
    summary_out=snakemake.output.summary,
    html_out=snakemake.output.html,
    skipped_json=snakemake.params.skipped,
    problems_json=snakemake.params.problems,
    save_results=snakemake.params.save_results,
    log=snakemake.log[0],
)
