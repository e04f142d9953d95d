"""Turning compiler output and Python tracebacks into short 'file:line: message' reasons."""
from __future__ import annotations

import re
import traceback
from pathlib import Path
from types import TracebackType
from typing import List, Optional

MAX_LOG_CHARS = 200_000

_NVCC = re.compile(
    r"^(?P<file>[^\s(][^()]*?)\((?P<line>\d+)\): (?P<kind>(?:catastrophic )?error|warning)"
    r"(?: #\S+)?: (?P<msg>.*)$"
)
_GCC = re.compile(
    r"^(?P<file>[^:\s][^:]*?):(?P<line>\d+):(?:\d+:)? (?P<kind>fatal error|error): (?P<msg>.*)$"
)


def relativise(text: str, src_dir: Path) -> str:
    """Replace the build's absolute source dir with nothing, so messages name 'kernel.cu'."""
    for prefix in {str(src_dir), str(Path(src_dir).resolve())}:
        text = text.replace(prefix.rstrip("/") + "/", "")
    return text


def compiler_errors(output: str, limit: int = 5) -> List[str]:
    """The compiler's error lines, normalised to 'file:line: error: message'."""
    out: List[str] = []
    for raw in output.splitlines():
        line = raw.strip()
        m = _NVCC.match(line)
        if m and "error" in m.group("kind"):
            out.append(f"{m.group('file')}:{m.group('line')}: error: {m.group('msg').strip()}")
        else:
            m = _GCC.match(line)
            if m:
                out.append(f"{m.group('file')}:{m.group('line')}: {m.group('kind')}: {m.group('msg')}")
        if len(out) >= limit:
            break
    if not out:  # linker or driver errors carry no file:line
        out = [
            l.strip() for l in output.splitlines()
            if re.search(r"\berror\b|undefined reference|cannot find", l, re.I)
        ][:limit]
    return out


def solution_location(tb: Optional[TracebackType], src_dir: Path) -> Optional[str]:
    """'kernel.py:12' of the innermost traceback frame inside the solution's sources."""
    root = str(Path(src_dir).resolve()).rstrip("/") + "/"
    found = None
    for frame in traceback.extract_tb(tb):
        fname = str(Path(frame.filename).resolve()) if frame.filename else ""
        if fname.startswith(root):
            found = f"{fname[len(root):]}:{frame.lineno}"
    return found


def exception_location(exc: BaseException, src_dir: Path) -> Optional[str]:
    """Like solution_location, following chained causes to the innermost solution frame (Triton's
    interpreter re-raises a kernel's error from its own frames)."""
    found = None
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        found = solution_location(e.__traceback__, src_dir) or found
        e = e.__cause__ or e.__context__
    return found


def cap(text: str, limit: int = MAX_LOG_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n[... {len(text) - limit} characters cut ...]\n" + text[-half:]
