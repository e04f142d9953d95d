"""TracingRuntime: records calls of apply-decorated functions as workloads of a dataset.

`collect` runs on the caller's thread for every call: bind the var axes (memoised per shape
signature), apply the dedup policy, snapshot the tensors the dump policy keeps (non-blocking),
and queue a record for the writer thread. It never raises into the user's program.
"""
from __future__ import annotations

import json
import traceback
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from pydantic import ValidationError

from flashinfer_bench.data import Definition, ShapeError
from flashinfer_bench.data.io import read_json
from flashinfer_bench.env import unwritable

from . import _state
from .config import TracingConfig, TracingConfigRegistry
from .signature import merge_args
from .writer import DefInfo, TracingWarning, Writer

_INVALID: Tuple[int, ...] = (-1,)


def _snapshot(t: Any, mode: str) -> Tuple[Any, Any, bool, int]:
    """(host-or-device copy, CUDA event or None, writer must copy to host, host bytes held).

    The copy is taken now, in stream order, so later in-place writes by the caller do not leak
    into the record; the calling thread does not wait for it.
    """
    import torch

    t = t.detach()
    if t.is_cuda:
        if mode == "device_clone":
            c = t.clone()
            ev = torch.cuda.Event()
            ev.record(torch.cuda.current_stream(t.device))
            return c, ev, True, 0
        buf = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        buf.copy_(t, non_blocking=True)
        ev = torch.cuda.Event()
        ev.record(torch.cuda.current_stream(t.device))
        return buf, ev, False, buf.numel() * buf.element_size()
    c = t.clone(memory_format=torch.contiguous_format)
    return c, None, False, c.numel() * c.element_size()


