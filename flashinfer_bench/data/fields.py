"""Field types and checks the dataset models share.

- Numbers as JSON gives them: an int field takes an integer, not `"4096"`, `4096.0` or `true`
  (pydantic's lax mode would turn each into 4096 or 1 and a typo would load silently); a float
  field takes a number, not a string; a bool field takes `true`/`false`, not `"false"` or `0`.
  numpy scalars count as the numbers they are (Python callers build models from arrays).
- Names the run uses as file names (definition, op_type, solution, author, workload uuid): one path
  component without braces, so `../x`, `a/b`, `{x}`, a NUL or a 5000-character name is an error of
  the file that holds it, not an aborted run.
- Relative paths a dataset names (solution sources, safetensors blobs): no NUL or control
  characters, no component longer than the file system takes, bounded in total.
"""
from __future__ import annotations

import numbers
import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Optional

from pydantic import AfterValidator, BeforeValidator


__all__ = [
    "Bool",
    "Float",
    "Int",
    "MAX_NAME_BYTES",
    "MAX_NAME_FIELD_BYTES",
    "MAX_PATH_BYTES",
    "NameStr",
    "name_problem",
    "path_text_problem",
]

MAX_NAME_BYTES = 255    # NAME_MAX of Linux file systems
# a name becomes a file name with a suffix (".jsonl") and, while written, a temp file's decoration
# (".<name>.json.<pid>.<n>.tmp"): a 251-255 byte solution name passed and the run's first
# `builds/<name>.json` raised ENAMETOOLONG, which stopped every definition's jobs (red team 8)
MAX_NAME_FIELD_BYTES = MAX_NAME_BYTES - 32
# Snakemake refuses a wildcard value that ends in a substring repeated 20 times or more
# (PeriodicWildcardError, raised while it builds the whole run's job graph: one solution named
# "fast_rmsnorm" + 20 underscores stopped every job of every definition, red team 8)
_PERIODIC = re.compile(r"(.+)\1{19,}$", re.DOTALL)
MAX_PATH_BYTES = 1024   # a dataset path, leaving room for the directory it is placed under
INT64_MAX = (1 << 63) - 1


def _shown(v: Any, limit: int = 60) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[:limit] + "..."


def _what(v: Any) -> str:
    if isinstance(v, str):
        return f"the string {_shown(v)}"
    if isinstance(v, bool):
        return f"the boolean {str(v).lower()}"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return f"the number {_shown(v)}"
    return f"a {type(v).__name__}"


def _int(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise ValueError(f"must be an integer, not {_what(v)}")
    return int(v)


def _float(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise ValueError(f"must be a number, not {_what(v)}")
    return float(v)


def _bool(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if type(v).__name__ == "bool_" and type(v).__module__ == "numpy":
        return bool(v)
    raise ValueError(f"must be true or false, not {_what(v)}")


Int = Annotated[int, BeforeValidator(_int)]
Float = Annotated[float, BeforeValidator(_float)]
Bool = Annotated[bool, BeforeValidator(_bool)]


def _control(text: str) -> Optional[str]:
    for ch in text:
        if ord(ch) < 32 or 127 <= ord(ch) < 160:  # C0, DEL and C1 (U+009B is a terminal's CSI)
            return f"contains the control character U+{ord(ch):04X}"
        if 0x202A <= ord(ch) <= 0x202E or 0x2066 <= ord(ch) <= 0x2069:
            return f"contains the bidirectional control U+{ord(ch):04X} (it reorders what is shown after it)"
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return f"contains the lone surrogate U+{ord(ch):04X} (not UTF-8 text)"
    return None


def name_problem(value: str) -> Optional[str]:
    """Why `value` cannot name a file of its own (None when it can)."""
    why = _control(value)
    if why:
        return why
    if "/" in value or "\\" in value:
        return "contains a path separator ('/' or '\\'); it names files and directories"
    if "{" in value or "}" in value:
        return "contains '{' or '}', which the run's workflow (Snakemake) reads as a wildcard in the file names it makes"
    if value in (".", ".."):
        return f"is {value!r}, which names a directory"
    n = len(value.encode("utf-8"))
    if n > MAX_NAME_FIELD_BYTES:
        return (f"is {n} bytes long; it names files (with a suffix and a temp file's decoration: at most "
                f"{MAX_NAME_BYTES} bytes), so it may take at most {MAX_NAME_FIELD_BYTES}")
    m = _PERIODIC.search(value)
    if m:
        return (f"ends in {m.group(1)!r} repeated {len(m.group(0)) // len(m.group(1))} times, which the run's workflow "
                f"(Snakemake) refuses in the file names it makes")
    return None


def _name(v: str) -> str:
    why = name_problem(v)
    if why:
        raise ValueError(f"{_shown(v)} {why}")
    return v


NameStr = Annotated[str, AfterValidator(_name)]


def path_text_problem(path: str) -> Optional[str]:
    """Why a path a dataset names can never be opened (None when it may be): control characters,
    a component longer than a file name can be, too long in total, or naming no file ('.')."""
    why = _control(path)
    if why:
        return why
    n = len(path.encode("utf-8"))
    if n > MAX_PATH_BYTES:
        return f"is {n} bytes long (at most {MAX_PATH_BYTES})"
    for part in PurePosixPath(path).parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            return f"has a component of {len(part.encode('utf-8'))} bytes (a file name takes at most {MAX_NAME_BYTES})"
    if not PurePosixPath(path).parts or str(PurePosixPath(path)) in (".", "/"):
        return "names no file"
    return None
