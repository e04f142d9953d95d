"""Imported by the workflow's job server (`pipeline/job_server.py: PRELOAD`) before it forks report
jobs: matplotlib imported, the plot templates made and the fonts loaded once, in the server, so a
report job starts drawing at once (the first plot of a fresh process costs ~35 ms more). Nothing
else imports this module: the report code imports matplotlib only when it draws."""
from __future__ import annotations

try:
    from .plots import _warm_up

    _warm_up()
except Exception:  # noqa: BLE001 - a warm-up that fails costs the report job its ~35 ms, nothing else
    pass