class DefinitionTracer:
    """Per-definition state of one TracingRuntime (memo of shapes, dedup counters)."""

    def __init__(self, runtime: "TracingRuntime", definition: Definition, config: TracingConfig, seen: Mapping[Tuple[int, ...], int]):
        self.runtime = runtime
        self.definition = definition
        self.config = config
        names = list(definition.inputs)
        self.order = names + list(definition.outputs)
        self.n_in = len(names)
        self.tensor_pos = tuple(i for i, n in enumerate(names) if definition.inputs[n].shape is not None)
        self.tensor_names = tuple(names[i] for i in self.tensor_pos)
        self.scalar_items = tuple((i, n) for i, n in enumerate(names) if definition.inputs[n].shape is None)
        self.scalar_pos = tuple(i for i, _ in self.scalar_items)
        # The memo key reads the shapes of the tensors that carry a var axis (as apply does); a
        # tensor of const axes only (a weight) is validated on the first call of each key.
        var = set(definition.var_axes)
        self.key_pos = tuple(
            i for i in self.tensor_pos if var & set(definition.inputs[names[i]].shape or ())
        ) or self.tensor_pos[:1]
        self.info = DefInfo(
            definition.name,
            definition.op_type,
            tuple(definition.var_axes),
            tuple((n, definition.inputs[n].shape is None) for n in names),
        )
        p = config.tensor_dump_policy
        if p == "dump_all":
            dump = set(self.tensor_names)
        elif p == "dump_none":
            dump = set()
        elif p == "dump_non_float":
            dump = {n for n in self.tensor_names if not definition.inputs[n].dtype.is_float}
        else:
            unknown = sorted(set(p) - set(self.tensor_names))
            if unknown:
                runtime.warn_once(
                    ("dump-names", definition.name),
                    f"tracing {definition.name}: tensor_dump_policy names {unknown} are not tensor "
                    f"inputs of the definition ({list(self.tensor_names)}); ignored",
                )
            dump = set(p) & set(self.tensor_names)
        self.dump_pos = tuple((i, n) for i, n in enumerate(names) if n in dump)
        self.axes_memo: Dict[tuple, Tuple[int, ...]] = {}
        d = config.dedup_policy
        self.dedup = d if isinstance(d, str) else "callable"
        self.dedup_fn: Optional[Callable[[Any], Any]] = None if isinstance(d, str) else d
        self.k = config.k
        self.count = 0
        self.seen: Dict[Any, int] = dict(seen) if self.dedup == "shape_only" else {}
        self.snapshot_mode = config.snapshot

    # ------------------------------------------------------------------ hot path
    def collect(self, args: tuple, kwargs: Dict[str, Any], fallback: Optional[Callable[..., Any]]) -> None:
        if kwargs:
            args = merge_args(fallback, args, kwargs, self.order)
        n = len(args)
        if n != self.n_in and n != len(self.order):
            self.runtime.warn_once(
                (self.definition.name, "arity", n),
                f"tracing {self.definition.name}: called with {n} arguments, the definition has "
                f"{self.n_in} inputs; not traced",
            )
            return
        try:
            kp = self.key_pos
            key = args[kp[0]].shape if len(kp) == 1 else tuple([args[i].shape for i in kp])
        except (AttributeError, IndexError):
            key = None
        axes = self.axes_memo.get(key) if key is not None else None
        if axes is None:
            axes = self._bind(key, args)
        if axes is _INVALID:
            return
        dedup = self.dedup
        if dedup == "shape_only":
            c = self.seen.get(axes, 0)
            if c >= self.k:
                return
            self.seen[axes] = c + 1
        elif dedup == "keep_first_k":
            if self.count >= self.k:
                return
            self.count += 1
        elif dedup == "callable" and not self._admit_callable(axes, args):
            return
        scalars = tuple([args[i] for i in self.scalar_pos]) if self.scalar_pos else ()
        dumps: List[Tuple[str, Any, Any, bool]] = []
        nbytes = 0
        for i, name in self.dump_pos:
            try:
                copy, ev, to_host, b = _snapshot(args[i], self.snapshot_mode)
            except (RuntimeError, TypeError, AttributeError, NotImplementedError) as e:
                self.runtime.warn_once(
                    ("snapshot", self.definition.name, name),
                    f"tracing {self.definition.name}: input {name!r} cannot be copied "
                    f"({type(e).__name__}: {e}); recorded as random",
                )
                continue
            dumps.append((name, copy, ev, to_host))
            nbytes += b
        self.runtime.writer.submit((self.info, axes, scalars, dumps, nbytes))

    # ------------------------------------------------------------------ slow paths
    def _bind(self, key: Optional[tuple], args: tuple) -> Tuple[int, ...]:
        d = self.definition
        shapes = {}
        for i, name in zip(self.tensor_pos, self.tensor_names):
            s = getattr(args[i], "shape", None)
            shapes[name] = None if s is None else tuple(s)
        try:
            bound = d.bind_axes(shapes)
            axes = tuple(bound[a] for a in d.var_axes)
        except ShapeError as e:
            self.runtime.warn_once(
                (d.name, "shape", str(e)), f"tracing {d.name}: call does not match the definition ({e}); not traced"
            )
            axes = _INVALID
        if key is not None:
            self.axes_memo[key] = axes
        return axes

    def _admit_callable(self, axes: Tuple[int, ...], args: tuple) -> bool:
        from flashinfer_bench.data import RandomInput, ScalarInput, Workload

        inputs: Dict[str, Any] = {}
        for i, n in self.scalar_items:
            v = args[i]
            inputs[n] = ScalarInput(value=v) if isinstance(v, (bool, int, float)) else RandomInput()
        wl = Workload(axes=dict(zip(self.definition.var_axes, axes)), inputs=inputs, uuid="pending")
        assert self.dedup_fn is not None
        key = self.dedup_fn(wl)
        c = self.seen.get(key, 0)
        if c >= self.k:
            return False
        self.seen[key] = c + 1
        return True


def _existing_axes(root: Path, names: List[str]) -> Dict[str, Dict[Tuple[int, ...], int]]:
    """Var-axis values of the workloads already in the dataset, per definition name."""
    out: Dict[str, Dict[Tuple[int, ...], int]] = {}
    wanted = set(names)
    base = root / "workloads"
    if not base.is_dir():
        return out
    for f in base.rglob("*.jsonl"):
        if not f.is_file():  # a device or fifo in the tree is not a workload file
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for raw in text.splitlines():
            try:
                obj = json.loads(raw)
                name = obj["definition"]
                axes = obj["workload"]["axes"]
            except (ValueError, KeyError, TypeError):
                continue
            if name in wanted:
                out.setdefault(name, {}).setdefault(tuple(sorted(axes.items())), 0)
                out[name][tuple(sorted(axes.items()))] += 1
    return out


def _load_definitions(defs_dir: Path) -> Dict[str, Definition]:
    """Only the definitions (a dataset's traces can be large; tracing does not need them)."""
    out: Dict[str, Definition] = {}
    for f in sorted(defs_dir.rglob("*.json")):
        obj, problems = read_json(f)
        if obj is None:
            continue
        try:
            d = Definition.model_validate(obj)
        except ValidationError:
            continue
        out.setdefault(d.name, d)
    return out


