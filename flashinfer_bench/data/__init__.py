"""The FlashInfer Trace data model. Imports nothing heavy (no torch)."""
from .definition import AxisConst, AxisVar, Definition, ShapeError, TensorSpec, Tolerance, safe_eval
from .dtypes import DType
from .io import DatasetError, Problem, atomic_write_json, atomic_write_text
from .solution import BuildSpec, SourceFile, Solution, SupportedLanguages
from .trace import (
    Correctness,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    Trace,
    now_iso,
)
from .trace_set import TraceSet, trace_key
from .validate import check_dataset, validate_dataset
from .workload import RandomInput, SafetensorsInput, ScalarInput, Workload

__all__ = [
    "AxisConst", "AxisVar", "BuildSpec", "Correctness", "DType", "DatasetError", "Definition",
    "Environment", "Evaluation", "EvaluationStatus", "Performance", "Problem", "RandomInput",
    "SafetensorsInput", "ScalarInput", "ShapeError", "SourceFile", "Solution", "SupportedLanguages",
    "TensorSpec", "Tolerance", "Trace", "TraceSet", "Workload", "atomic_write_json",
    "atomic_write_text", "check_dataset", "now_iso", "safe_eval", "trace_key", "validate_dataset",
]
