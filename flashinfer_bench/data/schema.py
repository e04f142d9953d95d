"""JSON Schemas (draft 2020-12) of the FlashInfer Trace files, written by hand in one place.

The files in the repository's `schema/` directory are generated from here
(`python -m flashinfer_bench.data.schema schema/`) so that the four schemas share their parts
without cross-file references, and a test keeps the files, these dicts and the pydantic models
in agreement. The schemas describe what FlashInfer-Bench 0.1.2 accepts (plus our optional
extensions); unknown fields are allowed everywhere because upstream may add fields.
"""
from __future__ import annotations

import copy
import functools
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

from .dtypes import DType
from .io import atomic_write_text

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# file name in schema/ -> schema name
FILES = {
    "definition": "definition.schema.json",
    "solution": "solution.schema.json",
    "workload": "workload.schema.json",
    "trace": "trace.schema.json",
}

_NONEMPTY = {"type": "string", "minLength": 1}
_OPT_STR = {"type": ["string", "null"]}
# JSON has no NaN/Infinity; pydantic (ours and upstream's) writes them as strings
_NONNEG_OR_NAN = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"enum": ["NaN", "Infinity", "nan", "inf", "infinity"]},
    ]
}
_NONNEG_OR_INF = {"anyOf": [{"type": "number", "minimum": 0}, {"enum": ["Infinity", "inf", "infinity"]}]}

_AXIS = {
    "type": "object",
    "description": "A const axis (fixed 'value') or a var axis (bound by each workload). "
    "FlashInfer-Bench 0.1.2 may omit 'type' (it writes with exclude_unset): "
    "then an axis with a 'value' is const.",
    "properties": {
        "type": {"enum": ["const", "var"]},
        "value": {"type": "integer", "minimum": 0},
        "description": _OPT_STR,
    },
    "allOf": [
        {
            "if": {"required": ["type"], "properties": {"type": {"const": "const"}}},
            "then": {"required": ["value"]},
        }
    ],
}

_TENSOR = {
    "type": "object",
    "description": "shape null: a Python scalar; []: a 0-d tensor.",
    "required": ["shape", "dtype"],
    "properties": {
        "shape": {"type": ["array", "null"], "items": _NONEMPTY},
        "dtype": {"enum": [d.value for d in DType]},
        "description": _OPT_STR,
    },
}

_TOLERANCE = {
    "type": ["object", "null"],
    "description": "Our extension: per-definition override of the evaluator's tolerances.",
    "properties": {
        "atol": {"type": ["number", "null"], "minimum": 0},
        "rtol": {"type": ["number", "null"], "minimum": 0},
    },
}

_DEFINITION = {
    "type": "object",
    "required": ["name", "op_type", "axes", "inputs", "outputs", "reference"],
    "properties": {
        "name": _NONEMPTY,
        "op_type": _NONEMPTY,
        "axes": {
            "type": "object",
            "propertyNames": {"minLength": 1},
            "additionalProperties": {"$ref": "#/$defs/axis"},
        },
        "inputs": {
            "type": "object",
            "description": "Order is the calling order of the reference's run().",
            "propertyNames": {"minLength": 1},
            "additionalProperties": {"$ref": "#/$defs/tensor"},
        },
        "outputs": {
            "type": "object",
            "propertyNames": {"minLength": 1},
            "additionalProperties": {"$ref": "#/$defs/tensor"},
        },
        "reference": {
            **_NONEMPTY,
            "description": "Python source with a top-level run(<inputs in order>) that returns the outputs.",
        },
        "tags": {"type": "array", "items": _NONEMPTY},
        "description": _OPT_STR,
        "constraints": {
            "type": "array",
            "items": _NONEMPTY,
            "description": "Python expressions over axis names that every workload must satisfy.",
        },
        "flops": {
            "type": ["string", "null"],
            "description": "Our extension: FLOPs of one call as an expression over axis names.",
        },
        "tolerance": {"$ref": "#/$defs/tolerance"},
    },
}

_BUILD_SPEC = {
    "type": "object",
    "required": ["language", "target_hardware", "entry_point"],
    "properties": {
        "language": {"enum": ["python", "triton", "cuda", "cpp", "tilelang"]},
        "target_hardware": {"type": "array", "minItems": 1, "items": {"type": "string"}},
        "entry_point": {
            "type": "string",
            "pattern": "^(?:(?!::).)+::(?:(?!::).)+$",
            "description": "'<source path>::<function name>'",
        },
        "dependencies": {"type": "array", "items": _NONEMPTY},
        "destination_passing_style": {"type": "boolean"},
        "binding": {"enum": ["tvm-ffi", "torch", None]},
    },
}

_SOURCE_FILE = {
    "type": "object",
    "required": ["path", "content"],
    "properties": {
        "path": {
            **_NONEMPTY,
            "description": "Relative to the solution; no '..', unique within the solution.",
        },
        "content": _NONEMPTY,
    },
}

