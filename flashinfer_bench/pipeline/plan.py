"""Scan a dataset into the benchmark DAG's job list, without torch, at Snakefile parse time.

Validation happens here too (cheaply, in-process): an invalid definition or solution drops out
of the DAG with a message, so one bad file stops only its own branch. Workloads are handed to
benchmark jobs as canonical JSON params (not the JSONL as an input file), so appending one line
re-runs only that line's jobs.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from pydantic import ValidationError

from flashinfer_bench.data import Definition, Solution, Trace
from flashinfer_bench.data.io import Problem, iter_jsonl, read_json, validation_problems

HARNESS_VERSION = "1"  # bump when the evaluator's behaviour changes: every benchmark re-runs


def evaluator_version() -> str:
    """HARNESS_VERSION plus a hash of the evaluator's code (flashinfer_bench/bench).

    A benchmark job's params carry it, because Snakemake does not see edits of modules that a
    `script:` imports: an edited evaluator re-runs the benchmarks it would measure differently.
    """
    h = hashlib.sha256(HARNESS_VERSION.encode())
    bench = Path(__file__).resolve().parent.parent / "bench"
    for p in sorted(bench.rglob("*.py")):
        h.update(str(p.relative_to(bench)).encode())
        h.update(p.read_bytes())
    return f"{HARNESS_VERSION}-{h.hexdigest()[:12]}"

_GPU_LANGS = {"cuda", "cpp"}


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def definition_digest(d: Definition) -> str:
    """What changes results: axes, tensors, reference, tolerance (not description or tags)."""
    payload = d.model_dump(mode="json", include={"axes", "inputs", "outputs", "reference", "tolerance", "constraints"})
    for specs in (payload["inputs"], payload["outputs"]):
        for s in specs.values():
            s.pop("description", None)
    for a in payload["axes"].values():
        a.pop("description", None)
    return hashlib.sha256(canonical(payload).encode()).hexdigest()[:16]


def detect_device(requested: str) -> str:
    """'auto' becomes 'cuda' when an NVIDIA GPU is visible, else 'cpu'; no torch import."""
    if requested != "auto":
        return requested
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return "cpu"
    if Path("/dev/nvidia0").exists() or (shutil.which("nvidia-smi") and Path("/proc/driver/nvidia").exists()):
        return "cuda"
    return "cpu"


def count_gpus() -> int:
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd not in (None, ""):
        return len([x for x in cvd.split(",") if x.strip() and x.strip() != "-1"])
    return len([p for p in Path("/dev").glob("nvidia[0-9]*")]) or 1


@dataclass
class Job:
    definition: str
    solution: str
    uuid: str
    workload_json: str


@dataclass
class Skipped:
    definition: str
    solution: str
    workload: str
    reason: str


@dataclass
class Plan:
    dataset: Path
    device: str
    definitions: Dict[str, Definition] = field(default_factory=dict)
    definition_files: Dict[str, Path] = field(default_factory=dict)
    solutions: Dict[str, Solution] = field(default_factory=dict)
    solution_files: Dict[str, Path] = field(default_factory=dict)
    workload_files: Dict[str, Path] = field(default_factory=dict)
    workloads: Dict[str, Dict[str, str]] = field(default_factory=dict)  # def -> uuid -> json
    jobs: List[Job] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)

    @property
    def errors(self) -> List[Problem]:
        return [p for p in self.problems if p.level == "error"]

    def selected_definitions(self) -> List[str]:
        return sorted({j.definition for j in self.jobs} | {s.definition for s in self.solutions.values()})

    def jobs_of(self, definition: str) -> List[Job]:
        return [j for j in self.jobs if j.definition == definition]


def _load_models(root: Path, sub: str, model, problems: List[Problem]):
    out = []
    for f in sorted((root / sub).rglob("*.json")):
        obj, probs = read_json(f)
        problems += probs
        if obj is None:
            continue
        if not isinstance(obj, dict):
            problems.append(Problem(str(f), "expected a JSON object"))
            continue
        try:
            out.append((f, model.model_validate(obj)))
        except ValidationError as e:
            problems += validation_problems(e, str(f))
    return out


def build_plan(
    dataset: Path,
    device: str = "auto",
    definitions: Optional[List[str]] = None,
    solutions: Optional[List[str]] = None,
    cpu_limits: Optional[Dict[str, float]] = None,
) -> Plan:
    root = Path(dataset)
    plan = Plan(dataset=root, device=detect_device(device))
    probs = plan.problems
    if not root.is_dir():
        probs.append(Problem(str(root), "dataset directory does not exist"))
        return plan

    for f, d in _load_models(root, "definitions", Definition, probs):
        if d.name in plan.definitions:
            probs.append(Problem(str(f), f"duplicate definition {d.name!r} (first in {plan.definition_files[d.name]})", field="name"))
            continue
        bad = d.problems(strict=True)
        if bad:
            probs += [Problem(str(f), b) for b in bad]
            continue
        plan.definitions[d.name] = d
        plan.definition_files[d.name] = f
    if definitions:
        unknown = sorted(set(definitions) - set(plan.definitions))
        if unknown:
            probs.append(Problem("--definitions", f"no definition named {unknown} in {root}"))
        plan.definitions = {k: v for k, v in plan.definitions.items() if k in definitions}

    for f, s in _load_models(root, "solutions", Solution, probs):
        if s.name in plan.solutions:
            probs.append(Problem(str(f), f"duplicate solution {s.name!r} (first in {plan.solution_files[s.name]})", field="name"))
            continue
        bad = s.problems()
        if bad:
            probs += [Problem(str(f), b) for b in bad]
            continue
        if s.definition not in plan.definitions:
            if not definitions:
                probs.append(Problem(str(f), f"unknown definition {s.definition!r}", field="definition"))
            continue
        plan.solutions[s.name] = s
        plan.solution_files[s.name] = f
    if solutions:
        unknown = sorted(set(solutions) - set(plan.solutions))
        if unknown:
            probs.append(Problem("--solutions", f"no solution named {unknown} in {root}"))
        plan.solutions = {k: v for k, v in plan.solutions.items() if k in solutions}

    for f in sorted((root / "workloads").rglob("*.jsonl")):
        for line, obj, lp in iter_jsonl(f):
            probs += lp
            if obj is None:
                continue
            try:
                t = Trace.model_validate(obj)
            except ValidationError as e:
                probs += validation_problems(e, str(f), line)
                continue
            d = plan.definitions.get(t.definition)
            if d is None:
                continue
            wl = t.workload
            try:
                axes = d.axis_values({k: v for k, v in wl.axes.items() if k in d.var_axes})
            except ValueError as e:
                probs.append(Problem(str(f), str(e), line, "workload.axes"))
                continue
            clash = [k for k, v in wl.axes.items() if k in d.const_axes and d.const_axes[k] != v]
            if clash:
                probs.append(Problem(str(f), f"const axes {clash} differ from the definition", line, "workload.axes"))
                continue
            failed = d.check_constraints(axes)
            if failed:
                probs.append(Problem(str(f), f"constraints not met: {failed}", line, "workload"))
                continue
            unknown_inputs = sorted(set(wl.inputs) - set(d.inputs))
            if unknown_inputs:
                probs.append(Problem(str(f), f"unknown inputs {unknown_inputs}", line, "workload.inputs"))
                continue
            table = plan.workloads.setdefault(d.name, {})
            if wl.uuid in table:
                probs.append(Problem(str(f), f"duplicate workload uuid {wl.uuid!r}", line, "workload.uuid"))
                continue
            table[wl.uuid] = canonical(wl.model_dump(mode="json"))
            plan.workload_files.setdefault(d.name, f)

    for s in sorted(plan.solutions.values(), key=lambda s: s.name):
        d = plan.definitions[s.definition]
        for uuid, wl_json in plan.workloads.get(d.name, {}).items():
            if plan.device == "cpu":
                if s.spec.language.value in _GPU_LANGS:
                    plan.skipped.append(Skipped(d.name, s.name, uuid, f"{s.spec.language.value} solution needs a GPU (compiled only)"))
                    continue
                why = cpu_skip_reason(d, s, json.loads(wl_json)["axes"], cpu_limits or {})
                if why:
                    plan.skipped.append(Skipped(d.name, s.name, uuid, why))
                    continue
            plan.jobs.append(Job(d.name, s.name, uuid, wl_json))
    return plan


def cpu_skip_reason(d: Definition, s: Solution, axes: Dict[str, int], limits: Dict[str, float]) -> Optional[str]:
    """Why a workload is too big to evaluate on the CPU (None when it fits).

    Only tensors whose size varies with the workload count (a fixed 4096x4096 weight is cheap to
    make); interpreted languages (Triton under TRITON_INTERPRET, TileLang) get a lower limit.
    """
    var = {k: v for k, v in axes.items() if k in d.var_axes}
    try:
        values = d.axis_values(var)
    except ValueError:
        return None
    n = 0
    for specs in (d.inputs, d.outputs):
        for spec in specs.values():
            if spec.shape and any(a in d.var_axes for a in spec.shape):
                n = max(n, math.prod(values[a] for a in spec.shape))
    interpreted = s.spec.language.value in ("triton", "tilelang")
    key = "max_elements_interpreted" if interpreted else "max_elements"
    limit = limits.get(key)
    if limit is not None and n > limit:
        return f"{n} elements is above the CPU limit cpu.{key}={int(limit)}"
    flops = d.flop_count(var)
    limit = limits.get("max_flops")
    if flops is not None and limit is not None and flops > limit:
        return f"{flops:.3g} FLOP is above the CPU limit cpu.max_flops={limit:.3g}"
    return None
