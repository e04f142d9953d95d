"""Who pays for a failed evaluation: the solution, the dataset or the machine.

A failure that is not the solution's (its definition's reference raises or hangs, the workload's
inputs cannot be made, the device is too small for the reference) still comes back from the
evaluator as a trace, its log starting with one of these prefixes. The pipeline never merges such
a trace into the dataset: it reports it as the dataset's or the environment's error and `run`
exits non-zero."""
from __future__ import annotations

from typing import Literal

from .trace import Trace

DATASET_ERROR = "dataset error (not the solution's): "
ENVIRONMENT_ERROR = "environment error (not the solution's): "

Party = Literal["solution", "dataset", "environment"]


def charged_party(trace: Trace) -> Party:
    """The party a trace's failure is charged to ('solution' for every ordinary trace)."""
    ev = trace.evaluation
    log = (ev.log or "") if ev is not None else ""
    if log.startswith(DATASET_ERROR):
        return "dataset"
    if log.startswith(ENVIRONMENT_ERROR):
        return "environment"
    return "solution"


def says_out_of_memory(text: str) -> bool:
    """Does an error message or a trace's log report an allocation the device could not serve?
    (torch's OutOfMemoryError, CUDA's "out of memory"). One test for the runner, which sees the
    exception, and the supervisor, which sees only the text."""
    return "out of memory" in text.lower() or "OutOfMemoryError" in text
