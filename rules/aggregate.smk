# Merge this run's per-job traces into <dataset>/traces/<op_type>/<definition>.jsonl, replacing
# only traces with the same (definition, solution, workload, hardware). The output is a marker:
# the dataset file itself must never be a Snakemake output (Snakemake deletes outputs it re-makes).


rule aggregate:
    input:
        lambda wc: [trace_path(j) for j in JOBS_BY_DEF[wc.definition]],
    output:
        f"{RESULTS}/aggregate/{{definition}}.jsonl",
    log:
        f"{RESULTS}/logs/aggregate/{{definition}}.log",
    params:
        save_results=config.get("save_results", True),
    localrule: True
    shell:
        "{JOB_CMD} aggregate --dataset {config[dataset]:q} --definition {wildcards.definition:q} --out {output:q}"
        " --log {log:q} --save-results {params.save_results} {input:q}"


AGGREGATE_OUTPUTS = [f"{RESULTS}/aggregate/{d}.jsonl" for d in JOBS_BY_DEF]
