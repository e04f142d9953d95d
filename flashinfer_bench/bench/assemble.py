"""Turn a runner's measurement (or a failure) into a Trace. Torch-free; runs in the supervisor.

Only trusted code writes traces: the runner returns numbers, this module decides the layout
(docs/internals.md, "Where our extra measurements go").
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict, Optional

from ..data import Trace, now_iso

STATUSES = {
    "PASSED", "INCORRECT_SHAPE", "INCORRECT_NUMERICAL", "INCORRECT_DTYPE", "RUNTIME_ERROR", "COMPILE_ERROR", "TIMEOUT",
}


# what a runner's numbers may nest to in a trace: its `extra` and environment come from the
# solution's process. A list nested 220 deep was written (pydantic serialises ~255 levels) and
# could not be read back (its parser stops at ~200): the client raised instead of returning a
# trace, and merging that definition's traces lost every solution's new results (`deep_extra`)
MAX_DEPTH = 24
MAX_ITEMS = 4096  # of one list or dict
MAX_TEXT = 16384  # characters of one string


def _finite_or_none(v: Any, depth: int = 0) -> Any:
    """Non-finite floats as None, strings (thread names, notes quoting the solution) made safe,
    and the whole bounded: MAX_DEPTH levels, MAX_ITEMS entries a level, MAX_TEXT characters a string."""
    if depth > MAX_DEPTH:
        return "(nested too deep: cut)"
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, str):
        return safe_text(v[:MAX_TEXT])
    if isinstance(v, dict):
        items = list(v.items())[:MAX_ITEMS]
        return {safe_text(k[:MAX_TEXT]) if isinstance(k, str) else k: _finite_or_none(x, depth + 1) for k, x in items}
    if isinstance(v, (list, tuple)):
        return [_finite_or_none(x, depth + 1) for x in list(v)[:MAX_ITEMS]]
    if isinstance(v, int) and not isinstance(v, bool) and not -(1 << 63) <= v < 1 << 63:
        return None  # no counter is that large; its text could pass the 4300 digits Python converts
    if v is None or isinstance(v, (bool, int, float)):
        return v
    return safe_text(repr(v)[:MAX_TEXT])


def read_capped(path: Optional[Path], limit: int) -> str:
    """A log file's head and tail within `limit` bytes."""
    if path is None:
        return ""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if size <= limit:
                data = f.read()
                return data.decode("utf-8", errors="replace")
            half = limit // 2
            head = f.read(half)
            f.seek(size - half)
            tail = f.read(half)
    except OSError:
        return ""
    cut = size - 2 * half
    return (
        head.decode("utf-8", errors="replace")
        + f"\n... [{cut} bytes of output cut] ...\n"
        + tail.decode("utf-8", errors="replace")
    )


# what the solution's runner may add to a trace's environment: the evaluation's times and clocks.
# Everything else (hardware, device, libs, the seed) is the supervisor's: a runner that set `env`
# filed its result under "NVIDIA B200", another trace identity (`forge_hardware`, session 19)
RUNNER_ENV_KEYS = ("start_time", "end_time", "clocks_start", "clocks_end")


def solution_hash_of(build: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """The request's build's `solution_hash` as a trace's environment fact (none when the build
    has none: a build result written before session 21)."""
    h = (build or {}).get("solution_hash")
    return {"solution_hash": h} if isinstance(h, str) and h else {}


def environment(static: Optional[Dict[str, Any]], per_eval: Optional[Dict[str, Any]], device: str,
                own: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """A trace's environment: `static` (what a runner reported when it started, before any
    solution was loaded in it), RUNNER_ENV_KEYS of `per_eval` (the evaluation's runner), then the
    supervisor's `own` facts; the device's name wins over all of them."""
    static = dict(static or {})
    hw = static.pop("hardware", None) or f"unavailable ({device})"
    libs = {k: str(v) for k, v in (static.pop("libs", None) or {}).items()}
    env: Dict[str, Any] = {"hardware": hw, "libs": libs}
    env.update(static)
    per_eval = per_eval if isinstance(per_eval, dict) else {}
    env.update({k: per_eval[k] for k in RUNNER_ENV_KEYS if k in per_eval and k not in env})
    env.update(own or {})
    env.update({"hardware": hw, "libs": libs})
    env.setdefault("device", device)
    return _finite_or_none(env)


# control characters but tab and newline, as \\xNN: a log printed on a terminal cannot clear the
# screen, move the cursor or overwrite a line with "\\rPASSED" (issue 15: hostile bytes in output)
_CONTROLS = str.maketrans({c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)})


def safe_text(s: str) -> str:
    """Text any JSON writer and UTF-8 file accepts: lone surrogates (a solution may print or raise
    them) as backslash escapes, NUL and the other control characters (but tab and newline) as
    \\xNN."""
    if not isinstance(s, str):
        s = str(s)
    return s.encode("utf-8", "backslashreplace").decode("utf-8").translate(_CONTROLS)


def assemble_trace(
    *,
    definition: str,
    solution: str,
    workload: Dict[str, Any],
    status: str,
    message: str = "",
    output_log: str = "",
    env: Dict[str, Any],
    correctness: Optional[Dict[str, Any]] = None,
    performance: Optional[Dict[str, Any]] = None,
    extra: Optional[Dict[str, Any]] = None,
) -> Trace:
    if status not in STATUSES:
        message = f"unknown status {status!r} from the runner; {message}"
        status = "RUNTIME_ERROR"
    message, output_log = safe_text(message), safe_text(output_log)
    log = message.rstrip()
    if output_log.strip():
        log = (log + "\n" if log else "") + "--- solution output ---\n" + output_log
    ev: Dict[str, Any] = {"status": status, "environment": env, "timestamp": now_iso(), "log": log}
    if status in ("PASSED", "INCORRECT_NUMERICAL"):
        c = correctness or {"max_abs": math.inf, "max_rel": math.inf}
        ev["correctness"] = {
            "max_relative_error": c.get("max_rel", math.inf),
            "max_absolute_error": c.get("max_abs", math.inf),
            "extra": _finite_or_none(extra or {}),
        }
    if status == "PASSED":
        p = performance or {}
        ev["performance"] = {
            "latency_ms": p.get("latency_ms", 0.0),
            "reference_latency_ms": p.get("reference_latency_ms", 0.0),
            "speedup_factor": p.get("speedup_factor", 0.0),
        }
    return Trace.model_validate(
        {"definition": definition, "solution": solution, "workload": workload, "evaluation": ev}
    )
