"""Atomic file writes, standard library only: the CLI and the benchmark jobs' thin client (which
loads this file by path) use them before (or without) importing pydantic; `data.io` re-exports
them. No `tempfile`: its import costs the thin client ~10 ms a job."""
from __future__ import annotations

import itertools
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Tuple, Union

_SEQ = itertools.count()


def atomic_write_text(path: Union[str, Path], text: str, errors: str = "strict") -> None:
    """Write via a temp file in the same directory and rename, so readers see old or new, never torn.

    errors="surrogateescape" writes back bytes that were read with it (lines that are not UTF-8
    text, kept as they were)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_beside(path)
    try:
        # the temp file is 0600; keep a replaced file's mode, else what open() would give
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _temp_beside(path: Path) -> Tuple[int, Path]:
    """A new file of ours in `path`'s directory (so the rename is atomic), named after this
    process and a counter (threads never share one; O_EXCL skips a dead process's leftover)."""
    while True:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{next(_SEQ)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue


def _mode_for(path: Path) -> int:
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_json(path: Union[str, Path], obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2) + "\n")


@contextmanager
def file_lock(path: Union[str, Path]) -> Iterator[None]:
    """An exclusive lock (flock) on the file `path`, which is removed again on release: nothing
    is left next to the data it guards (filelock's FileLock leaves its `.lock` file behind).

    Removing a lock file is safe only with a check: a waiter may have opened the file a holder is
    about to remove. So the holder removes the path before it unlocks, and whoever acquires a lock
    verifies the path still names the file it locked, else it retries on the new one."""
    import fcntl

    path = str(path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # a definition's first traces: no traces/<op>/ yet
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            mine = os.fstat(fd)
            try:
                now = os.stat(path)
                if (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                    break
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a lock on a removed file: take the new one
    try:
        yield
    finally:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os.close(fd)  # releases the lock
