# One validation report per dataset file. Invalid files are already left out of the DAG at parse
# time (with the message printed); these jobs record the full check for the report.


rule validate_definition:
    input:
        lambda wc: str(PLAN.definition_files[wc.definition]),
    output:
        f"{RESULTS}/validated/definitions/{{definition}}.txt",
    log:
        f"{RESULTS}/logs/validate/definitions/{{definition}}.log",
    localrule: True
    shell:
        "{JOB_CMD} validate --rule {rule} --input {input:q} --out {output:q} --log {log:q}"


rule validate_solution:
    input:
        lambda wc: str(PLAN.solution_files[wc.solution]),
    output:
        f"{RESULTS}/validated/solutions/{{solution}}.txt",
    log:
        f"{RESULTS}/logs/validate/solutions/{{solution}}.log",
    localrule: True
    shell:
        "{JOB_CMD} validate --rule {rule} --input {input:q} --out {output:q} --log {log:q}"


rule validate_workloads:
    input:
        lambda wc: str(PLAN.workload_files[wc.definition]),
    output:
        f"{RESULTS}/validated/workloads/{{definition}}.txt",
    log:
        f"{RESULTS}/logs/validate/workloads/{{definition}}.log",
    localrule: True
    shell:
        "{JOB_CMD} validate --rule {rule} --input {input:q} --out {output:q} --log {log:q}"


VALIDATION_OUTPUTS = (
    [f"{RESULTS}/validated/definitions/{d}.txt" for d in PLAN.definitions]
    + [f"{RESULTS}/validated/solutions/{s}.txt" for s in PLAN.solutions]
    + [f"{RESULTS}/validated/workloads/{d}.txt" for d in PLAN.workload_files]
)
