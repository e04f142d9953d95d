"""Flush traced calls when the program ends: atexit, SIGTERM and SIGINT (chained).

Installed once per process at the first enable_tracing(). The signal handlers flush every active
runtime, then hand the signal to whatever handler was there before (for a default disposition:
restore it and re-raise the signal, so the exit status is the one the user expects).
"""
from __future__ import annotations

import atexit
import os
import signal
import threading
from typing import Any, Callable, Dict, List

_installed = False
_previous: Dict[int, Any] = {}


def install(flush_all: Callable[[], None]) -> None:
    global _installed
    if _installed:
        return
    _installed = True
    atexit.register(flush_all)
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            _previous[sig] = signal.getsignal(sig)
            signal.signal(sig, _make_handler(flush_all))
        except (ValueError, OSError):  # embedded interpreters may forbid it
            _previous.pop(sig, None)


def _make_handler(flush_all: Callable[[], None]) -> Callable[[int, Any], None]:
    def handler(signum: int, frame: Any) -> None:
        flush_all()
        prev = _previous.get(signum)
        if callable(prev):
            prev(signum, frame)
        elif prev == signal.SIG_IGN:
            return
        else:  # SIG_DFL (or None: set outside Python): behave as if we were never there
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    return handler


def installed_signals() -> List[int]:
    return sorted(_previous)