_SOLUTION = {
    "type": "object",
    "required": ["name", "definition", "author", "spec", "sources"],
    "properties": {
        "name": _NONEMPTY,
        "definition": _NONEMPTY,
        "author": _NONEMPTY,
        "spec": {"$ref": "#/$defs/build_spec"},
        "sources": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/source_file"}},
        "description": _OPT_STR,
    },
}

_INPUT = {
    "type": "object",
    "description": "How one input is produced. An input the workload does not list is random.",
    "properties": {"type": {"enum": ["random", "scalar", "safetensors"]}},
    "allOf": [
        {
            "if": {"required": ["type"], "properties": {"type": {"const": "random"}}},
            "then": {
                "properties": {
                    "dtype": {
                        "type": ["string", "null"],
                        "description": "Our extension (the seeds pass it); must equal the definition's dtype.",
                    }
                }
            },
        },
        {
            "if": {"required": ["type"], "properties": {"type": {"const": "scalar"}}},
            "then": {
                "required": ["value"],
                "properties": {"value": {"type": ["number", "boolean"]}},
            },
        },
        {
            "if": {"required": ["type"], "properties": {"type": {"const": "safetensors"}}},
            "then": {
                "required": ["path", "tensor_key"],
                "properties": {
                    "path": {**_NONEMPTY, "description": "Relative to the dataset root."},
                    "tensor_key": _NONEMPTY,
                },
            },
        },
    ],
}

