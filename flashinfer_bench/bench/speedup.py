"""When a reference timing may be reused, and how much of a speedup is noise (issue 17).

Torch-free: the supervisor (no torch) and the runner both decide with it."""
from __future__ import annotations

import math
from typing import Any, Dict, Optional


def reusable_reference(stats: Dict[str, Any]) -> bool:
    """May a reference timing serve later solutions of the workload? Only a converged, quiet one
    (a reused noisy measurement once gave an honest solution a fake 2.13x in three runs)."""
    return bool(stats.get("converged")) and not stats.get("noisy") and stats.get("samples", 0) >= 10


def speedup_noise(solution_rel_ci: float, ref_stats: Optional[Dict[str, Any]]) -> Optional[float]:
    """Relative noise of a speedup: the two medians' 95% CI half-widths combined."""
    if not ref_stats:
        return None
    a, b = float(solution_rel_ci), float(ref_stats.get("rel_ci", math.nan))
    if not (math.isfinite(a) and math.isfinite(b)):
        return None
    return math.sqrt(a * a + b * b)
