"""Dataset validation beyond what the models check on loading.

`validate_dataset(path)` loads a dataset (directory, or a single-file TraceSet bundle) without
stopping at the first problem and returns every error and warning, each naming its file, its line
(for JSONL) and the field path inside that line, e.g.
`dataset/workloads/rmsnorm/rmsnorm_d4096.jsonl:3: workload.axes: missing var axis 'batch_size'`.

Errors are what makes a dataset unusable here or in FlashInfer-Bench 0.1.2 (which refuses to
load the whole dataset on one bad entry); warnings are what is suspicious but loads (unknown
fields, an unknown solution in a trace, ...).
"""
from __future__ import annotations

import ast
import functools
import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Dict, List, Optional, Tuple, Union

from .definition import MAX_TENSOR_ELEMENTS, Definition
from .dtypes import DType
from .fields import path_text_problem
from .io import Problem, read_json
from .solution import Solution, SupportedLanguages
from .trace import EvaluationStatus, Trace
from .trace_set import TraceSet
from .workload import RandomInput, SafetensorsInput, ScalarInput, Workload

__all__ = [
    "Finding",
    "HeaderCache",
    "SafetensorsHeaderError",
    "blob_file",
    "check_dataset",
    "definition_problems",
    "read_safetensors_header",
    "run_file_name_problem",
    "solution_problems",
    "validate_dataset",
    "validate_trace_set",
    "workload_problems",
]

# safetensors dtype names for each of our dtypes (float4 may be stored packed two to a byte)
_ST_DTYPES: Dict[DType, Tuple[str, ...]] = {
    DType.FLOAT32: ("F32",),
    DType.FLOAT16: ("F16",),
    DType.BFLOAT16: ("BF16",),
    DType.FLOAT8_E4M3FN: ("F8_E4M3",),
    DType.FLOAT8_E5M2: ("F8_E5M2",),
    DType.FLOAT4_E2M1: ("F4", "F8_E4M3FN", "U8"),
    DType.INT64: ("I64",),
    DType.INT32: ("I32",),
    DType.INT16: ("I16",),
    DType.INT8: ("I8",),
    DType.BOOL: ("BOOL",),
}
_MAX_HEADER_BYTES = 100 * 1024 * 1024  # safetensors' own limit


@dataclass(frozen=True)
class Finding:
    """A problem of one entity before its file and line are known: field path, message, level.

    The per-entity checks (`definition_problems`, ...) return these so that callers which hold
    entities in memory (the pipeline, tracing) can use them without a dataset on disk."""

    field: Optional[str]
    message: str
    level: str = "error"


def _err(field: Optional[str], message: str) -> Finding:
    return Finding(field, message, "error")


def _warn(field: Optional[str], message: str) -> Finding:
    return Finding(field, message, "warning")


# --------------------------------------------------------------------------- safetensors
class SafetensorsHeaderError(ValueError):
    """A safetensors file whose header cannot be read."""