_WORKLOAD = {
    "type": "object",
    "required": ["axes", "inputs", "uuid"],
    "properties": {
        "axes": {
            "type": "object",
            "description": "A value for every var axis of the definition.",
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
        "inputs": {"type": "object", "additionalProperties": {"$ref": "#/$defs/input"}},
        "uuid": _NONEMPTY,
    },
}

_CORRECTNESS = {
    "type": "object",
    "properties": {
        "max_relative_error": _NONNEG_OR_NAN,
        "max_absolute_error": _NONNEG_OR_NAN,
        "extra": {
            "type": ["object", "null"],
            "description": "Our measurements (seed, spread, roofline, flags, ...); see docs/internals.md.",
        },
    },
}

_PERFORMANCE = {
    "type": "object",
    "properties": {
        "latency_ms": _NONNEG_OR_INF,
        "reference_latency_ms": _NONNEG_OR_INF,
        "speedup_factor": _NONNEG_OR_INF,
    },
}

_OPT_INT = {"type": ["integer", "null"]}
_OPT_OBJ = {"type": ["object", "null"]}
_ENVIRONMENT = {
    "type": "object",
    "required": ["hardware"],
    "properties": {
        "hardware": {**_NONEMPTY, "description": "Device name as torch reports it, e.g. 'NVIDIA H100 80GB HBM3'."},
        "libs": {"type": "object", "additionalProperties": {"type": "string"}},
        # our extra keys (docs/internals.md); FlashInfer-Bench 0.1.2 ignores them
        "device": {**_OPT_STR, "description": "Our extension: 'cuda:0', 'cpu', ..."},
        "device_index": _OPT_INT,
        "gpu_uuid": _OPT_STR,
        "sm_count": _OPT_INT,
        "l2_bytes": _OPT_INT,
        "clocks_start": {**_OPT_OBJ, "description": "Our extension: clocks in MHz when the evaluation began."},
        "clocks_end": _OPT_OBJ,
        "hostname": _OPT_STR,
        "seed": _OPT_INT,
        "start_time": {**_OPT_STR, "description": "Our extension: ISO UTC time the evaluation began."},
        "end_time": _OPT_STR,
        "worker_pid": _OPT_INT,
        "sandbox": {**_OPT_STR, "description": "Our extension: the confinement the runner applied, or none."},
        "memory_bytes": _OPT_INT,
        "compute_capability": _OPT_STR,
        "clocks_at_worker_start": {**_OPT_OBJ, "description": "Our extension: clocks from nvidia-smi when NVML is missing."},
        "peaks_error": {**_OPT_STR, "description": "Our extension: why the device's peaks could not be measured."},
        "cpu_count": {**_OPT_INT, "description": "Our extension (CPU runs): logical CPUs of the machine."},
        "torch_threads": {**_OPT_INT, "description": "Our extension (CPU runs): torch's intra-op threads."},
        "solution_hash": {**_OPT_STR, "description": (
            "Our extension: the content hash (sha256) of the solution version this trace measured "
            "(Solution.content_hash: sources, entry point, spec; not its name). A trace whose hash differs "
            "from the solution's current content is stale: kept, never ranked.")},
    },
}

_STATUSES = [
    "PASSED",
    "INCORRECT_SHAPE",
    "INCORRECT_NUMERICAL",
    "INCORRECT_DTYPE",
    "RUNTIME_ERROR",
    "COMPILE_ERROR",
    "TIMEOUT",
]
_ABSENT = {"type": "null"}  # a property that may be missing or null

_EVALUATION = {
    "type": "object",
    "required": ["status", "environment", "timestamp"],
    "properties": {
        "status": {"enum": _STATUSES},
        "environment": {"$ref": "#/$defs/environment"},
        "timestamp": _NONEMPTY,
        "log": {"type": "string"},
        "correctness": {"anyOf": [{"$ref": "#/$defs/correctness"}, {"type": "null"}]},
        "performance": {"anyOf": [{"$ref": "#/$defs/performance"}, {"type": "null"}]},
    },
    "allOf": [
        {
            "if": {"properties": {"status": {"const": "PASSED"}}},
            "then": {
                "required": ["correctness", "performance"],
                "properties": {"correctness": {"type": "object"}, "performance": {"type": "object"}},
            },
        },
        {
            "if": {"properties": {"status": {"const": "INCORRECT_NUMERICAL"}}},
            "then": {
                "required": ["correctness"],
                "properties": {"correctness": {"type": "object"}, "performance": _ABSENT},
            },
        },
        {
            "if": {"properties": {"status": {"not": {"enum": ["PASSED", "INCORRECT_NUMERICAL"]}}}},
            "then": {"properties": {"correctness": _ABSENT, "performance": _ABSENT}},
        },
    ],
}


def _document(name: str, title: str, description: str, body: Dict[str, Any], defs: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "$schema": DRAFT,
        "$id": f"urn:flashinfer-trace:schema:{name}",
        "title": title,
        "description": description,
        **copy.deepcopy(body),
        "$defs": copy.deepcopy(defs),
    }


def build_schemas() -> Dict[str, Dict[str, Any]]:
    """The four schemas, keyed by name ('definition', 'solution', 'workload', 'trace')."""
    wl_defs = {"workload": _WORKLOAD, "input": _INPUT}
    return {
        "definition": _document(
            "definition",
            "FlashInfer Trace definition",
            "definitions/<op_type>/<name>.json: what a kernel computes.",
            _DEFINITION,
            {"axis": _AXIS, "tensor": _TENSOR, "tolerance": _TOLERANCE},
        ),
        "solution": _document(
            "solution",
            "FlashInfer Trace solution",
            "solutions/[<author>/]<op_type>/<definition>/<name>.json: one implementation.",
            _SOLUTION,
            {"build_spec": _BUILD_SPEC, "source_file": _SOURCE_FILE},
        ),
        "workload": _document(
            "workload",
            "FlashInfer Trace workload line",
            "One line of workloads/<op_type>/<definition>.jsonl.",
            {
                "type": "object",
                "required": ["definition", "workload"],
                "properties": {
                    "definition": _NONEMPTY,
                    "workload": {"$ref": "#/$defs/workload"},
                    "solution": {"type": "null"},
                    "evaluation": {"type": "null"},
                },
            },
            wl_defs,
        ),
        "trace": _document(
            "trace",
            "FlashInfer Trace trace line",
            "One line of traces/**/<definition>.jsonl: a solution's result on a workload.",
            {
                "type": "object",
                "required": ["definition", "workload", "solution", "evaluation"],
                "properties": {
                    "definition": _NONEMPTY,
                    "workload": {"$ref": "#/$defs/workload"},
                    "solution": _NONEMPTY,
                    "evaluation": {"$ref": "#/$defs/evaluation"},
                },
            },
            {
                **wl_defs,
                "evaluation": _EVALUATION,
                "correctness": _CORRECTNESS,
                "performance": _PERFORMANCE,
                "environment": _ENVIRONMENT,
            },
        ),
    }


def schema_text(schema: Dict[str, Any]) -> str:
    return json.dumps(schema, indent=2) + "\n"


@functools.lru_cache(maxsize=None)
def validator(name: str):
    """A jsonschema validator for one of the four schemas (jsonschema is imported lazily)."""
    import jsonschema

    schema = build_schemas()[name]
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def schema_errors(name: str, obj: Any) -> List[str]:
    """'field.path: message' for every way `obj` breaks schema `name` (empty when it conforms)."""
    out = []
    for e in validator(name).iter_errors(obj):
        path = ".".join(str(p) for p in e.absolute_path)
        out.append(f"{path}: {e.message}" if path else e.message)
    return sorted(out)


def write_schemas(directory: Path) -> List[Path]:
    """Write the four schema files into `directory` (the repository's schema/)."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name, schema in build_schemas().items():
        p = directory / FILES[name]
        atomic_write_text(p, schema_text(schema))
        out.append(p)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "schema")
    for p in write_schemas(target):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
