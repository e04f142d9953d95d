# One build per solution into the content-addressed artifact cache. The output is a small digest
# (BuildResult JSON); benchmark jobs depend on it, not on the artifact's files. The solution JSON
# is not an input: its content hash is a param, so an edit of the description re-runs nothing.
# Two rules with one recipe, because they differ in priority only: `compile` feeds benchmark
# jobs and goes first; `compile_only` builds what no benchmark job here waits for (CUDA solutions
# on a CPU machine) on the cores left over. (A per-job priority function needs Snakemake >= 9.17,
# whose start is 0.4 s slower: pyproject's pipeline extra pins below it.)


rule compile:
    output:
        f"{RESULTS}/builds/{{solution}}.json",
    log:
        f"{RESULTS}/logs/compile/{{solution}}.log",
    wildcard_constraints:
        solution=names_regex(BENCHMARKED),
    params:
        **compile_params(),
    priority: 10
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/compile.py" --dataset "$FIB_RUN_DATASET" --cache-dir "$FIB_RUN_CACHE"'
        " --solution-file {params.solution_file:q} --definition-file {params.definition_file:q} --out {output:q} --log {log:q}"


rule compile_only:
    output:
        f"{RESULTS}/builds/{{solution}}.json",
    log:
        f"{RESULTS}/logs/compile/{{solution}}.log",
    wildcard_constraints:
        solution=names_regex(set(PLAN.solutions) - BENCHMARKED),
    params:
        **compile_params(),
    priority: 0
    conda:
        "../envs/flashinfer-bench.yaml"
    shell:
        '"$FIB_RUN_PYTHON" -S "$FIB_RUN_SCRIPTS/compile.py" --dataset "$FIB_RUN_DATASET" --cache-dir "$FIB_RUN_CACHE"'
        " --solution-file {params.solution_file:q} --definition-file {params.definition_file:q} --out {output:q} --log {log:q}"
