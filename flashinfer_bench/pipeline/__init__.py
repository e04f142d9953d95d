"""The Snakemake workflow's Python side: planning the DAG and the job entry points."""
