"""File I/O of the dataset: atomic writes and loaders that report, never raise, per entry."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from pydantic import BaseModel, ValidationError

from ..atomic import atomic_write_json, atomic_write_text  # noqa: F401  (re-exported)


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


def dump_model(model: BaseModel) -> dict:
    return json.loads(model.model_dump_json())


class FieldErrors(ValueError):
    """Several 'field: message' problems found by one model validator.

    Raised from a model validator so that `validation_problems` can report each problem under its
    own field path instead of one joined message.
    """

    def __init__(self, items: List[Tuple[str, str]]):
        self.items = list(items)
        super().__init__("; ".join(f"{f}: {m}" if f else m for f, m in self.items))


_SCALARS = (str, int, float, bool, type(None))
# names pydantic puts into error locations for union branches (tags and types)
_TAGS = frozenset({"const", "var", "random", "scalar", "safetensors"})
_TYPES = frozenset({"bool", "int", "float", "str"})


def _walk_loc(loc: Tuple[Any, ...], data: Any, missing: bool) -> Tuple[List[str], List[str]]:
    """Split a pydantic error location into the real path inside `data` and the internal parts.

    Pydantic inserts union branch names ('const', 'int', 'function-after[...]') into locations;
    walking the input data tells a real key from such a branch name, so an input that happens to
    be called 'random' is still reported as 'inputs.random'.
    """
    real: List[str] = []
    internal: List[str] = []
    cur = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(cur, dict) and part in cur:
            real.append(str(part))
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            real[-1:] = [f"{real[-1]}[{part}]"] if real else [f"[{part}]"]
            cur = cur[part]
        elif last and missing:
            real.append(str(part))
        elif data is None:
            # without the input, guess: drop what looks like a union branch or validator name
            name = str(part)
            if name.startswith("function-") or "[" in name or name in _TYPES or (not last and name in _TAGS):
                internal.append(name)
            elif isinstance(part, int) and real:
                real[-1] = f"{real[-1]}[{part}]"
            else:
                real.append(name)
        else:
            internal.append(str(part))
    return real, internal


def validation_problems(
    err: ValidationError,
    path: str,
    line: Optional[int] = None,
    prefix: str = "",
    data: Any = None,
) -> List[Problem]:
    """One Problem per wrong field of a pydantic error, with the field path as the user wrote it.

    `data` (the parsed JSON that failed) lets union branch names be dropped from the path and the
    several branch errors of one field be merged into one message.
    """
    merged: Dict[str, List[Tuple[str, List[str], Any, str]]] = {}
    out: List[Problem] = []
    for e in err.errors(include_url=False):
        exc = (e.get("ctx") or {}).get("error")
        real, internal = _walk_loc(tuple(e["loc"]), data, e["type"] == "missing")
        field = ".".join(p for p in [prefix, ".".join(real)] if p)
        if isinstance(exc, FieldErrors):
            for f, m in exc.items:
                sub = ".".join(p for p in [field, f] if p)
                out.append(Problem(path, m, line, sub or None))
            continue
        msg = "required field is missing" if e["type"] == "missing" else e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        merged.setdefault(field, []).append((msg, internal, e.get("input"), e["type"]))
    for field, errs in merged.items():
        if len(errs) > 1 and all(x[1] for x in errs):
            # every branch of a union failed: say which types were expected, once
            kinds = [x[1][-1] for x in errs]
            msg = f"expected one of {', '.join(kinds)}"
        else:
            msg = "; ".join(dict.fromkeys(x[0] for x in errs))
        value, etype = errs[0][2], errs[0][3]
        if isinstance(value, dict) and etype in ("axis_type", "input_type"):
            msg += f" (got {value.get('type')!r})"
        elif etype not in ("missing", "value_error") and isinstance(value, _SCALARS):
            shown = repr(value)
            msg += f" (got {shown[:80] + '...' if len(shown) > 80 else shown})"
        out.append(Problem(path, msg, line, field or None))
    return out


def _decode(raw: bytes) -> Tuple[Optional[str], Optional[str]]:
    """(text, None) or (None, why the bytes are not UTF-8 text)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at byte {e.start + 1})"


def _loads(text: str) -> Tuple[Optional[Any], Optional[Tuple[str, Optional[int]]]]:
    """(parsed JSON, None) or (None, (why, line within the text)). Never raises for bad text."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return None, (f"invalid JSON: {e.msg} (column {e.colno})", e.lineno)
    except RecursionError:
        return None, ("invalid JSON: nested too deeply", None)
    except ValueError as e:  # an integer literal beyond Python's 4300-digit conversion limit
        return None, (f"invalid JSON: a number too long to read ({str(e).split(':')[0]})", None)
    if obj is None:  # a file or line that is just `null` is not an entry: say so, not skip it
        return None, ("expected a JSON object, got null", None)
    return obj, None


def read_json(path: Path) -> Tuple[Optional[Any], List[Problem]]:
    """(parsed JSON, []) or (None, the problems); never raises for bad content."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        return None, [Problem(str(path), f"cannot read: {e}")]
    text, why = _decode(raw)
    if text is None:
        return None, [Problem(str(path), f"cannot read: {why}")]
    obj, err = _loads(text)
    if err is not None:
        return None, [Problem(str(path), err[0], err[1])]
    return obj, []


def iter_jsonl(path: Path) -> Iterator[Tuple[int, Optional[Any], List[Problem]]]:
    """(line number, parsed object or None, problems) per non-blank line.

    A line that is not UTF-8 text or not JSON is a problem of that line only: the lines around it
    still load."""
    try:
        data = path.read_bytes()
    except OSError as e:
        yield 0, None, [Problem(str(path), f"cannot read: {e}")]
        return
    # split on \n only, as JSONL and upstream's reader do: str.splitlines() would also split a
    # JSON string that holds U+2028 or a form feed
    for i, rawb in enumerate(data.split(b"\n"), start=1):
        if not rawb.strip():
            continue
        raw, why = _decode(rawb)
        if raw is None:
            yield i, None, [Problem(str(path), f"cannot read this line: {why}", i)]
            continue
        if not raw.strip():
            continue
        obj, err = _loads(raw)
        if err is not None:
            yield i, None, [Problem(str(path), err[0], i)]
        else:
            yield i, obj, []


def unknown_fields(model: BaseModel, path: str, line: Optional[int], prefix: str = "") -> List[Problem]:
    """Warnings for fields the model does not know (upstream may add fields: warn, do not fail)."""
    out = []
    extra = model.__pydantic_extra__ or {}
    if extra:
        known = vars(type(model)).get("known_extra_fields", ())  # vars(): pydantic's class getattr is slow
        for k in extra:
            if k not in known:
                out.append(Problem(path, f"unknown field {k!r} (kept, ignored)", line,
                                   (prefix + "." + k).strip("."), "warning"))
    for name, value in model.__dict__.items():  # declared fields only; extras are not models
        if isinstance(value, BaseModel):
            out += unknown_fields(value, path, line, f"{prefix}.{name}".strip("."))
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, BaseModel):
                    out += unknown_fields(v, path, line, f"{prefix}.{name}.{k}".strip("."))
        elif isinstance(value, list):
            for j, v in enumerate(value):
                if isinstance(v, BaseModel):
                    out += unknown_fields(v, path, line, f"{prefix}.{name}[{j}]".strip("."))
    return out
