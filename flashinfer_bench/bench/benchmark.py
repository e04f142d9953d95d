"""The seeds' Python API: `Benchmark(trace_set, BenchmarkConfig(...)).run_all()`.

Each solution is built once (through `flashinfer_bench.compile`), then every (solution,
workload) is evaluated by the device's worker (`evaluate_via_worker`). New traces are added to the
TraceSet and returned as a list; with `dump_traces=True` and a TraceSet that has a dataset
directory, `TraceSet.add_traces` also writes them into `traces/<op_type>/<definition>.jsonl` by the
workflow's merge rule (atomically, under a lock: a rerun's result replaces the earlier one of the
same solution, workload and hardware; every other line is kept as it is).
"""
from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

from ..data import Definition, Solution, Trace, TraceSet, Workload
from ..data.charge import charged_party
from ..data.io import Problem
from ..data.op_types import family_settings
from ..data.validate import (
    Finding, HeaderCache, definition_problems, run_file_name_problem, solution_problems, workload_problems,
)
from ..env import run_directory_problems
from .addressing import default_worker_dir
from .client import evaluate_via_worker, resolve_device
from .config import BenchmarkConfig, EvalConfig
from .loader import build_solution
from .skips import SkipRules

log = logging.getLogger("flashinfer_bench.benchmark")


def _show_progress() -> None:
    """Progress at INFO on stderr, as the pipeline shows it, unless the application configured
    logging itself (a run_all() once stayed silent for 20 minutes under the default WARNING)."""
    if logging.getLogger().handlers or log.handlers:
        return
    h = logging.StreamHandler()
    h.setFormatter(logging.Formatter("[flashinfer-bench] %(message)s"))
    log.addHandler(h)
    log.setLevel(logging.INFO)


