"""Rule benchmark (rules/benchmark.smk): one (solution, workload) on this machine's device, its
trace -> flashinfer_bench/pipeline/thin_client.py's main: it hands the pair to the device's warm
worker with the standard library alone (loaded by path: ~50 ms a job, where importing the package
costs ~0.8 s), and hands the same request to the full client (flashinfer_bench.bench.client,
the Python API's) when no worker answers: it starts the worker and turns every failure into a trace."""
import sys

import _job

sys.exit(_job.load("pipeline/thin_client.py").main())
