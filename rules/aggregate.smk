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
        op_type=lambda wc: PLAN.definitions[wc.definition].op_type,
        save_results=config.get("save_results", True),
    localrule: True
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/aggregate.py" --dataset "$FIB_RUN_DATASET"'
        " --definition {wildcards.definition:q} --op-type {params.op_type:q} --out {output:q} --log {log:q}"
        " --save-results {params.save_results} --trace-files {input:q}"


AGGREGATE_OUTPUTS = [f"{RESULTS}/aggregate/{d}.jsonl" for d in JOBS_BY_DEF]
