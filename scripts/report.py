"""Rule report (rules/report.smk): the plain summary and the HTML report of the dataset's traces
-> flashinfer_bench.pipeline.jobs.report_job."""
import _job

_job.start(__file__)
from flashinfer_bench.pipeline.jobs import report_job  # noqa: E402

o = _job.options(["dataset", "plan_notes", "summary_out", "html_out", "log", "save_results"], lists=["aggregates", "builds"])
report_job(**{**o, "save_results": o["save_results"] == "True"})
