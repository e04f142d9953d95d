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
        workload=lambda wc: PLAN.workloads[wc.definition][wc.uuid],
        definition_digest=lambda wc: DEF_DIGEST[wc.definition],
        evaluation=lambda wc: canonical(evaluation_for(config, wc.definition, DEVICE)),
        device=DEVICE,
        evaluator=EVALUATOR,
        solution_file=lambda wc: rel(PLAN.solution_files[wc.solution]),
        definition_file=lambda wc: rel(PLAN.definition_files[wc.definition]),
    resources:
        gpu=1 if DEVICE.startswith("cuda") else 0,
    # shell + a stdlib-only client (not script:): ~50 ms a job instead of ~0.8 s of imports
    shell:
        "{THIN_CLIENT_CMD} --build {input.build:q} --out {output:q} --log {log:q}"
        " --definition-file {params.definition_file:q} --solution-file {params.solution_file:q}"
        " --workload {params.workload:q} --evaluation {params.evaluation:q} --device {params.device}"
        " --dataset {config[dataset]:q} --cache-dir='{CACHE_DIR}'"