class TracingRuntime:
    """One enable_tracing(): definitions to trace, their tracers, and the writer thread."""

    def __init__(
        self,
        dataset_dir: Union[str, Path],
        tracing_configs: Union[None, TracingConfig, TracingConfigRegistry, Mapping[str, TracingConfig]] = None,
        max_queue: int = 4096,
        max_pending_bytes: int = 1 << 30,
        flush_interval_s: float = 0.05,
    ):
        self.root = Path(dataset_dir)
        self._warned: set = set()
        self.problems: List[str] = []
        self.tracers: Dict[str, DefinitionTracer] = {}
        self.writer: Optional[Writer] = None
        self.closed = False
        defs_dir = self.root / "definitions"
        if not defs_dir.is_dir():
            self.warn_once(
                "no-defs",
                f"tracing: {defs_dir} does not exist; nothing is traced (point "
                "FLASHINFER_BENCH_DATASET_PATH or dataset_dir at a dataset with definitions/)",
            )
            return
        defs = _load_definitions(defs_dir)
        if not defs:
            self.warn_once(
                "no-defs",
                f"tracing: {defs_dir} holds no definition; nothing is traced (add the kernels' "
                "definitions/<op_type>/<name>.json first)",
            )
            return
        selected = self._select(defs, tracing_configs)
        if not selected:
            return
        if not self._writable():
            return
        seen_raw = _existing_axes(self.root, list(selected))
        self.writer = Writer(self.root, max_queue, max_pending_bytes, flush_interval_s)
        self.writer.warn_once = self._writer_warn  # type: ignore[method-assign]
        for name, (d, cfg) in selected.items():
            seen = {
                tuple(dict(k).get(a, -1) for a in d.var_axes): c
                for k, c in seen_raw.get(name, {}).items()
            }
            self.tracers[name] = DefinitionTracer(self, d, cfg, seen)

    def _select(
        self,
        defs: Mapping[str, Definition],
        configs: Union[None, TracingConfig, TracingConfigRegistry, Mapping[str, TracingConfig]],
    ) -> Dict[str, Tuple[Definition, TracingConfig]]:
        if configs is None or isinstance(configs, TracingConfig):
            cfg = configs or TracingConfig()
            return {n: (d, cfg) for n, d in defs.items()}
        if isinstance(configs, TracingConfigRegistry):  # 0.1.2's form
            configs = configs.select(defs)
        out = {}
        for name, cfg in configs.items():
            if not isinstance(cfg, TracingConfig):
                raise TypeError(f"tracing_configs[{name!r}] must be a TracingConfig, got {type(cfg).__name__}")
            if name not in defs:
                self.warn_once(
                    ("unknown", name),
                    f"tracing: definition {name!r} is not in {self.root / 'definitions'}; not traced",
                )
                continue
            out[name] = (defs[name], cfg)
        return out

    def _writable(self) -> bool:
        d = self.root / "workloads"
        why = unwritable(d, "the directory", "nothing is traced")
        if why:
            self.warn_once("unwritable", f"tracing: cannot write to {d}: {why}")
            return False
        return True

    # ------------------------------------------------------------------ warnings
    def warn_once(self, key: Any, message: str) -> None:
        self.problems.append(message)
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(message, TracingWarning, stacklevel=4)

    def _writer_warn(self, key: Any, message: str) -> None:
        self.warn_once(("writer", key), message)

    # ------------------------------------------------------------------ hot path
    def collect(self, name: str, args: tuple, kwargs: Dict[str, Any], fallback: Optional[Callable[..., Any]]) -> None:
        t = self.tracers.get(name)
        if t is None:
            return
        try:
            t.collect(args, kwargs, fallback)
        except Exception:  # tracing must never break the traced program; keep the cause
            self.warn_once(
                ("collect", name), f"tracing {name}: a call could not be recorded:\n{traceback.format_exc()}"
            )

    # ------------------------------------------------------------------ lifecycle
    def flush(self) -> None:
        """Write every queued call now."""
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.writer is not None:
            self.writer.close()

    @property
    def stats(self) -> Dict[str, int]:
        w = self.writer.stats if self.writer is not None else None
        return {
            "queued": w.queued if w else 0,
            "written": w.written if w else 0,
            "blobs": w.blobs if w else 0,
            "dropped_full": w.dropped_full if w else 0,
            "dropped_error": w.dropped_error if w else 0,
        }

    def __enter__(self) -> "TracingRuntime":
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.pop(self)