class Benchmark:
    def __init__(self, trace_set: TraceSet, config: Optional[BenchmarkConfig] = None) -> None:
        self.trace_set = trace_set
        self.config = config or BenchmarkConfig()
        problems = run_directory_problems(
            Path(self.config.worker_dir) if self.config.worker_dir else default_worker_dir(),
            cache=Path(self.config.cache_dir) if self.config.cache_dir else None,
        )
        if problems:  # the machine's problem, before anything runs or is written
            raise EnvironmentError("; ".join(problems))
        self.device = resolve_device(self.config.to_eval_config().device)
        self.eval_config: EvalConfig = self.config.to_eval_config(self.device)
        self._skips = SkipRules(self.device, self.config.cpu_limits)  # the pipeline plan's rules
        # (definition, solution, workload uuid, reason) of the pairs not evaluated on this device:
        # the pipeline's rules (bench/skips.py), reported instead of failed traces
        self.skipped: List[Tuple[str, str, str, str]] = []
        _show_progress()
        self._builds: Dict[str, dict] = {}
        self._pending: Dict[str, Future] = {}  # builds started by run_all's pool, by content hash
        self._reported: Dict[int, List[Problem]] = {}  # entity id -> its errors, reported once
        self._headers = HeaderCache()
        # evaluations that failed because of the dataset or the machine: never saved as traces
        self.charged_failures: List[Trace] = []
        # dataset errors found before running (the pipeline's plan checks, data/validate.py): the
        # bad definition, solution or workload and what depends on it are not run, never traced
        self.problems: List[Problem] = []

    # ------------------------------------------------------------------ helpers
    def _cache_dir(self) -> Optional[Path]:
        return Path(self.config.cache_dir) if self.config.cache_dir else None

    def _build(self, solution: Solution, definition: Definition) -> dict:
        """The solution's build: from this run's build pool when one started it (waits for it),
        else built now."""
        key = solution.content_hash()
        if key not in self._builds:
            pending = self._pending.pop(key, None)
            b = pending.result() if pending is not None else build_solution(solution, definition, self._cache_dir())
            self._builds[key] = b
            if b.get("status") != "OK":
                log.warning("solution %s: build %s", solution.name, b.get("status"))
        return self._builds[key]

    def _start_builds(self, pool: ThreadPoolExecutor, pairs: List[Tuple[Solution, Definition]]) -> None:
        """Start every build the run needs, several at a time (each build is its own process),
        in the order the evaluations need them: the first solution is evaluated while the others
        still build, as the pipeline's compile jobs overlap its benchmark jobs. One at a time and
        before any evaluation, the Python API spent most of a cold run importing torch in build
        children (issue 16)."""
        for s, d in pairs:
            key = s.content_hash()
            if key not in self._builds and key not in self._pending:
                self._pending[key] = pool.submit(build_solution, s, d, self._cache_dir())

    def _definitions(self) -> List[Definition]:
        wanted = self.config.definitions
        defs = list(self.trace_set.definitions.values())
        if wanted is not None:
            missing = sorted(set(wanted) - {d.name for d in defs})
            if missing:
                log.warning("definitions not in the dataset: %s", missing)
            defs = [d for d in defs if d.name in wanted]
        return [d for d in defs if self._valid(d, definition_problems(d))]

    def _solutions(self, definition: str) -> List[Solution]:
        sols = self.trace_set.solutions_for(definition)
        if self.config.solutions is not None:
            sols = [s for s in sols if s.name in self.config.solutions]
        valid = {d.name: d for d in self.trace_set.definitions.values()}
        return [s for s in sols if self._valid(s, solution_problems(s, valid))]

    def _workloads(self, definition: Definition) -> List[Workload]:
        """The definition's workloads that pass the plan's checks (inputs under this config's
        generators, blobs present and matching): a bad one costs only its own pairs."""
        cfg = self.config.eval_config_for(definition.name, definition.op_type, self.device)
        specs = family_settings(definition, cfg.inputs)["inputs"]
        headers = self._headers
        out = []
        for line in self.trace_set.workloads_for(definition.name):
            wl = line.workload
            # fields a file must spell out; a workload made in memory gets its uuid generated
            from_file = self.trace_set.origin(line)[0] != "<memory>"
            found = workload_problems(definition, wl, self.trace_set.root, headers,
                                      wl.model_fields_set if from_file else None, specs)
            if self._valid(line, found):
                out.append(wl)
        return out

    def _valid(self, entity: object, findings: list) -> bool:
        """Record `findings` of an entity once (file, line and field, as validate prints them);
        False when one is an error: the entity and what depends on it are not run."""
        path, line, prefix = self.trace_set.origin(entity)
        named = run_file_name_problem(path) if path != "<memory>" else None
        errors = [f for f in findings if f.level == "error"] + ([Finding(None, named)] if named else [])
        key = id(entity)
        if errors and key not in self._reported:
            self._reported[key] = []
            for f in errors:
                field = ".".join(x for x in (prefix, f.field or "") if x) or None
                p = Problem(path, f.message, line, field)
                self._reported[key].append(p)
                self.problems.append(p)
                log.error("dataset error, not run: %s", p)
        return not errors

    def _evaluate(self, definition: Definition, solution: Solution, workload: Workload) -> Trace:
        build = self._build(solution, definition)
        cfg = self.config.eval_config_for(definition.name, definition.op_type, self.device)
        t = evaluate_via_worker(definition, solution, workload, build, cfg, self.trace_set.root, self.device)
        ev = t.evaluation
        if ev is not None and ev.status.value == "PASSED":
            log.info(
                "%s / %s / %s: PASSED %.4f ms (%.2fx)", definition.name, solution.name, workload.uuid,
                ev.performance.latency_ms, ev.performance.speedup_factor,
            )
        elif ev is not None:
            log.warning("%s / %s / %s: %s", definition.name, solution.name, workload.uuid, ev.status.value)
        return t

    # ------------------------------------------------------------------ API
    def run_solution(
        self, solution: Union[Solution, str], workloads: Optional[Iterable[Union[Workload, Trace]]] = None
    ) -> List[Trace]:
        """Evaluate one solution on the given workloads (default: all of its definition's)."""
        sol = self.trace_set.get_solution(solution) if isinstance(solution, str) else solution
        if sol is None:
            raise ValueError(f"solution {solution!r} is not in the trace set")
        definition = self.trace_set.get_definition(sol.definition)
        if definition is None:
            raise ValueError(f"solution {sol.name!r} names definition {sol.definition!r}, which is not in the trace set")
        valid = {d.name: d for d in self.trace_set.definitions.values()}
        ok = self._valid(definition, definition_problems(definition))
        ok = self._valid(sol, solution_problems(sol, valid)) and ok
        if not ok:  # the dataset's error: named, not turned into this solution's traces
            found = self._reported.get(id(definition), []) + self._reported.get(id(sol), [])
            raise ValueError("dataset error, not run: " + "; ".join(map(str, found)))
        if workloads is None:
            wls = [w.workload for w in self.trace_set.workloads_for(definition.name)]
        else:
            wls = [w.workload if isinstance(w, Trace) else w for w in workloads]
        out = [self._evaluate(definition, sol, w) for w in wls]
        for t in out:  # in memory only, as before (run_all's dump_traces writes)
            self.trace_set.add_trace(t)
        return out

    def _work(self) -> List[Tuple[Definition, List[Solution], List[Workload]]]:
        """What run_all() runs: the valid selected definitions, their valid selected solutions and
        valid workloads (dataset errors are recorded in `problems`)."""
        return [(d, self._solutions(d.name), self._workloads(d)) for d in self._definitions()]

    def pairs(self) -> List[Tuple[str, str, str]]:
        """(definition, solution, workload uuid) of every evaluation run_all() would make on this
        device: the pipeline plan's jobs for the same dataset (one set of rules)."""
        return sorted(
            (d.name, s.name, w.uuid) for d, sols, wls in self._work() for w in wls for s in sols
            if not self._skips.reason(d, s, w.axes)
        )

    def run_all(self, dump_traces: bool = True, resume: bool = False) -> List[Trace]:
        """Every selected solution on every workload of its definition; returns the new traces."""
        work = self._work()
        needed = [(s, d) for d, sols, wls in work for s in sols
                  if wls and not all(self._skips.reason(d, s, w.axes) for w in wls)]
        if needed:
            log.info("building %d solutions (%d at a time) while evaluating", len(needed), self._build_slots())
        with ThreadPoolExecutor(max_workers=self._build_slots()) as pool:
            self._start_builds(pool, needed)
            try:
                return self._run_work(work, dump_traces, resume)
            finally:
                for f in self._pending.values():  # an evaluation raised: builds not yet begun are dropped
                    f.cancel()
                self._pending.clear()

    @staticmethod
    def _build_slots() -> int:
        return max(1, os.cpu_count() or 1)

    def _run_work(self, work: List[Tuple[Definition, List[Solution], List[Workload]]], dump_traces: bool,
                  resume: bool) -> List[Trace]:
        new: List[Trace] = []
        for definition, sols, workloads in work:
            if not sols:
                continue
            done: Set[Tuple[str, str]] = set()
            if resume:
                done = {(t.workload.uuid, t.solution or "") for t in self.trace_set.traces_for(definition.name)}
            timed_out: Dict[str, Trace] = {}
            traces: List[Trace] = []
            # solution by solution, in build order: each solution keeps its runner (no switch per
            # evaluation) and the next ones build meanwhile
            for sol, wl in [(sol, wl) for sol in sols for wl in workloads]:
                if (wl.uuid, sol.name) in done:
                    continue
                why = self._skips.reason(definition, sol, wl.axes)
                if why:
                    self.skipped.append((definition.name, sol.name, wl.uuid, why))
                    log.info("%s / %s / %s: SKIPPED (%s)", definition.name, sol.name, wl.uuid, why)
                    continue
                if sol.name in timed_out:
                    t = self._skipped(definition, sol, wl, timed_out[sol.name])
                else:
                    t = self._evaluate(definition, sol, wl)
                    if charged_party(t) != "solution":  # the dataset's or the machine's failure
                        log.error("%s / %s / %s: %s", definition.name, sol.name, wl.uuid,
                                  (t.evaluation.log or "").splitlines()[0] if t.evaluation else "")
                        self.charged_failures.append(t)
                        continue
                    if t.evaluation is not None and t.evaluation.status.value == "TIMEOUT":
                        timed_out[sol.name] = t
                traces.append(t)
            if dump_traces:  # written too when the set has a dataset directory
                self.trace_set.add_traces(traces)
                if traces and self.trace_set.persists:
                    log.info("Saved %d traces for definition %s", len(traces), definition.name)
            else:
                for t in traces:
                    self.trace_set.add_trace(t)
            new.extend(traces)
        return new

    def _skipped(self, definition: Definition, sol: Solution, wl: Workload, first: Trace) -> Trace:
        """Upstream's rule: after a TIMEOUT the solution's later workloads are not run again."""
        from .assemble import assemble_trace

        return assemble_trace(
            definition=definition.name, solution=sol.name, workload=wl.model_dump(mode="json"), status="TIMEOUT",
            message=f"skipped: this solution timed out on workload {first.workload.uuid} earlier in this run",
            env=first.evaluation.environment.model_dump(),
        )

    def close(self) -> None:
        """Upstream API; the worker exits on its own when idle."""
