# The final target: a plain-text summary and the HTML report of the dataset's traces.


rule report:
    input:
        aggregates=AGGREGATE_OUTPUTS,
        builds=[f"{RESULTS}/builds/{s}.json" for s in PLAN.solutions],
        validation=VALIDATION_OUTPUTS,
    output:
        summary=f"{RESULTS}/report/summary.txt",
        html=report(
            f"{RESULTS}/report/index.html",
            caption="../report/report.rst",
            category="Benchmark report",
        ),
        plots=report(
            directory(f"{RESULTS}/report/plots"),
            patterns=["{definition}__{hardware}__{kind}.svg"],
            caption="../report/plots.rst",
            category="Plots",
            subcategory="{definition}",
            labels={"definition": "{definition}", "device": "{hardware}", "plot": "{kind}"},
        ),
        tables=report(
            directory(f"{RESULTS}/report/tables"),
            patterns=["{name}.html"],
            caption="../report/tables.rst",
            category="Tables",
            labels={"table": "{name}"},
        ),
    log:
        f"{RESULTS}/logs/report.log",
    params:
        # functions, so that braces in a message (a file named `a{b}.json`) are not read as wildcards
        skipped=lambda wc: canonical(SKIPPED),
        problems=lambda wc: canonical([str(p) for p in PLAN.problems]),
        save_results=config.get("save_results", True),
        # they are long: onstart writes them to this file (the params above re-run the job)
        plan_notes=PLAN_NOTES,
    localrule: True
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/report.py" --dataset "$FIB_RUN_DATASET" --plan-notes {params.plan_notes:q}'
        " --summary-out {output.summary:q} --html-out {output.html:q} --log {log:q} --save-results {params.save_results}"
        " --aggregates {input.aggregates:q} --builds {input.builds:q}"


REPORT_OUTPUTS = [f"{RESULTS}/report/summary.txt", f"{RESULTS}/report/index.html"]