def read_safetensors_header(path: Union[str, Path]) -> Dict[str, Dict[str, Any]]:
    """Tensor name -> {"dtype", "shape", "data_offsets"} from a safetensors file, without torch.

    The format is an 8-byte little-endian header length, a JSON header, then the raw data.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise SafetensorsHeaderError("file is shorter than the 8-byte header length")
            (n,) = struct.unpack("<Q", head)
            if n > _MAX_HEADER_BYTES or n > size - 8:
                raise SafetensorsHeaderError(f"header length {n} does not fit a {size}-byte file")
            raw = f.read(n)
    except OSError as e:
        raise SafetensorsHeaderError(f"cannot read: {e.strerror or e}") from e
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsHeaderError(f"header is not JSON: {e}") from e
    if not isinstance(header, dict):
        raise SafetensorsHeaderError("header is not a JSON object")
    data_len = size - 8 - n
    out = {}
    for key, info in header.items():
        if key == "__metadata__":
            continue
        if not (
            isinstance(info, dict)
            and isinstance(info.get("dtype"), str)
            and isinstance(info.get("shape"), list)
            and all(isinstance(d, int) and d >= 0 for d in info["shape"])
            and isinstance(info.get("data_offsets"), list)
            and len(info["data_offsets"]) == 2
        ):
            raise SafetensorsHeaderError(f"tensor {key!r} has a malformed header entry")
        begin, end = info["data_offsets"]
        if not (isinstance(begin, int) and isinstance(end, int) and 0 <= begin <= end <= data_len):
            raise SafetensorsHeaderError(
                f"tensor {key!r} data [{begin}, {end}) lies outside the {data_len}-byte data section "
                "(truncated file?)"
            )
        out[key] = info
    return out


class HeaderCache:
    """Safetensors headers, read once (one file often holds the inputs of many workloads)."""

    def __init__(self) -> None:
        self._cache: Dict[Path, Union[Dict[str, Any], SafetensorsHeaderError]] = {}

    def get(self, path: Path) -> Dict[str, Any]:
        if path not in self._cache:
            try:
                self._cache[path] = read_safetensors_header(path)
            except SafetensorsHeaderError as e:
                self._cache[path] = e
        v = self._cache[path]
        if isinstance(v, SafetensorsHeaderError):
            raise v
        return v


# --------------------------------------------------------------------------- definitions
def definition_problems(d: Definition) -> List[Finding]:
    """Our strict checks of one definition (field paths relative to the definition)."""
    out = [_err(f, m) for f, m in d.problem_items(strict=True)]
    out += [_warn(f, m) for f, m in d.constraint_findings()]
    for group in ("tags", "constraints"):
        for i, v in enumerate(getattr(d, group)):
            if not v.strip():
                out.append(_err(f"{group}[{i}]", "empty string (FlashInfer-Bench 0.1.2 refuses it)"))
    for group, specs in (("inputs", d.inputs), ("outputs", d.outputs)):
        for name, spec in specs.items():
            if not name:
                out.append(_err(group, "empty tensor name"))
            shape = spec.shape or []
            if shape and all(a in d.const_axes for a in shape):
                n = math.prod(d.const_axes[a] for a in shape)
                if n > MAX_TENSOR_ELEMENTS:
                    out.append(_err(
                        f"{group}.{name}.shape",
                        f"{n} elements from const axes alone, more than 2^36",
                    ))
    for name in d.axes:
        if not name:
            out.append(_err("axes", "empty axis name"))
        elif name in d.inputs or name in d.outputs:
            out.append(_warn(f"axes.{name}", "axis has the same name as a tensor"))
    return out


# --------------------------------------------------------------------------- solutions
def solution_problems(s: Solution, definitions: Dict[str, Definition]) -> List[Finding]:
    """Checks of one solution (field paths relative to the solution)."""
    out: List[Finding] = []
    if s.definition not in definitions:
        out.append(_err("definition", f"unknown definition {s.definition!r}"))
    for p in s.problems():
        field, _, msg = p.partition(": ")
        out.append(_err(field, msg))
    if not s.spec.target_hardware:
        out.append(_err("spec.target_hardware", "empty list (FlashInfer-Bench 0.1.2 needs at least one)"))
    for i, dep in enumerate(s.spec.dependencies):
        if not dep.strip():
            out.append(_err(f"spec.dependencies[{i}]", "empty string (FlashInfer-Bench 0.1.2 refuses it)"))
    for i, src in enumerate(s.sources):
        if not src.content:
            out.append(_err(f"sources[{i}].content", "empty file (FlashInfer-Bench 0.1.2 refuses it)"))
    if s.spec.language in (SupportedLanguages.PYTHON, SupportedLanguages.TRITON, SupportedLanguages.TILELANG):
        out += _python_entry_problems(s, definitions.get(s.definition))
    return out


# decorators that keep the decorated function's positional parameters (the build's check follows
# __wrapped__ the same way); under any other decorator the signature is not checked here
_SIGNATURE_KEEPING = frozenset({"no_grad", "inference_mode", "enable_grad", "compile", "wraps", "cache", "lru_cache", "disable"})


def _decorator_name(node: ast.expr) -> str:
    node = node.func if isinstance(node, ast.Call) else node
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _module_bindings(body: List[ast.stmt], top: bool = True) -> Tuple[Dict[str, List[Tuple[ast.stmt, bool]]], bool]:
    """Names a module binds at import (outside functions and classes), each with its binding
    statements and whether the statement sits directly in the module body; and whether a star
    import makes the names unknowable."""
    out: Dict[str, List[Tuple[ast.stmt, bool]]] = {}
    star = False

    def targets(t: ast.expr) -> List[str]:
        if isinstance(t, ast.Name):
            return [t.id]
        if isinstance(t, (ast.Tuple, ast.List)):
            return [n for e in t.elts for n in targets(e)]
        if isinstance(t, ast.Starred):
            return targets(t.value)
        return []

    for node in body:
        names: List[str] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [n for t in node.targets for n in targets(t)]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            names = targets(node.target)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if a.name == "*":
                    star = True
                else:
                    names.append((a.asname or a.name).split(".")[0])
        else:  # if/try/with/for/while at module level: their bodies run at import too
            for field in ("body", "orelse", "finalbody", "handlers"):
                for sub in getattr(node, field, None) or []:
                    inner, s2 = _module_bindings(sub.body if isinstance(sub, ast.ExceptHandler) else [sub], False)
                    star = star or s2
                    for k, v in inner.items():
                        out.setdefault(k, []).extend((st, False) for st, _ in v)
            if isinstance(node, (ast.For, ast.AsyncFor)):
                names = targets(node.target)
        for n in names:
            out.setdefault(n, []).append((node, top))
    return out, star


def _python_entry_problems(s: Solution, d: Optional[Definition] = None) -> List[Finding]:
    """Python/Triton sources, before anything is built: every .py source parses; the entry file is
    a .py file that defines the entry symbol at import; an entry that is a plain `def` takes the
    arguments the definition passes (inputs, then outputs when destination-passing)."""
    from .signature import ast_arity_problem, effective_dps

    out: List[Finding] = []
    trees: Dict[int, ast.Module] = {}
    for i, src in enumerate(s.sources):
        if PurePosixPath(src.path).suffix != ".py":
            continue
        try:
            trees[i] = ast.parse(src.content)
        except SyntaxError as e:
            where = src.path + (f":{e.lineno}" if e.lineno else "")
            out.append(_err(f"sources[{i}].content", f"{where}: syntax error: {e.msg}"))
        except UnicodeError:  # a lone surrogate (JSON allows "\ud800"): the file cannot even be written
            out.append(_err(f"sources[{i}].content", f"{src.path}: not UTF-8 text (a lone surrogate)"))
        except (ValueError, RecursionError, MemoryError) as e:
            out.append(_err(f"sources[{i}].content", f"{src.path}: cannot be parsed ({type(e).__name__})"))
    entry = s.get_source(s.spec.entry_file)
    if entry is None or not s.spec.entry_symbol.isidentifier():
        return out  # reported by Solution.problems
    i = s.sources.index(entry)
    if PurePosixPath(entry.path).suffix != ".py":
        return out + [_err("spec.entry_point", f"{entry.path} is not a .py file (a {s.spec.language} entry is imported as a Python module)")]
    tree = trees.get(i)
    if tree is None:
        return out
    bindings, star = _module_bindings(tree.body)
    symbol = s.spec.entry_symbol
    if symbol not in bindings:
        if not star:
            out.append(_err("spec.entry_point", f"{entry.path} defines no top-level {symbol!r}"))
        return out
    found = bindings[symbol]
    last, top = found[-1]
    if d is None or not top or not all(isinstance(st, ast.FunctionDef) for st, _ in found):
        return out  # a class, an alias, an import, or chosen at import time: checked by the build
    if any(_decorator_name(x) not in _SIGNATURE_KEEPING for x in last.decorator_list):
        return out
    why = ast_arity_problem(last, list(d.inputs), list(d.outputs), effective_dps(s, d))
    if why:
        out.append(_err("spec.entry_point", f"{entry.path}:{last.lineno}: {why}"))
    return out


# --------------------------------------------------------------------------- workloads
def _scalar_type_problem(spec_dtype: DType, value: Any) -> Optional[str]:
    if spec_dtype is DType.BOOL:
        ok = isinstance(value, bool)
    elif spec_dtype.is_int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok:
        shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "..."
        return f"value {shown} ({type(value).__name__}) does not fit the declared dtype {spec_dtype}"
    if spec_dtype.is_int:
        lo, hi = -(1 << (spec_dtype.bits - 1)), (1 << (spec_dtype.bits - 1)) - 1
        if not lo <= value <= hi:
            return f"value {value if value.bit_length() < 200 else 'with ' + str(value.bit_length()) + ' bits'} is outside the range of {spec_dtype} [{lo}, {hi}]"
    elif isinstance(value, float) and not math.isfinite(value):
        return f"value {value} is not a finite number"
    elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        return f"value with {value.bit_length()} bits does not fit {spec_dtype}"
    return None


def _flops_problem(d: Definition, var: Dict[str, int]) -> Optional[str]:
    """Why the definition's flops cannot be counted for these axes (None when it can)."""
    from .expr import ExprError

    try:
        d.flop_count(var)
    except (ExprError, ValueError, TypeError, ArithmeticError) as e:
        expr = d.flops if d.flops is not None else next(t for t in d.tags if t.startswith("flops:"))
        shown = repr(expr) if len(expr) <= 80 else repr(expr[:80]) + "..."
        return f"the definition's flops {shown} cannot be counted for these axes: {e}"
    return None


