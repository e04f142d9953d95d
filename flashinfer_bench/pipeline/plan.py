"""Scan a dataset into the benchmark DAG's job list, without torch, at Snakefile parse time.

Validation happens here too (cheaply, in-process): an invalid definition or solution drops out
of the DAG with a message, so one bad file stops only its own branch. Workloads are handed to
benchmark jobs as canonical JSON params (not the JSONL as an input file), so appending one line
re-runs only that line's jobs.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from pydantic import ValidationError

from flashinfer_bench.data import Definition, Solution, Trace
from flashinfer_bench.data.io import Problem, iter_jsonl, read_json, validation_problems
from flashinfer_bench.data.names import NameClaims
from flashinfer_bench.data.validate import (
    Finding,
    HeaderCache,
    blob_file,
    definition_problems,
    run_file_name_problem,
    solution_problems,
    workload_problems,
)
from flashinfer_bench.bench.skips import SkipRules
from flashinfer_bench.device import detect_device
from flashinfer_bench.fingerprint import EVALUATOR, code_fingerprint

HARNESS_VERSION = "1"  # bump when the evaluator's behaviour changes: every benchmark re-runs


def evaluator_version() -> str:
    """HARNESS_VERSION plus the fingerprint of the code an evaluation runs (the one the worker's
    address carries, without the interpreter: results stay valid on another node).

    A benchmark job's params carry it, because Snakemake does not see edits of modules that a
    job imports: an edited evaluator re-runs the benchmarks it would measure differently.
    """
    return f"{HARNESS_VERSION}-{code_fingerprint(EVALUATOR, HARNESS_VERSION)[:12]}"



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

    def notes_json(self) -> str:
        """What the plan leaves to the jobs that report it (validate, report): the skipped pairs
        and the problems, also per file. Too long for a command line: the workflow's onstart
        writes it to a file (results/plan/notes.json)."""
        notes = {"skipped": [s.__dict__ for s in self.skipped], "problems": [str(p) for p in self.problems],
                 "by_file": self.problems_by_file()}
        return canonical(notes) + "\n"

    def problems_by_file(self) -> Dict[str, List[str]]:
        """The problems found in each dataset file (the validation jobs record them, one file each)."""
        by_file: Dict[str, List[str]] = {}
        for p in self.problems:
            by_file.setdefault(p.path, []).append(str(p))
        return by_file

    def jobs_by_definition(self) -> Dict[str, List[Job]]:
        """Every selected definition's jobs (possibly none), in one pass over the job list."""
        out: Dict[str, List[Job]] = {d: [] for d in self.selected_definitions()}
        for j in self.jobs:
            out[j.definition].append(j)
        return out


def _load_models(root: Path, sub: str, model, problems: List[Problem], failed: Optional[set] = None):
    """(file, model) per file that loads; a file that does not adds its problems, and its name
    (the file's stem, and the "name" it gives) to `failed`."""
    out = []
    for f in sorted((root / sub).rglob("*.json")):
        why = run_file_name_problem(str(f))
        if why:
            problems.append(Problem(str(f), why))
            if failed is not None:
                failed.add(f.stem)
                obj, _ = read_json(f)
                if isinstance(obj, dict) and isinstance(obj.get("name"), str):
                    failed.add(obj["name"])
            continue
        obj, probs = read_json(f)
        problems += probs
        if obj is None or not isinstance(obj, dict):
            if obj is not None:
                problems.append(Problem(str(f), "expected a JSON object"))
            if failed is not None:
                failed.add(f.stem)
            continue
        try:
            out.append((f, model.model_validate(obj)))
        except ValidationError as e:
            problems += validation_problems(e, str(f), data=obj)
            if failed is not None:
                failed.add(f.stem)
                if isinstance(obj.get("name"), str):
                    failed.add(obj["name"])
    return out


def _located(findings: List[Finding], path: Path, problems: List[Problem], line: Optional[int] = None) -> bool:
    """Add validate.py's findings about one entity as Problems; True when one is an error."""
    for f in findings:
        problems.append(Problem(str(path), f.message, line, f.field, f.level))
    return any(f.level == "error" for f in findings)


