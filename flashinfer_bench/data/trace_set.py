"""TraceSet: a whole dataset (definitions, solutions, workloads, traces) in memory.

Loading never stops at a bad file or line: good entries are kept and every problem is recorded
with its file, line and field, so one broken line never hides the rest.
"""
from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Type, TypeVar, Union

from pydantic import BaseModel, ValidationError

from .. import env

from .definition import Definition
from .io import (
    DatasetError,
    Problem,
    atomic_write_json,
    atomic_write_text,
    dump_model,
    iter_jsonl,
    read_json,
    unknown_fields,
    validation_problems,
)
from .json_utils import append_jsonl_file
from .names import NameClaims
from .solution import Solution
from .trace import EvaluationStatus, Trace
from .trace_files import merge_traces, trace_key
from .workload import Workload

M = TypeVar("M", bound=BaseModel)
PathLike = Union[str, Path]


def _parse(model: Type[M], obj: Any, path: str, line: Optional[int]) -> Tuple[Optional[M], List[Problem]]:
    if not isinstance(obj, dict):
        return None, [Problem(path, f"expected a JSON object, got {type(obj).__name__}", line)]
    try:
        m = model.model_validate(obj)
    except ValidationError as e:
        return None, validation_problems(e, path, line, data=obj)
    return m, unknown_fields(m, path, line)