def workload_problems(
    d: Definition,
    w: Workload,
    dataset_root: Optional[Path] = None,
    headers: Optional[HeaderCache] = None,
    fields_set: Optional[set] = None,
    specs: Optional[Dict[str, Dict[str, Any]]] = None,
    missing_blobs: str = "error",
) -> List[Finding]:
    """Checks of one workload against its definition (field paths start at 'workload').

    `dataset_root` resolves safetensors paths; without it their files are not checked. `specs`
    are the definition's resolved input generators (default: the shipped ones of its op type):
    constraints that read tensor values are checked on the inputs the run would generate, and on
    blobs that exist. `missing_blobs="generate"` reports a missing blob as a warning (the run
    draws that input from its generator instead).
    """
    out: List[Finding] = []
    headers = headers or HeaderCache()
    if fields_set is not None:
        for f in ("inputs", "uuid"):
            if f not in fields_set:
                out.append(_err(f"workload.{f}", "required field is missing (FlashInfer-Bench 0.1.2 needs it)"))
    consts = d.const_axes
    axes_ok = True
    for ax in d.var_axes:
        if ax not in w.axes:
            out.append(_err("workload.axes", f"missing var axis {ax!r}"))
            axes_ok = False
    for ax, v in w.axes.items():
        if ax in consts:
            if v != consts[ax]:
                out.append(_err(f"workload.axes.{ax}", f"is {v}, the definition fixes it to {consts[ax]}"))
                axes_ok = False
        elif ax not in d.axes:
            out.append(_warn(f"workload.axes.{ax}", f"unknown axis {ax!r} (ignored)"))
    shapes: Dict[str, Optional[Tuple[int, ...]]] = {}
    if axes_ok:
        values = {ax: w.axes[ax] for ax in d.var_axes}
        for group, got in (
            ("inputs", d.input_shapes_by_name(values)),
            ("outputs", d.output_shapes_by_name(values)),
        ):
            for name, shape in got.items():
                if shape is None:
                    continue
                n = math.prod(shape)
                if n > MAX_TENSOR_ELEMENTS:
                    out.append(_err(
                        "workload.axes",
                        f"{group[:-1]} {name!r} would have shape {shape}: {n} elements, more than "
                        "2^36 (an absurd size, likely a typo)",
                    ))
                    axes_ok = False
            if group == "inputs":
                shapes = got
        if axes_ok:
            out += _constraint_problems(d, w, dataset_root, specs, missing_blobs)
            why = _flops_problem(d, values)
            if why:
                out.append(_err("workload.axes", why))
    for name, spec in w.inputs.items():
        field = f"workload.inputs.{name}"
        if name not in d.inputs:
            hint = " (an output)" if name in d.outputs else ""
            out.append(_err(field, f"unknown input {name!r}{hint}; the definition's inputs are {list(d.inputs)}"))
            continue
        tspec = d.inputs[name]
        if isinstance(spec, ScalarInput):
            if tspec.shape:
                out.append(_err(field, f"a scalar value for a tensor input of shape {tspec.shape}"))
            else:
                why = _scalar_type_problem(tspec.dtype, spec.value)
                if why:
                    out.append(_err(f"{field}.value", why))
        elif isinstance(spec, RandomInput):
            if spec.dtype is not None:
                try:
                    dt = DType(spec.dtype)
                except ValueError:
                    out.append(_err(f"{field}.dtype", f"unknown dtype {spec.dtype!r}"))
                else:
                    if dt != tspec.dtype:
                        out.append(_err(f"{field}.dtype", f"{dt} but the definition declares {tspec.dtype}"))
            if tspec.shape is None:
                out.append(_warn(field, "a random value for a scalar input"))
        elif isinstance(spec, SafetensorsInput):
            found = _safetensors_problems(field, spec, tspec.dtype, shapes.get(name), dataset_root, headers)
            if missing_blobs == "generate":
                found = [
                    _warn(f.field, f.message + " (missing_blobs=generate: drawn from its generator instead)")
                    if f.message.startswith("file ") and "not found" in f.message else f
                    for f in found
                ]
            out += found
    for name, tspec in d.inputs.items():
        if tspec.shape is None and name not in w.inputs:
            out.append(_warn("workload.inputs", f"scalar input {name!r} has no value (it will be random)"))
    return out


