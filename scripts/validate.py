"""Rules validate_definition, validate_solution, validate_workloads (rules/validate.smk): record
the plan's verdict on one dataset file -> flashinfer_bench.pipeline.jobs.validation_report."""
import _job

_job.start(__file__)
from flashinfer_bench.pipeline.jobs import validation_report  # noqa: E402

validation_report(**_job.options(["file", "kind", "plan_notes", "out", "log"]))
