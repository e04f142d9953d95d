# One validation report per dataset file in the DAG: the problems the plan found in it when the
# Snakefile was parsed (pipeline/plan.py, the same check that leaves invalid files out of the DAG
# with their errors printed), so these reports hold that file's warnings. The problems are a
# param: a changed verdict re-runs the job even when the file did not change.


rule validate_definition:
    input:
        lambda wc: str(PLAN.definition_files[wc.definition]),
    output:
        f"{RESULTS}/validated/definitions/{{definition}}.txt",
    log:
        f"{RESULTS}/logs/validate/definitions/{{definition}}.log",
    params:
        problems=lambda wc, input: canonical(PROBLEMS_BY_FILE.get(input[0], [])),
        plan_notes=PLAN_NOTES,
    localrule: True
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/validate.py" --file {input:q} --kind definition'
        " --plan-notes {params.plan_notes:q} --out {output:q} --log {log:q}"


rule validate_solution:
    input:
        lambda wc: str(PLAN.solution_files[wc.solution]),
    output:
        f"{RESULTS}/validated/solutions/{{solution}}.txt",
    log:
        f"{RESULTS}/logs/validate/solutions/{{solution}}.log",
    params:
        problems=lambda wc, input: canonical(PROBLEMS_BY_FILE.get(input[0], [])),
        plan_notes=PLAN_NOTES,
    localrule: True
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/validate.py" --file {input:q} --kind solution'
        " --plan-notes {params.plan_notes:q} --out {output:q} --log {log:q}"


rule validate_workloads:
    input:
        lambda wc: str(PLAN.workload_files[wc.definition]),
    output:
        f"{RESULTS}/validated/workloads/{{definition}}.txt",
    log:
        f"{RESULTS}/logs/validate/workloads/{{definition}}.log",
    params:
        problems=lambda wc, input: canonical(PROBLEMS_BY_FILE.get(input[0], [])),
        plan_notes=PLAN_NOTES,
    localrule: True
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/validate.py" --file {input:q} --kind workloads'
        " --plan-notes {params.plan_notes:q} --out {output:q} --log {log:q}"


VALIDATION_OUTPUTS = (
    [f"{RESULTS}/validated/definitions/{d}.txt" for d in PLAN.definitions]
    + [f"{RESULTS}/validated/solutions/{s}.txt" for s in PLAN.solutions]
    + [f"{RESULTS}/validated/workloads/{d}.txt" for d in PLAN.workload_files]
)
