"""A reference timing is reused only when it is a converged, quiet measurement, and a speedup
inside the two measurements' noise is reported as such (issue 17)."""
from __future__ import annotations

import math

from flashinfer_bench.bench.speedup import reusable_reference, speedup_noise


def test_only_converged_quiet_reference_timings_are_reused() -> None:
    good = {"converged": True, "noisy": False, "samples": 40}
    assert reusable_reference(good)
    assert not reusable_reference({**good, "converged": False})  # ran out of budget
    assert not reusable_reference({**good, "noisy": True})  # rel. IQR above 10%
    assert not reusable_reference({**good, "samples": 3})


def test_speedup_noise_combines_both_confidence_intervals() -> None:
    assert math.isclose(speedup_noise(0.03, {"rel_ci": 0.04}), 0.05)
    assert speedup_noise(0.01, None) is None
    assert speedup_noise(0.01, {"rel_ci": float("nan")}) is None
