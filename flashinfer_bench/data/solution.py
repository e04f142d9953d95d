"""Solution: one implementation of a definition, with its sources and build spec."""
from __future__ import annotations

import hashlib
import json
from enum import Enum
from pathlib import Path, PurePosixPath
from typing import Any, List, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from .fields import Bool, NameStr, path_text_problem


class SupportedLanguages(str, Enum):
    PYTHON = "python"
    TRITON = "triton"
    CUDA = "cuda"
    CPP = "cpp"
    TILELANG = "tilelang"

    def __str__(self) -> str:
        return self.value


class SupportedBindings(str, Enum):
    """How C++/CUDA solutions are bound to Python (0.1.2's enum; `BuildSpec.binding` takes either
    these members or their strings)."""

    TVM_FFI = "tvm-ffi"
    TORCH = "torch"

    def __str__(self) -> str:
        return self.value


class BuildSpec(BaseModel):
    model_config = ConfigDict(extra="allow")
    language: SupportedLanguages
    target_hardware: List[str] = Field(default_factory=lambda: ["cuda"])
    entry_point: str
    dependencies: List[str] = Field(default_factory=list)
    destination_passing_style: Bool = True
    binding: Optional[Literal["tvm-ffi", "torch"]] = None

    @model_serializer(mode="wrap")
    def _keep_unset_dps_unset(self, handler: Any) -> Any:
        """A spec that never said its calling convention is saved without it, so that it is still
        inferred from the entry's signature when loaded back (data/signature.effective_dps)."""
        out = handler(self)
        if isinstance(out, dict) and "destination_passing_style" not in self.model_fields_set:
            out.pop("destination_passing_style", None)
        return out

    @field_validator("entry_point")
    @classmethod
    def _entry(cls, v: str) -> str:
        if v.count("::") != 1:
            raise ValueError(f"must be 'file::function' (exactly one '::'), got {v!r}")
        f, fn = v.split("::")
        if not f or not fn:
            raise ValueError(f"must be 'file::function' (both parts non-empty), got {v!r}")
        return v

    @property
    def entry_file(self) -> str:
        return self.entry_point.split("::")[0]

    @property
    def entry_symbol(self) -> str:
        return self.entry_point.split("::")[1]

    @property
    def effective_binding(self) -> Optional[str]:
        if self.language in (SupportedLanguages.CUDA, SupportedLanguages.CPP):
            return self.binding or "tvm-ffi"
        return None


class SourceFile(BaseModel):
    model_config = ConfigDict(extra="allow")
    path: str = Field(min_length=1)
    content: str

    def path_problem(self) -> Optional[str]:
        p = PurePosixPath(self.path)
        shown = repr(self.path) if len(self.path) <= 80 else repr(self.path[:80]) + "..."
        why = path_text_problem(self.path)
        if why:
            return f"source path {shown} {why}"
        if p.is_absolute() or self.path.startswith(("/", "\\")) or ":" in p.parts[0]:
            return f"source path {shown} must be relative"
        if ".." in p.parts:
            return f"source path {shown} escapes the solution directory"
        return None


# the author whose solution is the definition's baseline (FlashInfer-Bench's rule: one a definition)
BASELINE_AUTHOR = "baseline"


class Solution(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: NameStr = Field(min_length=1)
    definition: NameStr = Field(min_length=1)
    author: NameStr = Field(min_length=1)
    spec: BuildSpec
    sources: List[SourceFile] = Field(min_length=1)
    description: Optional[str] = None

    @property
    def is_baseline(self) -> bool:
        """Whether the author is `baseline` (any case)."""
        return self.author.lower() == BASELINE_AUTHOR

    def problems(self) -> List[str]:
        out = []
        seen = set()
        for i, src in enumerate(self.sources):
            why = src.path_problem()
            if why:
                out.append(f"sources[{i}].path: {why}")
            norm = str(PurePosixPath(src.path))
            if norm in seen:
                out.append(f"sources[{i}].path: duplicate path {src.path!r}")
            seen.add(norm)
        dirs = {str(d) for s in self.sources for d in PurePosixPath(s.path).parents} - {"."}
        for i, src in enumerate(self.sources):
            if str(PurePosixPath(src.path)) in dirs:  # 'a' and 'a/b.py': a build cannot write both
                out.append(f"sources[{i}].path: {src.path!r} is also the directory of another source")
        if not self.spec.entry_symbol.isidentifier():
            out.append(f"spec.entry_point: {self.spec.entry_symbol!r} is not a function name")
        if self.spec.entry_file not in {str(PurePosixPath(s.path)) for s in self.sources}:
            out.append(
                f"spec.entry_point: file {self.spec.entry_file!r} is not among the sources "
                f"{[s.path for s in self.sources]}"
            )
        return out

    def get_source(self, path: str) -> Optional[SourceFile]:
        for s in self.sources:
            if PurePosixPath(s.path) == PurePosixPath(path):
                return s
        return None

    # ----- FlashInfer-Bench 0.1.2's entry-point accessors -----
    def get_entry_path(self) -> Path:
        """The entry file, relative to the solution's sources (`spec.entry_point` before '::')."""
        return Path(self.spec.entry_file)

    def get_entry_symbol(self) -> str:
        """The function the entry file exports (`spec.entry_point` after '::')."""
        return self.spec.entry_symbol

    def get_entry_source(self) -> Optional[SourceFile]:
        """The source file holding the entry point, or None when no source has its path."""
        return self.get_source(self.spec.entry_file)

    def content_hash(self) -> str:
        """Hash of what changes the built code; name, author and description do not count."""
        spec = self.spec
        payload = {
            "definition": self.definition,
            "language": spec.language.value,
            "entry_point": spec.entry_point,
            "binding": spec.effective_binding,
            "dps": spec.destination_passing_style,
            "dependencies": sorted(spec.dependencies),
            "sources": sorted((str(PurePosixPath(s.path)), s.content) for s in self.sources),
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def hash(self) -> str:  # upstream's name
        return self.content_hash()
