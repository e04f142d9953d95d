# FlashInfer-Bench as a Snakemake workflow: validate -> compile -> benchmark -> aggregate -> report.
# Run:  snakemake --cores N            (GPU box: add --resources gpu=<#GPUs> or --profile profiles/gpu)
#       snakemake --profile profiles/cpu (no GPU: PyTorch natively, Triton interpreted)
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


# Defaults live beside this file, so the workflow also runs from any directory (the CLI does so);
# a user's --configfile / --config is merged over them.
configfile: str(Path(workflow.basedir) / "config.yaml")


from flashinfer_bench.pipeline.settings import coerce_config

coerce_config(config)
validate(config, schema="schema/config.schema.json")


include: "rules/common.smk"
include: "rules/validate.smk"
include: "rules/compile.smk"
include: "rules/benchmark.smk"
include: "rules/aggregate.smk"
include: "rules/report.smk"


rule all:
    input:
        REPORT_OUTPUTS,
    default_target: True
