"""Rules compile, compile_only (rules/compile.smk): build one solution into the artifact cache
-> flashinfer_bench.pipeline.jobs.compile_job."""
import _job

_job.start(__file__)
from flashinfer_bench.pipeline.jobs import compile_job  # noqa: E402

compile_job(**_job.options(["dataset", "solution_file", "definition_file", "out", "log"], optional=["cache_dir"]))
