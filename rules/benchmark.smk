# One job per (solution, workload), holding one GPU. The job is a thin client of the per-GPU
# worker; the workload is a param (canonical JSON) so appending a workload line re-runs only it.


rule benchmark:
    input:
        build=f"{RESULTS}/builds/{{solution}}.json",
    output:
        f"{RESULTS}/traces/{{definition}}/{{solution}}/{{uuid}}.json",
    # no `log:` directive (Snakemake expands it for every job while building the DAG): the thin
    # client writes results/logs/benchmark/<definition>/<solution>/<uuid>.log (path in params)
    params:
        # one dict per job from BENCH_PARAMS (computed once at parse time: Snakemake calls every
        # params function of every job): `args`, the thin client's arguments, shell-quoted
        # (workload JSON, evaluation settings, dataset-relative definition and solution files,
        # device, and the job's build/output/log paths), plus what else must re-run the job when
        # it changes (the definition's digest, the evaluator version)
        job=benchmark_job_params,
    resources:
        **BENCH_RESOURCES,
    priority: 5
    # shell + a stdlib-only client (not script:): ~50 ms a job instead of ~0.8 s of imports.
    # Few fields: Snakemake formats this command several times per job, also in dry runs.
    shell:
        "{THIN_CLIENT_CMD} {params.job[args]} --dataset {config[dataset]:q} --cache-dir='{CACHE_DIR}'"