def blob_file(root: Optional[Path], path: str) -> Optional[Path]:
    """The file a safetensors input names (relative to `root` unless absolute), or None when it is
    not a readable file or the path cannot name one (NUL, too long): never raises."""
    if path_text_problem(path):
        return None
    p = Path(path)
    f = p if p.is_absolute() or root is None else Path(root) / p
    try:
        return f if f.is_file() else None
    except (OSError, ValueError):
        return None


def _blob_values(d: Definition, w: Workload, root: Optional[Path], names: set, missing_blobs: str) -> Dict[str, Any]:
    """Blob inputs that constraints read, as numpy arrays (None for a blob that cannot be read:
    its own problem is reported by the safetensors check)."""
    out: Dict[str, Any] = {}
    for name in names:
        src = w.inputs.get(name)
        if not isinstance(src, SafetensorsInput):
            continue
        path = blob_file(root, src.path)
        if path is None:
            bad = path_text_problem(src.path) is not None
            out[name] = "generate" if missing_blobs == "generate" and not bad else None
            continue
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(path), framework="np") as f:
                out[name] = f.get_tensor(src.tensor_key)
        except (OSError, KeyError, ValueError, TypeError, SafetensorError):
            out[name] = None  # unreadable, no such key, or a dtype numpy lacks: reported by the header check
    return out


