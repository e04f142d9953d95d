# One build per solution into the content-addressed artifact cache. The output is a small digest
# (BuildResult JSON); benchmark jobs depend on it, not on the artifact's files. The solution JSON
# is not an input: its content hash is a param, so an edit of the description re-runs nothing.


rule compile:
    output:
        f"{RESULTS}/builds/{{solution}}.json",
    log:
        f"{RESULTS}/logs/compile/{{solution}}.log",
    params:
        content_hash=lambda wc: PLAN.solutions[wc.solution].content_hash(),
        definition_digest=lambda wc: DEF_DIGEST[PLAN.solutions[wc.solution].definition],
        toolchain=TOOLCHAIN,
        solution_file=lambda wc: rel(PLAN.solution_files[wc.solution]),
        definition_file=lambda wc: rel(PLAN.definition_files[PLAN.solutions[wc.solution].definition]),
        device=DEVICE,
    priority: compile_priority
    script:
        "../scripts/compile.py"
