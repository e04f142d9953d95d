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
from flashinfer_bench.pipeline.snakemake_tuning import lazy_pandas_params

lazy_pandas_params()

coerce_config(config)
validate(config, schema="schema/config.schema.json")


include: "rules/common.smk"
include: "rules/validate.smk"
include: "rules/compile.smk"
include: "rules/benchmark.smk"
include: "rules/aggregate.smk"
include: "rules/report.smk"


# The CPU's one worker: one benchmark job at a time on this machine (unless --resources says).
# At parse time: the scheduler copies its limits when it is made, before onstart (a resource
# registered in onstart goes unenforced once the first job returns it).
if DEVICE == "cpu" and workflow.local_exec and "cpu_worker" not in workflow.global_resources:
    workflow.register_resource("cpu_worker", 1)


# Runs after the DAG is built, before the first job; never in dry runs.
onstart:
    from flashinfer_bench.atomic import atomic_write_text
    from flashinfer_bench.pipeline.prestart import prestart_workers, should_prestart

    # The validation and report jobs read the plan's notes from this file (too long for their
    # command lines).
    _notes = PLAN.notes_json()
    if not Path(PLAN_NOTES).is_file() or Path(PLAN_NOTES).read_text() != _notes:
        atomic_write_text(PLAN_NOTES, _notes)

    # A local GPU run starts the per-GPU workers now (detached), so their start-up overlaps the
    # compile jobs; a no-op on the CPU and when jobs run elsewhere (SLURM).
    if should_prestart(config, DEVICE, workflow.local_exec, workflow.dryrun) and not os.environ.get("FIB_PRESTARTED"):
        prestart_workers(DEVICE, CACHE_DIR, log_dir=f"{RESULTS}/logs")
    # Local builds and jobs fork from a job server that imports torch once, now, while Snakemake
    # schedules (pipeline/job_server.py); FIB_BUILD_ZYGOTE=0 in the environment turns it off.
    if workflow.local_exec and not workflow.dryrun:
        from flashinfer_bench.pipeline import job_server

        job_server.turn_on()


rule all:
    input:
        REPORT_OUTPUTS,
    default_target: True


# Without this, every run's process waits up to a second for Snakemake's last rescheduling timer
# before it exits (flashinfer_bench/pipeline/snakemake_tuning.py).
onsuccess:
    from flashinfer_bench.pipeline.snakemake_tuning import cancel_rescheduling_timers

    cancel_rescheduling_timers()


onerror:
    from flashinfer_bench.pipeline.snakemake_tuning import cancel_rescheduling_timers

    cancel_rescheduling_timers()