def _constraint_problems(
    d: Definition, w: Workload, root: Optional[Path], specs: Optional[Dict[str, Dict[str, Any]]], missing_blobs: str,
) -> List[Finding]:
    """The constraints on this workload: over its axes and input shapes, then (for those that read
    tensor values) over the inputs the run would use: blobs that exist, and the structured inputs
    the generators draw (the same code, with seed 0)."""
    from .expr import names_in
    from .input_specs import INTEGER_KINDS, InputSpecError, generate_integer_inputs
    from .op_types import family_settings

    if specs is None:
        specs = family_settings(d)["inputs"]
    var = {a: w.axes[a] for a in d.var_axes}
    report = d.constraint_report(var)
    out = [_err("workload.axes", f"constraint {f.message} does not hold (constraints[{f.index}])") for f in report.failed]
    scalars = {n: s.value for n, s in w.inputs.items() if isinstance(s, ScalarInput)}
    blobs = _blob_values(d, w, root, {n for n, s in w.inputs.items() if isinstance(s, SafetensorsInput)}, missing_blobs)
    given: Dict[str, Any] = {n: v for n, v in blobs.items() if v is not None and not isinstance(v, str)}
    given.update(scalars)
    drawable = {
        n: s for n, s in specs.items()
        if s.get("kind") in INTEGER_KINDS and n in d.inputs
        and (n not in w.inputs or isinstance(w.inputs[n], RandomInput) or isinstance(blobs.get(n), str))
    }
    try:
        drawn = generate_integer_inputs(d, var, drawable, seed=0, given=given, dry=True)
    except InputSpecError as e:
        return out + [_err("workload.inputs", f"cannot generate the inputs from the axes: {e}")]
    if not report.deferred:
        return out
    values = {**given, **drawn}
    later = d.constraint_report(var, values)
    for f in later.failed:
        out.append(_err(
            "workload.inputs",
            f"constraint {f.message} does not hold (constraints[{f.index}]) on the "
            + ("blob" if any(n in given for n in names_in(f.expr)) else "generated") + " inputs",
        ))
    # constraints on random or unreadable inputs are checked on the actual inputs at run time
    return out


