# One job per (solution, workload), holding one GPU. The job is a thin client of the per-GPU
# worker; the workload is a param (canonical JSON) so appending a workload line re-runs only it.


rule benchmark:
    input:
        build=f"{RESULTS}/builds/{{solution}}.json",
    output:
        f"{RESULTS}/traces/{{definition}}/{{solution}}/{{uuid}}.json",
    log:
        f"{RESULTS}/logs/benchmark/{{definition}}/{{solution}}/{{uuid}}.log",
    params:
        # one dict per job from BENCH_PARAMS (computed once at parse time: Snakemake calls every
        # params function of every job): `args`, the thin client's arguments, shell-quoted
        # (workload JSON, evaluation settings, dataset-relative definition and solution files,
        # device, and the job's build and output paths), plus what else must re-run the job when
        # it changes (the definition's digest, the evaluator version)
        job=benchmark_job_params,
    resources:
        **BENCH_RESOURCES,
    priority: 5
    conda:
        "../envs/flashinfer-bench.yaml"
    # Few fields: Snakemake formats this command several times per job, also in dry runs.
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/benchmark.py" {params.job[args]} --log {log:q}'
        ' --dataset "$FIB_RUN_DATASET" --cache-dir "$FIB_RUN_CACHE"'