class TraceSet:
    """A dataset in memory. With a root (a dataset directory: `from_path`, or `TraceSet(root=...)`)
    `add_traces` and `add_workload_traces` also write there, as FlashInfer-Bench 0.1.2 does; a set
    read from a single-file bundle (`load`) or made without a root stays in memory."""

    def __init__(
        self,
        root: Optional[PathLike] = None,
        definitions: Optional[Dict[str, Definition]] = None,
        solutions: Optional[Dict[str, List[Solution]]] = None,
        workloads: Optional[Dict[str, List[Trace]]] = None,
        traces: Optional[Dict[str, List[Trace]]] = None,
    ):
        self.root: Optional[Path] = Path(root) if root is not None else None
        self.definitions: Dict[str, Definition] = dict(definitions or {})
        self.solutions: Dict[str, List[Solution]] = defaultdict(list, solutions or {})
        self.workloads: Dict[str, List[Trace]] = defaultdict(list, workloads or {})
        self.traces: Dict[str, List[Trace]] = defaultdict(list, traces or {})
        self.problems: List[Problem] = []
        # where each entity was read from: ("definition"|"solution", name) -> file
        self.files: Dict[Tuple[str, str], Path] = {}
        self._solution_by_name: Dict[str, Solution] = {}
        self._content_hashes: Dict[str, Tuple[Solution, str]] = {}  # name -> (solution, its content hash)
        self._claims = NameClaims()  # solution names two files claimed are neither's
        # id(entity) -> (entity, file, line, field prefix): where each loaded entity came from,
        # so `validate` can name the file and line of a problem found after loading
        self._origins: Dict[int, Tuple[Any, str, Optional[int], str]] = {}
        # whether add_traces/add_workload_traces write under root (not for a bundle's folder)
        self._persist = self.root is not None
        for sols in self.solutions.values():
            for s in sols:
                self._solution_by_name[s.name] = s
                self._claims.claim(s.name, "<memory>")

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_path(cls, path: Optional[PathLike] = None, strict: bool = False) -> "TraceSet":
        """Load a dataset directory (recursive globs); strict raises DatasetError on any error.

        path None: FLASHINFER_BENCH_DATASET_PATH / FIB_DATASET_PATH, else ./flashinfer-trace."""
        root = Path(path) if path is not None else env.dataset_path()
        ts = cls(root=root)
        if not root.is_dir():
            ts.problems.append(Problem(str(root), "dataset directory does not exist"))
            if strict:
                raise DatasetError(ts.problems)
            return ts
        for f in sorted((root / "definitions").rglob("*.json")):
            obj, probs = read_json(f)
            ts.problems += probs
            if obj is None:
                continue
            d, probs = _parse(Definition, obj, str(f), None)
            ts.problems += probs
            if d is not None:
                ts._origins[id(d)] = (d, str(f), None, "")
                ts._add_definition(d, f)
        for f in sorted((root / "solutions").rglob("*.json")):
            obj, probs = read_json(f)
            ts.problems += probs
            if obj is None:
                continue
            s, probs = _parse(Solution, obj, str(f), None)
            ts.problems += probs
            if s is not None:
                ts._origins[id(s)] = (s, str(f), None, "")
                ts._add_solution(s, f)
        for kind in ("workloads", "traces"):
            for f in sorted((root / kind).rglob("*.jsonl")):
                for line, obj, probs in iter_jsonl(f):
                    ts.problems += probs
                    if obj is None:
                        continue
                    t, probs = _parse(Trace, obj, str(f), line)
                    ts.problems += probs
                    if t is None:
                        continue
                    ts._origins[id(t)] = (t, str(f), line, "")
                    if kind == "workloads" or t.is_workload:
                        ts.workloads[t.definition].append(t)
                    else:
                        ts.traces[t.definition].append(t)
        if strict and ts.errors:
            raise DatasetError(ts.errors)
        return ts

    def origin(self, entity: Any) -> Tuple[str, Optional[int], str]:
        """(file, line or None, field prefix) an entity was loaded from; ("<memory>", None, "")
        for one added in memory."""
        o = self._origins.get(id(entity))
        if o is None or o[0] is not entity:
            return ("<memory>", None, "")
        return o[1], o[2], o[3]

    @property
    def errors(self) -> List[Problem]:
        return [p for p in self.problems if p.level == "error"]

    @property
    def warnings(self) -> List[Problem]:
        return [p for p in self.problems if p.level == "warning"]

    def _add_definition(self, d: Definition, f: Optional[Path]) -> None:
        if d.name in self.definitions:
            first = self.files.get(("definition", d.name))
            self.problems.append(
                Problem(str(f or "<memory>"), f"duplicate definition name {d.name!r} (first in {first})", None, "name")
            )
            return
        self.definitions[d.name] = d
        if f is not None:
            self.files[("definition", d.name)] = f

    def _add_solution(self, s: Solution, f: Optional[Path]) -> None:
        """A name two files claim is neither's (`names.NameClaims`, as in the pipeline's plan)."""
        dup = self._claims.claim(s.name, str(f or "<memory>"))
        if dup is not None:
            self.problems.append(dup)
            self.files.pop(("solution", s.name), None)
            held = self._solution_by_name.pop(s.name, None)
            if held is not None:
                self.solutions[held.definition] = [x for x in self.solutions[held.definition] if x is not held]
            return
        self.solutions[s.definition].append(s)
        self._solution_by_name[s.name] = s
        if f is not None:
            self.files[("solution", s.name)] = f

    # ------------------------------------------------------------------ adding
    def add_definition(self, definition: Definition) -> None:
        if definition.name in self.definitions:
            raise ValueError(f"definition {definition.name!r} already exists")
        self._add_definition(definition, None)

    def add_solution(self, solution: Solution) -> None:
        if solution.name in self._solution_by_name:
            raise ValueError(f"solution {solution.name!r} already exists")
        self._add_solution(solution, None)

    def add_workload(self, workload: Union[Trace, Workload], definition: Optional[str] = None) -> Trace:
        if isinstance(workload, Workload):
            if definition is None:
                raise ValueError("add_workload(Workload) needs definition=<name>")
            workload = Trace(definition=definition, workload=workload)
        self.workloads[workload.definition].append(workload)
        return workload

    def add_trace(self, trace: Trace) -> None:
        if trace.is_workload:
            self.workloads[trace.definition].append(trace)
        else:
            self.traces[trace.definition].append(trace)

    def add_traces(self, traces: Iterable[Trace]) -> None:
        """Add results (and workload lines); with a dataset root, also write them there (0.1.2).

        Results go into traces/<op_type>/<definition>.jsonl by the workflow's merge rule: a result
        for the same definition, solution, workload and hardware replaces the earlier one, in the
        file and in memory; workload lines are appended to workloads/. Raises ValueError, before
        anything is written, for a trace whose definition the set does not hold (its op_type
        names the file). Without a root the traces are only added in memory."""
        traces = list(traces)
        if not self._persist:
            for t in traces:
                self.add_trace(t)
            return
        self._check_known(traces, "add_traces")
        results: Dict[str, List[Trace]] = defaultdict(list)
        workloads: List[Trace] = []
        for t in traces:
            (workloads if t.is_workload else results[t.definition]).append(t)
        for dname, new in results.items():
            merge_traces(self.root / self.jsonl_path("traces", dname), new)
            keys = {trace_key(t) for t in new}
            self.traces[dname] = [t for t in self.traces[dname] if trace_key(t) not in keys] + new
        self.add_workload_traces(workloads)

    def add_workload_traces(self, traces: Iterable[Trace]) -> None:
        """Add workload lines; with a dataset root, append them to workloads/<op_type>/<def>.jsonl."""
        traces = list(traces)
        if self._persist:
            self._check_known(traces, "add_workload_traces")
            by_def: Dict[str, List[Trace]] = defaultdict(list)
            for t in traces:
                by_def[t.definition].append(t)
            for dname, items in by_def.items():
                append_jsonl_file(items, self.root / self.jsonl_path("workloads", dname))
        for t in traces:
            self.workloads[t.definition].append(t)

    @property
    def persists(self) -> bool:
        """Whether add_traces/add_workload_traces also write under `root`."""
        return self._persist

    def _check_known(self, traces: List[Trace], what: str) -> None:
        unknown = sorted({t.definition for t in traces} - set(self.definitions))
        if unknown:
            raise ValueError(f"{what}: definitions {unknown} are not in this TraceSet; nothing was added")

    # ------------------------------------------------------------------ lookups
    def get_definition(self, name: str) -> Optional[Definition]:
        return self.definitions.get(name)

    def get_solution(self, name: str) -> Optional[Solution]:
        return self._solution_by_name.get(name)

    def all_solutions(self) -> List[Solution]:
        return [s for sols in self.solutions.values() for s in sols]

    def solutions_for(self, definition: str) -> List[Solution]:
        return list(self.solutions.get(definition, []))

    def baseline_claims(self, definition: str) -> List[Solution]:
        """The definition's solutions by the author `baseline`."""
        return [s for s in self.solutions.get(definition, []) if s.is_baseline]

    def baseline_of(self, definition: str) -> Optional[Solution]:
        """The definition's baseline: its one solution by the author `baseline`, or None where it
        has none or several. A solution names its own author, so a second one claiming
        `baseline` must not silently become the yardstick of the others (the report says why
        the column is empty; `validate` warns)."""
        found = self.baseline_claims(definition)
        return found[0] if len(found) == 1 else None

    def workloads_for(self, definition: str) -> List[Trace]:
        return list(self.workloads.get(definition, []))

    def traces_for(self, definition: str, solution: Optional[str] = None, hardware: Optional[str] = None) -> List[Trace]:
        out = []
        for t in self.traces.get(definition, []):
            if solution is not None and t.solution != solution:
                continue
            if hardware is not None and (t.evaluation is None or t.evaluation.environment.hardware != hardware):
                continue
            out.append(t)
        return out

    def all_traces(self) -> List[Trace]:
        return [t for ts in self.traces.values() for t in ts]

    def is_stale(self, t: Trace) -> bool:
        """Whether `t` measured another version of its solution than the one this set holds: its
        environment's `solution_hash` (written by the worker since session 21) differs from the
        solution's content hash. A trace without one, or of a solution not in the set, is not
        stale (nothing to compare). Stale results are kept (history) but never ranked: the report
        and apply() skip them, as `best_*` here do."""
        h = (t.evaluation.environment.model_extra or {}).get("solution_hash") if t.evaluation is not None else None
        if not isinstance(h, str) or not h or t.solution is None:
            return False
        s = self._solution_by_name.get(t.solution)
        if s is None:
            return False
        held = self._content_hashes.get(s.name)
        if held is None or held[0] is not s:
            held = self._content_hashes[s.name] = (s, s.content_hash())
        return held[1] != h

    def hardware(self) -> List[str]:
        return sorted({t.evaluation.environment.hardware for t in self.all_traces() if t.evaluation})

    # ------------------------------------------------------------------ answers
    @staticmethod
    def _passed_latency(t: Trace) -> float:
        ev = t.evaluation
        if ev is None or ev.status != EvaluationStatus.PASSED or ev.performance is None:
            return math.inf
        lat = ev.performance.latency_ms
        return lat if lat is not None and math.isfinite(lat) and lat > 0 else math.inf

    def best_trace(self, definition: str, workload_uuid: str, hardware: Optional[str] = None) -> Optional[Trace]:
        """Fastest PASSED trace for one workload (on one hardware when given), of the solutions'
        current versions (`is_stale`)."""
        cands = [t for t in self.traces_for(definition, hardware=hardware) if t.workload.uuid == workload_uuid]
        cands = [t for t in cands if math.isfinite(self._passed_latency(t)) and not self.is_stale(t)]
        return min(cands, key=self._passed_latency, default=None)

    def best_traces(self, definition: str, hardware: Optional[str] = None) -> Dict[Tuple[str, str], Trace]:
        """Fastest PASSED trace per (workload uuid, hardware), of the solutions' current versions."""
        best: Dict[Tuple[str, str], Trace] = {}
        for t in self.traces_for(definition, hardware=hardware):
            lat = self._passed_latency(t)
            if not math.isfinite(lat) or self.is_stale(t):
                continue
            k = (t.workload.uuid, t.evaluation.environment.hardware)
            if k not in best or lat < self._passed_latency(best[k]):
                best[k] = t
        return best

    def best_solution(self, definition: str, hardware: Optional[str] = None) -> Optional[str]:
        """The solution that wins the most workloads of a definition (ties: lower geomean latency)."""
        wins = Counter(t.solution for t in self.best_traces(definition, hardware).values())
        if not wins:
            return None

        def geomean(sol: Optional[str]) -> float:
            lats = [self._passed_latency(t) for t in self.traces_for(definition, sol, hardware) if not self.is_stale(t)]
            lats = [x for x in lats if math.isfinite(x)]
            return math.exp(sum(math.log(x) for x in lats) / len(lats)) if lats else math.inf

        return max(wins, key=lambda s: (wins[s], -geomean(s)))

    def summary(self) -> Dict[str, Any]:
        """Counts of the set; "total" and the latency keys are 0.1.2's (over all result lines and
        the PASSED ones with a finite latency; None when there is none)."""
        statuses = Counter(
            str(t.evaluation.status) for t in self.all_traces() if t.evaluation is not None
        )
        total = sum(statuses.values())
        lats = [x for x in map(self._passed_latency, self.all_traces()) if math.isfinite(x)]
        return {
            "definitions": len(self.definitions),
            "solutions": sum(len(v) for v in self.solutions.values()),
            "workloads": sum(len(v) for v in self.workloads.values()),
            "traces": total,
            "total": len(self.all_traces()),
            "passed": statuses.get("PASSED", 0),
            "failed": total - statuses.get("PASSED", 0),
            "by_status": dict(statuses),
            "min_latency_ms": min(lats) if lats else None,
            "max_latency_ms": max(lats) if lats else None,
            "avg_latency_ms": sum(lats) / len(lats) if lats else None,
        }

    # ----- FlashInfer-Bench 0.1.2's queries -----
    def filter_traces(self, def_name: str, atol: float = 1e-2, rtol: float = 1e-2) -> List[Trace]:
        """PASSED results of a definition whose recorded errors are within atol and rtol."""
        out = []
        for t in self.traces.get(def_name, []):
            ev = t.evaluation
            if ev is None or ev.status != EvaluationStatus.PASSED or ev.correctness is None:
                continue
            c = ev.correctness
            if c.max_absolute_error <= atol and c.max_relative_error <= rtol:  # NaN: never within
                out.append(t)
        return out

    def get_best_trace(
        self,
        def_name: str,
        axes: Optional[Dict[str, int]] = None,
        max_abs_error: float = 1e-2,
        max_rel_error: float = 1e-2,
    ) -> Optional[Trace]:
        """The result with the highest speedup over the reference among `filter_traces` (whose
        workload has exactly these axis values, when given); None if there is none. Speedups of
        different hardware are compared as they are, as 0.1.2 does (`best_trace` picks by latency
        on one hardware)."""
        cands = self.filter_traces(def_name, max_abs_error, max_rel_error)
        if axes:
            cands = [t for t in cands if all(t.workload.axes.get(k) == v for k, v in axes.items())]

        def speedup(t: Trace) -> float:
            perf = t.evaluation.performance if t.evaluation else None
            x = perf.speedup_factor if perf is not None else math.nan
            return x if math.isfinite(x) else -math.inf

        return max(cands, key=speedup, default=None)

    # ------------------------------------------------------------------ writing
    def to_dict(self) -> Dict[str, Any]:
        return {
            "definitions": [dump_model(d) for d in self.definitions.values()],
            "solutions": [dump_model(s) for s in self.all_solutions()],
            "workloads": [dump_model(t) for ts in self.workloads.values() for t in ts],
            "traces": [dump_model(t) for t in self.all_traces()],
        }

    def save(self, path: PathLike) -> None:
        """Single-file bundle (seed example 04)."""
        atomic_write_text(path, json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: PathLike, strict: bool = True) -> "TraceSet":
        path = Path(path)
        obj, probs = read_json(path)
        ts = cls(root=path.parent)  # blob paths are relative to the bundle's folder
        ts._persist = False  # ... which is not a dataset directory to add traces to
        ts.problems += probs
        if obj is not None:
            if not isinstance(obj, dict):
                ts.problems.append(Problem(str(path), "a TraceSet bundle must be a JSON object"))
            else:
                for key, model in (("definitions", Definition), ("solutions", Solution)):
                    for i, o in enumerate(obj.get(key, [])):
                        m, p = _parse(model, o, str(path), None)
                        ts.problems += [Problem(x.path, x.message, None, f"{key}[{i}]" + ("." + x.field if x.field else ""), x.level) for x in p]
                        if m is not None:
                            ts._origins[id(m)] = (m, str(path), None, f"{key}[{i}]")
                            (ts._add_definition if key == "definitions" else ts._add_solution)(m, None)
                for key in ("workloads", "traces"):
                    for i, o in enumerate(obj.get(key, [])):
                        m, p = _parse(Trace, o, str(path), None)
                        ts.problems += [Problem(x.path, x.message, None, f"{key}[{i}]" + ("." + x.field if x.field else ""), x.level) for x in p]
                        if m is not None:
                            ts._origins[id(m)] = (m, str(path), None, f"{key}[{i}]")
                            ts.add_trace(m)
        if strict and ts.errors:
            raise DatasetError(ts.errors)
        return ts

    # ----- the dataset's folders (0.1.2's properties); ValueError without a root -----
    def _under_root(self, *parts: str) -> Path:
        if self.root is None:
            raise ValueError("this TraceSet has no root path")
        return self.root.joinpath(*parts)

    @property
    def definitions_path(self) -> Path:
        return self._under_root("definitions")

    @property
    def solutions_path(self) -> Path:
        return self._under_root("solutions")

    @property
    def workloads_path(self) -> Path:
        return self._under_root("workloads")

    @property
    def traces_path(self) -> Path:
        return self._under_root("traces")

    @property
    def blob_path(self) -> Path:
        return self._under_root("blob")

    @property
    def blob_workloads_path(self) -> Path:
        return self._under_root("blob", "workloads")

    def add_workload_blob_tensor(self, def_name: str, workload_uuid: str, tensors: Dict[str, Any]) -> str:
        """Save a workload's input tensors as blob/workloads/<op_type>/<def>/<def>_<uuid>.safetensors
        (on the CPU) and return that path relative to the root, for SafetensorsInput.path (0.1.2).
        Raises ValueError without a root, for an unknown definition or an existing file."""
        from safetensors.torch import save_file  # imports torch: only here

        d = self.definitions.get(def_name)
        if d is None:
            raise ValueError(f"definition {def_name!r} is not in this TraceSet")
        path = self.blob_workloads_path / d.op_type / def_name / f"{def_name}_{workload_uuid}.safetensors"
        if path.exists():
            raise ValueError(f"tensor file already exists: {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, str(path))
        return str(path.relative_to(self.root))

    def get_workload_blob_tensor(self, path_str: str) -> Dict[str, Any]:
        """The tensors of a blob file (path relative to the root), on the CPU (0.1.2)."""
        from safetensors.torch import load_file  # imports torch: only here

        path = self._under_root(path_str)
        if not path.is_file():
            raise ValueError(f"file not found: {path}")
        return load_file(str(path), device="cpu")

    def backup_traces(self) -> None:
        """Move traces/ aside to traces_bak_<YYYYmmdd_HHMMSS>/ and start an empty one (0.1.2); the
        traces in memory stay."""
        import shutil
        from datetime import datetime

        backup = self._under_root(f"traces_bak_{datetime.now().strftime('%Y%m%d_%H%M%S')}")
        if self.traces_path.exists():
            shutil.move(str(self.traces_path), str(backup))
        else:
            backup.mkdir(parents=True, exist_ok=True)
        self.traces_path.mkdir(parents=True, exist_ok=True)

    def definition_path(self, d: Definition) -> str:
        return f"definitions/{d.op_type}/{d.name}.json"

    def solution_path(self, s: Solution) -> str:
        d = self.definitions.get(s.definition)
        op = d.op_type if d else "unknown"
        return f"solutions/{s.author}/{op}/{s.definition}/{s.name}.json"

    def jsonl_path(self, kind: str, definition: str) -> str:
        d = self.definitions.get(definition)
        op = d.op_type if d else "unknown"
        return f"{kind}/{op}/{definition}.jsonl"

    def to_path(self, path: PathLike) -> None:
        """Write the whole set as a dataset directory; each file atomically."""
        root = Path(path)
        for d in self.definitions.values():
            atomic_write_json(root / self.definition_path(d), dump_model(d))
        for s in self.all_solutions():
            atomic_write_json(root / self.solution_path(s), dump_model(s))
        for kind, table in (("workloads", self.workloads), ("traces", self.traces)):
            for dname, items in table.items():
                if items:
                    atomic_write_text(
                        root / self.jsonl_path(kind, dname),
                        "".join(t.model_dump_json() + "\n" for t in items),
                    )

    write = to_path
