"""The FlashInfer Trace data model. Imports nothing heavy (no torch)."""
from .definition import Axis as AxisSpec
from .definition import AxisConst, AxisVar, Definition, ShapeError, TensorSpec, Tolerance, safe_eval
from .dtypes import DType
from .io import DatasetError, Problem, atomic_write_json, atomic_write_text
from .json_utils import append_jsonl_file, load_json_file, load_jsonl_file, save_json_file, save_jsonl_file
from .solution import BuildSpec, SourceFile, Solution, SupportedBindings, SupportedLanguages
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
from .workload import InputSpec, RandomInput, SafetensorsInput, ScalarInput, Workload

__all__ = [
    "AxisConst", "AxisVar", "BuildSpec", "Correctness", "DType", "DatasetError", "Definition",
    "Environment", "Evaluation", "EvaluationStatus", "Performance", "Problem", "RandomInput",
    "SafetensorsInput", "ScalarInput", "ShapeError", "SourceFile", "Solution", "SupportedLanguages",
    "TensorSpec", "Tolerance", "Trace", "TraceSet", "Workload", "atomic_write_json",
    "atomic_write_text", "check_dataset", "now_iso", "safe_eval", "trace_key", "validate_dataset",
    # FlashInfer-Bench 0.1.2's names
    "AxisSpec", "InputSpec", "SupportedBindings", "append_jsonl_file", "load_json_file",
    "load_jsonl_file", "save_json_file", "save_jsonl_file",
]
