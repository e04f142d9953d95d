"""BuildResult: what one build produced, small enough to be a pipeline digest.

Kept free of torch so the compile rule and the planner can read it cheaply.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, Mapping

OK = "OK"
COMPILE_ERROR = "COMPILE_ERROR"
# Our extension of the contract: the build could not be attempted on this machine (for example a
# CUDA solution with the torch binding on a CPU-only torch). Not the solution's fault, not cached.
SKIPPED = "SKIPPED"
STATUSES = (OK, COMPILE_ERROR, SKIPPED)


@dataclass
class BuildResult:
    """Outcome of `build()`.

    `build_seconds` is the time the artifact took to build; on a cache hit it is the original
    build's time (read from the manifest). `message` is a one-line reason for COMPILE_ERROR /
    SKIPPED; `log` holds the full compiler / import output. `loadable_here` is False when the
    artifact was built but cannot run on this machine (CUDA code built on a host with no GPU).
    """

    status: str
    hash: str
    artifact_dir: str = ""
    log: str = ""
    language: str = ""
    cache_hit: bool = False
    build_seconds: float = 0.0
    toolchain: Dict[str, Any] = field(default_factory=dict)
    message: str = ""
    loadable_here: bool = True
    # the solution's content hash (Solution.content_hash: sources, entry point, spec; not its name):
    # the worker writes it into each trace, so a trace says which version of the solution it
    # measured (an artifact is shared by solutions of equal content, its `hash` by the toolchain)
    solution_hash: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"BuildResult.status must be one of {STATUSES}, got {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BuildResult":
        """Inverse of to_dict; unknown keys (from newer writers) are ignored."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})