def _safetensors_problems(
    field: str,
    spec: SafetensorsInput,
    dtype: DType,
    shape: Optional[Tuple[int, ...]],
    root: Optional[Path],
    headers: HeaderCache,
) -> List[Finding]:
    out: List[Finding] = []
    why = path_text_problem(spec.path)
    if why:
        shown = repr(spec.path) if len(spec.path) <= 80 else repr(spec.path[:80]) + "..."
        return [_err(f"{field}.path", f"path {shown} {why}")]
    rel = PurePosixPath(spec.path)
    if rel.is_absolute():
        out.append(_warn(f"{field}.path", "absolute path; paths relative to the dataset root keep it relocatable"))
    elif ".." in rel.parts:
        out.append(_warn(f"{field}.path", "path leaves the dataset root"))
    if root is None:
        return out
    f = blob_file(root, spec.path)
    if f is None:
        return out + [_err(f"{field}.path", f"file {spec.path!r} not found under the dataset root {str(root)!r}")]
    try:
        header = headers.get(f)
    except SafetensorsHeaderError as e:
        return out + [_err(f"{field}.path", f"{spec.path}: not a readable safetensors file: {e}")]
    info = header.get(spec.tensor_key)
    if info is None:
        keys = sorted(header)[:10]
        return out + [_err(f"{field}.tensor_key", f"no tensor {spec.tensor_key!r} in {spec.path} (it has {keys})")]
    if info["dtype"] not in _ST_DTYPES[dtype]:
        out.append(_err(
            f"{field}.tensor_key",
            f"tensor {spec.tensor_key!r} in {spec.path} is {info['dtype']}, the definition declares {dtype}",
        ))
    got = tuple(info["shape"])
    if shape is not None and got != shape:
        packed = dtype is DType.FLOAT4_E2M1 and got[:-1] == shape[:-1] and got and got[-1] * 2 == shape[-1]
        if not packed:
            out.append(_err(
                f"{field}.tensor_key",
                f"tensor {spec.tensor_key!r} in {spec.path} has shape {list(got)}, the workload needs {list(shape)}",
            ))
    return out


# --------------------------------------------------------------------------- traces
def _evaluation_problems(t: Trace) -> List[Finding]:
    ev = t.evaluation
    out: List[Finding] = []
    if ev is None:
        return [_err("evaluation", "a trace line needs an evaluation (a line without one is a workload)")]
    if ev.correctness is not None:
        for k in ("max_relative_error", "max_absolute_error"):
            v = getattr(ev.correctness, k)
            if not math.isnan(v) and v < 0:
                out.append(_err(f"evaluation.correctness.{k}", f"negative ({v})"))
    if ev.performance is not None:
        for k in ("latency_ms", "reference_latency_ms", "speedup_factor"):
            v = getattr(ev.performance, k)
            if math.isnan(v) or v < 0:
                out.append(_err(f"evaluation.performance.{k}", f"must be a non-negative number, got {v}"))
        if ev.status == EvaluationStatus.PASSED and ev.performance.latency_ms == 0:
            out.append(_warn("evaluation.performance.latency_ms", "a PASSED trace with zero latency"))
    return out


