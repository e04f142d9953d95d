"""The Snakemake start-up/teardown trims keep Snakemake's behaviour (snakemake_tuning.py)."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_pending_rescheduling_timer_no_longer_holds_the_process() -> None:
    from flashinfer_bench.pipeline.snakemake_tuning import cancel_rescheduling_timers

    fired = []
    t = threading.Timer(30.0, lambda: fired.append(1))
    t.start()
    t0 = time.monotonic()
    assert cancel_rescheduling_timers() >= 1
    t.join(timeout=5)
    assert not t.is_alive() and not fired and time.monotonic() - t0 < 5


def test_params_compare_as_before_and_pandas_is_imported_only_for_pandas_values() -> None:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from snakemake.persistence import Persistence\n"
        "from flashinfer_bench.pipeline.snakemake_tuning import lazy_pandas_params\n"
        "assert lazy_pandas_params()\n"
        "p = Persistence.__new__(Persistence)\n"
        "v = {'args': '--x 1', 'digest': 'ab'}\n"
        "assert Persistence._serialize_param_pandas(p, v) == Persistence._serialize_param_builtin(p, v)\n"
        "assert 'pandas' not in sys.modules, 'a plain param imported pandas'\n"
        "import pandas as pd\n"
        "df = pd.DataFrame({'a': [1, 2]})\n"
        "assert Persistence._serialize_param_pandas(p, df) == repr(pd.util.hash_pandas_object(df).tolist())\n"
        "print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
