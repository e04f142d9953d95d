"""TracingConfig: which inputs of a traced call are saved, and which calls are kept."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, Hashable, Iterable, Literal, Mapping, Optional, Sequence, TypeVar, Union

DUMP_POLICIES = ("dump_all", "dump_none", "dump_non_float")
DEDUP_POLICIES = ("keep_all", "shape_only", "keep_first_k")

DumpPolicy = Union[Literal["dump_all", "dump_none", "dump_non_float"], Sequence[str]]
DedupPolicy = Union[Literal["keep_all", "shape_only", "keep_first_k"], Callable[[Any], Hashable]]


@dataclass(frozen=True)
class TracingConfig:
    """How one definition is traced.

    tensor_dump_policy: "dump_all" (every tensor input is saved to safetensors), "dump_none"
      (inputs are recorded as random), "dump_non_float" (integer/bool tensors such as indptr
      are saved, float ones recorded as random), or a list of input names to save.
      Scalar inputs are always recorded by value.
    dedup_policy: "keep_all" (every call), "shape_only" (the first k calls per var-axis values;
      values already present in the dataset's workloads count as seen, so re-running a traced
      program adds nothing new), "keep_first_k" (the first k calls of the definition), or a
      callable `Workload -> key` (the first k calls per key).
    k: the k of the policies above (default 1).
    snapshot: how a CUDA tensor to be saved is captured on the calling thread:
      "pinned" (default) issues a non-blocking copy into pinned host memory, the writer thread
      waits on a CUDA event; "device_clone" clones on the GPU (costs GPU memory) and the writer
      thread copies it to the host. Either way the calling thread never waits for the copy.

    FlashInfer-Bench 0.1.2's spellings are accepted and set the fields above (0.1.2's defaults,
    "dump_none" and "keep_all", apply to the one not given): input_dump_policy "dump_all",
    "dump_none", "dump_int" (= "dump_non_float") or a list of names; filter_policy "keep_all",
    "keep_first" / "keep_first_k" (= "keep_first_k"), "keep_first_k_by_axes" (= "shape_only"),
    with k in filter_policy_kwargs (input_dump_policy_kwargs is accepted; 0.1.2's built-in dump
    policies take none). Its "keep_none" and "attention" policies have no equivalent here and are
    refused.
    """

    tensor_dump_policy: DumpPolicy = "dump_non_float"
    dedup_policy: DedupPolicy = "shape_only"
    k: int = 1
    snapshot: Literal["pinned", "device_clone"] = "pinned"
    input_dump_policy: Optional[Union[str, Sequence[str]]] = None
    input_dump_policy_kwargs: Optional[Mapping[str, Any]] = None
    filter_policy: Optional[str] = None
    filter_policy_kwargs: Optional[Mapping[str, Any]] = None

    def __post_init__(self) -> None:
        if self.input_dump_policy is not None or self.filter_policy is not None:
            self._from_upstream_spelling()
        p = self.tensor_dump_policy
        if isinstance(p, str):
            if p not in DUMP_POLICIES:
                raise ValueError(
                    f"tensor_dump_policy must be one of {DUMP_POLICIES} or a list of input names, got {p!r}"
                )
        else:
            names = list(p)
            if not all(isinstance(n, str) for n in names):
                raise ValueError("tensor_dump_policy as a list must hold input names (str)")
            object.__setattr__(self, "tensor_dump_policy", tuple(names))
        d = self.dedup_policy
        if not callable(d) and d not in DEDUP_POLICIES:
            raise ValueError(f"dedup_policy must be one of {DEDUP_POLICIES} or a callable, got {d!r}")
        if not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be a positive int, got {self.k!r}")
        if self.snapshot not in ("pinned", "device_clone"):
            raise ValueError(f"snapshot must be 'pinned' or 'device_clone', got {self.snapshot!r}")

    def _from_upstream_spelling(self) -> None:
        dump = "dump_none" if self.input_dump_policy is None else self.input_dump_policy
        dump = {"dump_int": "dump_non_float"}.get(dump, dump) if isinstance(dump, str) else dump
        kwargs = dict(self.filter_policy_kwargs or {})
        policy = self.filter_policy or "keep_all"
        k = kwargs.get("k", 1)
        if policy == "keep_first_k" and "k" not in kwargs:
            raise ValueError("filter_policy 'keep_first_k' needs filter_policy_kwargs={'k': ...}")
        ours = {"keep_all": "keep_all", "keep_first": "keep_first_k", "keep_first_k": "keep_first_k",
                "keep_first_k_by_axes": "shape_only"}.get(policy)
        if ours is None:
            raise ValueError(
                f"filter_policy {policy!r} (FlashInfer-Bench 0.1.2) has no equivalent here; use "
                "dedup_policy='keep_all', 'shape_only', 'keep_first_k' or a callable Workload -> key"
            )
        if not isinstance(self.input_dump_policy, (str, type(None))):
            object.__setattr__(self, "input_dump_policy", tuple(self.input_dump_policy))
        object.__setattr__(self, "tensor_dump_policy", dump)
        object.__setattr__(self, "dedup_policy", ours)
        object.__setattr__(self, "k", 1 if policy == "keep_first" else k)


C = TypeVar("C")
R = TypeVar("R", bound="PerDefinitionRegistry")


@dataclass
class PerDefinitionRegistry(Generic[C]):
    """FlashInfer-Bench 0.1.2's registry of per-definition configs (its tracing and apply
    registries behave alike): `default` serves definitions not registered (None: only the
    registered ones)."""

    default: Optional[C] = None
    per_definition: Dict[str, C] = field(default_factory=dict)

    def get(self, def_name: str) -> Optional[C]:
        """The config of a definition; None when it gets none."""
        return self.per_definition.get(def_name, self.default)

    def register(self: R, def_name: str, config: C, *, override: bool = False) -> R:
        """Set one definition's config (ValueError if it has one and override is False)."""
        if not override and def_name in self.per_definition:
            raise ValueError(f"definition {def_name!r} already has a config; pass override=True to replace it")
        self.per_definition[def_name] = config
        return self

    def register_many(self: R, configs: Dict[str, C], *, override: bool = False) -> R:
        """Set several definitions' configs at once (nothing is set if one conflicts)."""
        taken = sorted(set(configs) & set(self.per_definition))
        if taken and not override:
            raise ValueError(f"definitions {taken} already have a config; pass override=True to replace them")
        self.per_definition.update(configs)
        return self


@dataclass
class TracingConfigRegistry(PerDefinitionRegistry[TracingConfig]):
    """Per-definition tracing configs: `default` for the dataset's definitions not registered
    (None: only the registered ones are traced). enable_tracing takes one wherever it takes a
    config."""

    def select(self, definitions: Iterable[str]) -> Dict[str, TracingConfig]:
        """{definition: config} to trace: the dataset's definitions under the default, and every
        registered one (a registered name the dataset lacks is reported by the runtime)."""
        out = {n: self.default for n in definitions} if self.default is not None else {}
        out.update(self.per_definition)
        return out