def build_plan(
    dataset: Path,
    device: str = "auto",
    definitions: Optional[List[str]] = None,
    solutions: Optional[List[str]] = None,
    cpu_limits: Optional[Dict[str, float]] = None,
    config: Optional[Dict[str, Any]] = None,
) -> Plan:
    """Definitions, solutions and workloads that pass `flashinfer_bench.data.validate`'s checks of
    one entity (errors drop the entity and what depends on it; warnings are only reported), and
    one job per (selected solution, valid workload) that fits the device.

    `config` (the workflow config) supplies the input generator overrides that workloads are
    checked with, and `missing_blobs` (error | generate)."""
    root = Path(dataset)
    plan = Plan(dataset=root, device=detect_device(device))
    probs = plan.problems
    if not root.is_dir():
        probs.append(Problem(str(root), "dataset directory does not exist"))
        return plan

    # definitions whose file has errors (reported once): what depends on them is dropped silently
    broken: set = set()
    for f, d in _load_models(root, "definitions", Definition, probs, broken):
        if d.name in plan.definitions:
            probs.append(Problem(str(f), f"duplicate definition {d.name!r} (first in {plan.definition_files[d.name]})", field="name"))
            continue
        if _located(definition_problems(d), f, probs):
            broken.add(d.name)
            continue
        plan.definitions[d.name] = d
        plan.definition_files[d.name] = f
    valid_definitions = dict(plan.definitions)
    if definitions:
        unknown = sorted(set(definitions) - set(plan.definitions))
        if unknown:
            probs.append(Problem("--definitions", f"no definition named {unknown} in {root}"))
        plan.definitions = {k: v for k, v in plan.definitions.items() if k in definitions}

    claims = NameClaims()  # a name two files claim is neither's (as in the API's TraceSet)
    for f, s in _load_models(root, "solutions", Solution, probs):
        dup = claims.claim(s.name, str(f))
        if dup is not None:
            probs.append(dup)
            continue
        if s.definition in valid_definitions and s.definition not in plan.definitions:
            continue  # its definition is not selected
        if s.definition in broken and s.definition not in valid_definitions:
            # its definition's errors are reported; only the solution's own are added
            _located([x for x in solution_problems(s, {}) if x.field != "definition"], f, probs)
            continue
        if _located(solution_problems(s, valid_definitions), f, probs):
            continue
        plan.solutions[s.name] = s
        plan.solution_files[s.name] = f
    for name in claims.squatted:
        plan.solutions.pop(name, None)
        plan.solution_files.pop(name, None)
    if solutions:
        unknown = sorted(set(solutions) - set(plan.solutions))
        if unknown:
            probs.append(Problem("--solutions", f"no solution named {unknown} in {root}"))
        plan.solutions = {k: v for k, v in plan.solutions.items() if k in solutions}

    headers = HeaderCache()
    config = config or {}
    if cpu_limits is None and isinstance(config.get("cpu"), dict):
        cpu_limits = config["cpu"]
    missing_blobs = str(config.get("missing_blobs") or "error")
    specs = {name: _input_specs(d, config, plan.device) for name, d in plan.definitions.items()}
    for f in sorted((root / "workloads").rglob("*.jsonl")):
        why = run_file_name_problem(str(f))
        if why:
            probs.append(Problem(str(f), why))
            continue
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
                if t.definition not in valid_definitions and t.definition not in broken:
                    probs.append(Problem(str(f), f"unknown definition {t.definition!r}", line, "definition"))
                continue
            wl = t.workload
            found = workload_problems(d, wl, root, headers, wl.model_fields_set, specs[d.name], missing_blobs)
            if _located(found, f, probs, line):
                continue
            if missing_blobs == "generate":
                wl = blobs_to_generators(wl, root)
            table = plan.workloads.setdefault(d.name, {})
            if wl.uuid in table:
                probs.append(Problem(str(f), f"duplicate workload uuid {wl.uuid!r}", line, "workload.uuid"))
                continue
            table[wl.uuid] = canonical(wl.model_dump(mode="json"))
            plan.workload_files.setdefault(d.name, f)

    # one set of skip rules for both doors (bench/skips.py); the CPU size check runs once per
    # (workload, interpreted or not), not per job
    rules = SkipRules(plan.device, cpu_limits or {})
    axes = {name: {u: json.loads(w)["axes"] for u, w in wls.items()} for name, wls in plan.workloads.items()}
    for s in sorted(plan.solutions.values(), key=lambda s: s.name):
        d = plan.definitions[s.definition]
        for uuid, wl_json in plan.workloads.get(d.name, {}).items():
            why = rules.reason(d, s, axes[d.name][uuid])
            if why:
                plan.skipped.append(Skipped(d.name, s.name, uuid, why))
                continue
            plan.jobs.append(Job(d.name, s.name, uuid, wl_json))
    return plan


