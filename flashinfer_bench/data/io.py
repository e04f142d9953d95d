"""File I/O of the dataset: atomic writes and loaders that report, never raise, per entry."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, List, Optional, Tuple, Union

from pydantic import BaseModel, ValidationError


@dataclass(frozen=True)
class Problem:
    """One error or warning, located as 'file:line: field: message'."""

    path: str
    message: str
    line: Optional[int] = None
    field: Optional[str] = None
    level: str = "error"

    def __str__(self) -> str:
        where = self.path + (f":{self.line}" if self.line is not None else "")
        return f"{where}: {self.field + ': ' if self.field else ''}{self.message}"


class DatasetError(ValueError):
    def __init__(self, problems: List[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def atomic_write_text(path: Union[str, Path], text: str) -> None:
    """Write via a temp file in the same directory and rename, so readers see old or new, never torn."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_json(path: Union[str, Path], obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2) + "\n")


def dump_model(model: BaseModel) -> dict:
    return json.loads(model.model_dump_json())


def validation_problems(
    err: ValidationError, path: str, line: Optional[int] = None, prefix: str = ""
) -> List[Problem]:
    out = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"] if not str(x).startswith("function-after"))
        loc = ".".join(p for p in loc.split(".") if p not in ("AxisConst", "AxisVar", "const", "var", "random", "scalar", "safetensors"))
        field = (prefix + "." + loc).strip(".") if (prefix or loc) else None
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        out.append(Problem(path, msg, line, field or None))
    return out


def read_json(path: Path) -> Tuple[Optional[Any], List[Problem]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return None, [Problem(str(path), f"cannot read: {e}")]
    try:
        return json.loads(text), []
    except json.JSONDecodeError as e:
        return None, [Problem(str(path), f"invalid JSON: {e.msg} (column {e.colno})", e.lineno)]


def iter_jsonl(path: Path) -> Iterator[Tuple[int, Optional[Any], List[Problem]]]:
    """(line number, parsed object or None, problems) per non-blank line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        yield 0, None, [Problem(str(path), f"cannot read: {e}")]
        return
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            yield i, json.loads(raw), []
        except json.JSONDecodeError as e:
            yield i, None, [Problem(str(path), f"invalid JSON: {e.msg} (column {e.colno})", i)]


def unknown_fields(model: BaseModel, path: str, line: Optional[int], prefix: str = "") -> List[Problem]:
    """Warnings for fields the model does not know (upstream may add fields: warn, do not fail)."""
    out = []
    extra = model.model_extra or {}
    for k in extra:
        out.append(Problem(path, f"unknown field {k!r} (kept, ignored)", line, (prefix + "." + k).strip("."), "warning"))
    for name, value in model:
        sub = f"{prefix}.{name}".strip(".")
        if isinstance(value, BaseModel):
            out += unknown_fields(value, path, line, sub)
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, BaseModel):
                    out += unknown_fields(v, path, line, f"{sub}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, BaseModel):
                    out += unknown_fields(v, path, line, f"{sub}[{i}]")
    return out
