"""Rule aggregate (rules/aggregate.smk): merge this run's traces of one definition into
<dataset>/traces/<op_type>/<definition>.jsonl -> flashinfer_bench.pipeline.jobs.aggregate_job."""
import _job

_job.start(__file__)
from flashinfer_bench.pipeline.jobs import aggregate_job  # noqa: E402

o = _job.options(["dataset", "definition", "op_type", "out", "log", "save_results"], lists=["trace_files"])
aggregate_job(**{**o, "save_results": o["save_results"] == "True"})
