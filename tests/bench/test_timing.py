"""Timing statistics, the stopping rule, and the timer-tamper check (host sampler; CUDA in test_gpu)."""
from __future__ import annotations

import statistics
import time

import pytest

from flashinfer_bench.bench import timing


def test_summary_statistics() -> None:
    s = timing.summarize([1.0, 2.0, 3.0, 4.0, 100.0], timer="host", warmup_calls=3, converged=False,
                         host_ms=1.0, gate_misses=0, gate_mode="host", wall_s=0.1)
    assert s.median_ms == 3.0 and s.min_ms == 1.0 and s.samples == 5
    assert s.center_ms == 3.0, "the headline is the 20%-trimmed mean: the outlier is ignored"
    assert s.iqr_ms == 2.0 and s.rel_iqr == pytest.approx(2 / 3)
    assert s.noisy is True
    assert s.p10_ms == pytest.approx(1.4)


def test_rel_ci_shrinks_with_samples() -> None:
    xs = [1.0, 1.1, 0.9, 1.05, 0.95] * 4
    assert timing.rel_ci(xs * 10) < timing.rel_ci(xs) < 1


def _busy(n: int = 2000) -> float:
    s = 0.0
    for i in range(n):
        s += i
    return s


def test_measure_respects_minimums_and_budget() -> None:
    st = timing.measure(
        timing.HostSampler(), _busy, lambda: (), None, warmup_runs=4, warmup_min_s=0.0, warmup_max_s=0.01,
        iterations=15, max_time_s=0.05, max_samples=10_000, target_rel_ci=1e-9,
    )
    assert st.samples >= 15 and st.warmup_calls >= 4
    assert st.wall_s < 1.0
    assert st.timer == "host" and st.median_ms > 0 and not st.converged


def test_measure_stops_when_the_median_is_tight() -> None:
    st = timing.measure(
        timing.HostSampler(), _busy, lambda: (), None, warmup_runs=3, warmup_min_s=0.0, warmup_max_s=0.01,
        iterations=16, max_time_s=5.0, max_samples=100_000, target_rel_ci=0.5,
    )
    assert st.converged and st.wall_s < 2.0


def test_replaced_timers_are_detected_and_restored() -> None:
    real = time.perf_counter
    try:
        time.perf_counter = lambda: 0.0
        assert "time.perf_counter" in timing.tampered()
        st = timing.measure(
            timing.HostSampler(), _busy, lambda: (), None, warmup_runs=3, warmup_min_s=0.0, warmup_max_s=0.0,
            iterations=5, max_time_s=0.01, max_samples=100, target_rel_ci=0.01,
        )
        assert st.median_ms > 0, "the harness keeps the clock it captured"
    finally:
        timing.restore_timing_functions()
    assert time.perf_counter is real and timing.tampered() == []


def test_trimmed_mean_resolves_below_the_timer_quantum() -> None:
    # a 3.3 us kernel seen through a 0.5 us timer: 40% of samples read 3.0, 60% read 3.5
    xs = [3.0] * 40 + [3.5] * 60 + [50.0] * 5
    assert timing.trimmed_mean(xs) == pytest.approx(3.31, abs=0.05)
    assert statistics.median(xs) == 3.5