def unreadable_trace_lines(dataset: Path) -> List[Problem]:
    """Lines of <dataset>/traces/*.jsonl that are not UTF-8 text, not JSON or not a JSON object,
    each located by file and line. Aggregation keeps such lines as they are and reads the others;
    `validate` also checks the lines that do parse against the trace format."""
    out: List[Problem] = []
    for f in sorted((Path(dataset) / "traces").rglob("*.jsonl")):
        for line, obj, lp in iter_jsonl(f):
            out += lp
            if obj is not None and not isinstance(obj, dict):
                out.append(Problem(str(f), f"expected a JSON object, got {type(obj).__name__}", line))
    return out


def _input_specs(d: Definition, config: Dict[str, Any], device: str) -> Dict[str, Dict[str, Any]]:
    """The definition's resolved generator specs: shipped op-type defaults under the config's."""
    from flashinfer_bench.data.op_types import family_settings

    from .settings import evaluation_for

    ev = evaluation_for(config, d.name, device, d.op_type) if config else {}
    return family_settings(d, ev.get("inputs"))["inputs"]


def blobs_to_generators(wl: Any, root: Path) -> Any:
    """missing_blobs=generate: inputs whose safetensors file is missing are drawn instead (the
    workload says so: `generated_for_missing_blob`)."""
    from flashinfer_bench.data.workload import RandomInput, SafetensorsInput

    inputs = dict(wl.inputs)
    changed = False
    for name, src in wl.inputs.items():
        if isinstance(src, SafetensorsInput):
            if blob_file(root, src.path) is None:
                inputs[name] = RandomInput(generated_for_missing_blob=src.path)
                changed = True
    return wl.model_copy(update={"inputs": inputs}) if changed else wl


def trace_file(results: str, job: Job) -> str:
    """The benchmark job's per-job trace (the rule's output; the aggregate job's input)."""
    return f"{results}/traces/{job.definition}/{job.solution}/{job.uuid}.json"


def benchmark_params(plan: Plan, config: Dict[str, Any], def_digest: Dict[str, str], results: str) -> Dict[tuple, Dict[str, str]]:
    """(definition, solution, uuid) -> the benchmark rule's params: `args`, the thin client's
    arguments, shell-quoted (dataset-relative paths, so moving the dataset re-runs nothing; the
    job's build and trace paths, the rule's input and output), and what else must
    re-run the job when it changes (the definition's digest, the evaluator)."""
    from shlex import quote

    from .settings import evaluation_for

    evaluator = evaluator_version()
    root = plan.dataset
    per_def = {}
    for name in plan.definitions:
        ev = canonical(evaluation_for(config, name, plan.device, plan.definitions[name].op_type))
        per_def[name] = (
            f" --definition-file {quote(str(Path(plan.definition_files[name]).relative_to(root)))}"
            f" --evaluation {quote(ev)} --device {quote(plan.device)}"
        )
    per_sol = {
        name: f"--solution-file {quote(str(Path(f).relative_to(root)))}"
        for name, f in plan.solution_files.items()
    }
    def paths(j: Job) -> str:
        return f" --build {quote(f'{results}/builds/{j.solution}.json')} --out {quote(trace_file(results, j))}"

    return {
        (j.definition, j.solution, j.uuid): {
            "args": f"{per_sol[j.solution]}{per_def[j.definition]} --workload {quote(j.workload_json)}{paths(j)}",
            "definition_digest": def_digest[j.definition],
            "evaluator": evaluator,
        }
        for j in plan.jobs
    }