# --------------------------------------------------------------------------- the dataset
class _Collector:
    """Turns findings about an entity into Problems located at the entity's file and line."""

    def __init__(self, ts: TraceSet):
        self.ts = ts
        self.problems: List[Problem] = []

    def add(self, entity: Any, findings: List[Finding]) -> None:
        path, line, prefix = self.ts.origin(entity)
        for f in findings:
            field = ".".join(p for p in (prefix, f.field or "") if p) or None
            self.problems.append(Problem(path, f.message, line, field, f.level))


def validate_trace_set(
    ts: TraceSet, check_files: bool = True, broken: Optional[set] = None
) -> List[Problem]:
    """Problems of a loaded TraceSet beyond those found while loading (see `ts.problems`).

    check_files: resolve safetensors inputs under `ts.root` and read their headers.
    broken: names of definitions whose file exists but did not load (their errors are already
    reported): what refers to them is not reported again as 'unknown definition'.
    """
    broken = broken or set()
    c = _Collector(ts)
    root = ts.root if check_files else None
    headers = HeaderCache()
    for d in ts.definitions.values():
        c.add(d, definition_problems(d))
        path, _, prefix = ts.origin(d)
        if not prefix and path != "<memory>" and Path(path).stem != d.name:
            c.add(d, [_warn("name", f"{d.name!r} differs from the file name {Path(path).name!r}")])
    for s in ts.all_solutions():
        if s.definition in broken:
            c.add(s, [f for f in solution_problems(s, ts.definitions) if f.field != "definition"])
        else:
            c.add(s, solution_problems(s, ts.definitions))
    for dname in sorted(ts.solutions):
        claims = ts.baseline_claims(dname)
        for s in claims if len(claims) > 1 else []:
            others = ", ".join(x.name for x in claims if x is not s)
            c.add(s, [_warn("author", f"definition {dname!r} has {len(claims)} solutions by the author 'baseline' "
                                      f"(also {others}); a definition has one baseline, so reports show no speedup vs baseline for it")])

    seen_uuid: Dict[str, Trace] = {}
    checked: Dict[str, Workload] = {}
    for dname, items in ts.workloads.items():
        for w in items:
            findings: List[Finding] = []
            path, _, _ = ts.origin(w)
            in_traces = _top_dir(ts, path) == "traces"
            if not w.is_workload:
                findings.append(_err(
                    "solution" if w.solution is not None else "evaluation",
                    "a workload line must have solution and evaluation null (results go in traces/)",
                ))
            elif in_traces:
                findings.append(_err("evaluation", "a line in traces/ without solution and evaluation (workloads go in workloads/)"))
            d = ts.definitions.get(dname)
            if d is None:
                if dname not in broken:
                    findings.append(_err("definition", f"unknown definition {dname!r}"))
            else:
                findings += workload_problems(d, w.workload, root, headers, w.workload.model_fields_set)
                checked[w.workload.uuid] = w.workload
            first = seen_uuid.get(w.workload.uuid)
            if not w.is_workload:
                pass  # a result line misplaced in workloads/: reported above, not a workload
            elif first is not None:
                fpath, fline, _ = ts.origin(first)
                where = f"{fpath}:{fline}" if fline is not None else fpath
                findings.append(_err("workload.uuid", f"duplicate workload uuid {w.workload.uuid!r} (first at {where})"))
            else:
                seen_uuid[w.workload.uuid] = w
            c.add(w, findings)

    for dname, items in ts.traces.items():
        for t in items:
            findings = []
            d = ts.definitions.get(dname)
            if d is None:
                if dname not in broken:
                    findings.append(_err("definition", f"unknown definition {dname!r}"))
            else:
                known = checked.get(t.workload.uuid)
                if known is None or known != t.workload:
                    findings += workload_problems(d, t.workload, root, headers, t.workload.model_fields_set)
                    checked.setdefault(t.workload.uuid, t.workload)
                if t.workload.uuid not in seen_uuid:
                    findings.append(_warn("workload.uuid", f"workload {t.workload.uuid!r} is not in workloads/"))
            if t.solution is None:
                findings.append(_err("solution", "a trace line needs a solution"))
            else:
                s = ts.get_solution(t.solution)
                if s is None:
                    findings.append(_warn("solution", f"unknown solution {t.solution!r}"))
                elif s.definition != dname and d is not None:
                    findings.append(_err("solution", f"solution {t.solution!r} implements {s.definition!r}, not {dname!r}"))
            findings += _evaluation_problems(t)
            c.add(t, findings)
    return c.problems


