"""The changes to Snakemake's internals (pipeline/snakemake_tuning.py) keep Snakemake's behaviour,
and are no-ops with a note, never crashes, where Snakemake lacks what they change."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    full = {k: v for k, v in os.environ.items() if k != "FIB_SNAKEMAKE_TUNING"}
    return subprocess.run([sys.executable, "-c", f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + code],
                          capture_output=True, text=True, timeout=120, env={**full, **(env or {})})


def _scheduler_class():
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
    except ImportError:  # 9.0
        from snakemake.scheduler import JobScheduler
    return JobScheduler


def test_snakemakes_pending_rescheduling_timer_no_longer_holds_the_process_and_others_stay() -> None:
    from flashinfer_bench.pipeline.snakemake_tuning import cancel_rescheduling_timers

    JobScheduler = _scheduler_class()
    sched = JobScheduler.__new__(JobScheduler)
    sched._open_jobs = threading.Semaphore(0)
    JobScheduler._schedule_reevalutation(sched, 30)  # Snakemake's own code starts the timer
    ours = threading.Timer(30.0, lambda: None)
    ours.start()
    t0 = time.monotonic()
    try:
        assert cancel_rescheduling_timers() == 1
        assert not sched._open_jobs.acquire(timeout=0.1), "the cancelled timer woke the scheduler"
        for t in threading.enumerate():
            if isinstance(t, threading.Timer) and t is not ours:
                t.join(timeout=5)
                assert not t.is_alive()
        assert time.monotonic() - t0 < 5
        assert ours.is_alive(), "a timer that is not Snakemake's rescheduling was cancelled"
    finally:
        ours.cancel()


def test_params_compare_as_before_and_pandas_is_imported_only_for_pandas_values() -> None:
    r = _python(
        "from flashinfer_bench.pipeline.snakemake_tuning import _persistence_class, lazy_pandas_params\n"
        "Persistence = _persistence_class()  # Persistence (9.16) or PersistenceBase (9.27)\n"
        "assert lazy_pandas_params()\n"
        "p = type('P', (), {'_serialize_param_builtin': Persistence._serialize_param_builtin})()  # PersistenceBase is abstract\n"
        "v = {'args': '--x 1', 'digest': 'ab'}\n"
        "assert Persistence._serialize_param_pandas(p, v) == Persistence._serialize_param_builtin(p, v)\n"
        "assert 'pandas' not in sys.modules, 'a plain param imported pandas'\n"
        "import pandas as pd\n"
        "df = pd.DataFrame({'a': [1, 2]})\n"
        "assert Persistence._serialize_param_pandas(p, df) == repr(pd.util.hash_pandas_object(df).tolist())\n"
        "print('ok')\n"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_each_change_is_a_noop_with_a_note_when_snakemakes_internals_lack_it() -> None:
    r = _python(
        "import threading\n"
        "from flashinfer_bench.pipeline import snakemake_tuning as t\n"
        "Persistence = t._persistence_class()\n"
        "try:\n"
        "    import snakemake.scheduling.job_scheduler as js\n"
        "except ImportError:\n"
        "    import snakemake.scheduler as js\n"
        "del Persistence._serialize_param_pandas\n"
        "del js.JobScheduler._schedule_reevalutation\n"
        "assert t.lazy_pandas_params() is False\n"
        "assert not hasattr(Persistence, '_serialize_param_pandas')\n"
        "timer = threading.Timer(30, lambda: None); timer.start()\n"
        "assert t.cancel_rescheduling_timers() == 0 and timer.is_alive()\n"
        "timer.cancel()\n"
        "print('ok')\n"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    notes = [line for line in r.stderr.splitlines() if line.startswith("[flashinfer-bench] note:")]
    assert len(notes) == 2, r.stderr
    assert any("_serialize_param_pandas" in n for n in notes)
    assert any("_schedule_reevalutation" in n for n in notes)


def test_an_unchecked_snakemake_version_or_the_switch_leaves_snakemake_as_it_is() -> None:
    r = _python(
        "import snakemake\n"
        "snakemake.__version__ = '99.1.0'\n"
        "from flashinfer_bench.pipeline import snakemake_tuning as t\n"
        "Persistence = t._persistence_class()\n"
        "original = Persistence._serialize_param_pandas\n"
        "assert t.lazy_pandas_params() is False and Persistence._serialize_param_pandas is original\n"
        "assert t.cancel_rescheduling_timers() == 0\n"
        "print('ok')\n"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    assert r.stderr.count("Snakemake 99.1.0 is outside the versions") == 1, r.stderr

    r = _python(
        "from flashinfer_bench.pipeline import snakemake_tuning as t\n"
        "Persistence = t._persistence_class()\n"
        "original = Persistence._serialize_param_pandas\n"
        "assert t.lazy_pandas_params() is False and Persistence._serialize_param_pandas is original\n"
        "print('ok')\n",
        env={"FIB_SNAKEMAKE_TUNING": "timers"},
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok" and not r.stderr.strip(), r.stderr[-2000:]
