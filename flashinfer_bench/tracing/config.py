"""TracingConfig: which inputs of a traced call are saved, and which calls are kept."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Literal, Sequence, Union

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
    """

    tensor_dump_policy: DumpPolicy = "dump_non_float"
    dedup_policy: DedupPolicy = "shape_only"
    k: int = 1
    snapshot: Literal["pinned", "device_clone"] = "pinned"

    def __post_init__(self) -> None:
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