def _top_dir(ts: TraceSet, path: str) -> Optional[str]:
    """'workloads', 'traces', ... : the dataset directory a file lies in."""
    if ts.root is None or path == "<memory>":
        return None
    return _rel_top(str(ts.root), path)


@functools.lru_cache(maxsize=1024)
def _rel_top(root: str, path: str) -> Optional[str]:
    try:
        return Path(path).relative_to(root).parts[0]
    except (ValueError, IndexError):
        return None


def _broken_definitions(ts: TraceSet) -> set:
    """Names in definition files that did not load (their own errors are already reported)."""
    if ts.root is None or not ts.root.is_dir():
        return set()
    loaded = {ts.origin(d)[0] for d in ts.definitions.values()}
    out = set()
    for f in (ts.root / "definitions").rglob("*.json"):
        if str(f) in loaded:
            continue
        out.add(f.stem)  # the layout names the file after the definition
        obj, _ = read_json(f)
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            out.add(obj["name"])
    return out


def run_file_name_problem(path: str) -> Optional[str]:
    """Why the run cannot take a dataset file at this path (None when it can): Snakemake, which
    the run's workflow is, reads '{...}' in a file name as a wildcard (and aborted the whole run)."""
    if "{" in path or "}" in path:
        return ("the file name contains '{' or '}', which the run's workflow (Snakemake) reads as a "
                "wildcard: rename the file (the run leaves it out)")
    return None


def _file_name_problems(root: Path) -> List[Problem]:
    out = []
    for sub, pattern in (("definitions", "*.json"), ("solutions", "*.json"), ("workloads", "*.jsonl")):
        for f in sorted((root / sub).rglob(pattern)):
            why = run_file_name_problem(str(f.relative_to(root)))
            if why:
                out.append(Problem(str(f), why))
    return out


def _sort_key(p: Problem) -> Tuple[str, int]:
    return (p.path, p.line or 0)


def check_dataset(path: Union[str, Path], check_files: bool = True) -> Tuple[TraceSet, List[Problem]]:
    """Load a dataset directory (or a TraceSet bundle file) and find all its problems.

    Returns the TraceSet (with every entry that loaded) and the problems, sorted by file and
    line. It never raises for bad content: all of it becomes Problems.
    """
    path = Path(path)
    if path.is_file():
        ts = TraceSet.load(path, strict=False)
    elif path.is_dir():
        ts = TraceSet.from_path(path)
        if not any((path / d).is_dir() for d in ("definitions", "solutions", "workloads", "traces")):
            ts.problems.append(
                Problem(str(path), "no definitions/, solutions/, workloads/ or traces/ here: not a dataset")
            )
    else:
        return TraceSet(), [Problem(str(path), "no such dataset directory or file")]
    problems = list(ts.problems) + validate_trace_set(ts, check_files, _broken_definitions(ts))
    if path.is_dir():
        problems += _file_name_problems(path)
    # one Problem per distinct (place, message): a workload shared by many traces says it once
    unique = list(dict.fromkeys(problems))
    return ts, sorted(unique, key=_sort_key)


def validate_dataset(path: Union[str, Path], check_files: bool = True) -> List[Problem]:
    """Every error and warning of a dataset directory (or a TraceSet bundle file), sorted by file
    and line; `[p for p in problems if p.level == "error"]` empty means the dataset is valid."""
    return check_dataset(path, check_files)[1]


def errors(problems: List[Problem]) -> List[Problem]:
    return [p for p in problems if p.level == "error"]


def warnings(problems: List[Problem]) -> List[Problem]:
    return [p for p in problems if p.level == "warning"]
