"""The background writer: turns queued calls into workload lines and safetensors blobs.

The calling thread only appends to a bounded deque. This thread (or a flush on exit, on
disable, on SIGTERM/SIGINT) drains it and writes, so that every file is always whole:
- a blob is written to a temporary name in its final directory and renamed;
- a line is appended only after its blobs exist, whole lines of one batch in one os.write on an
  O_APPEND descriptor; a short write or an error truncates the file back to where it was.
A crash loses at most the records still queued. Disk errors become warnings, never exceptions
in the user's program.
"""
from __future__ import annotations

import collections
import errno
import json
import os
import tempfile
import threading
import traceback
import uuid as uuidlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple


class TracingWarning(UserWarning):
    """Tracing skipped something (a write failed, a call did not match); the program goes on."""


@dataclass(frozen=True)
class DefInfo:
    """What the writer needs to know about a traced definition."""

    name: str
    op_type: str
    var_axes: Tuple[str, ...]
    inputs: Tuple[Tuple[str, bool], ...]  # (name, is_scalar) in definition order

    @property
    def scalar_names(self) -> Tuple[str, ...]:
        return tuple(n for n, is_scalar in self.inputs if is_scalar)

    @property
    def jsonl_rel(self) -> str:
        return f"workloads/{self.op_type}/{self.name}.jsonl"

    def blob_rel(self, uid: str) -> str:
        return f"blob/workloads/{self.op_type}/{self.name}/{self.name}_{uid}.safetensors"


# One queued call: (definition info, var-axis values, scalar input values in definition order,
# tensors to save as (name, tensor, cuda event or None, needs host copy), pinned/host bytes)
Record = Tuple[DefInfo, Tuple[int, ...], Tuple[Any, ...], List[Tuple[str, Any, Any, bool]], int]


@dataclass
class WriterStats:
    queued: int = 0
    written: int = 0
    dropped_full: int = 0
    dropped_error: int = 0
    blobs: int = 0
    problems: List[str] = field(default_factory=list)


def _scalar_value(v: Any) -> Any:
    """A JSON scalar for a scalar input (Python number, numpy or 0-d tensor), or raise TypeError."""
    if isinstance(v, (bool, int, float)):
        return v
    item = getattr(v, "item", None)
    if item is not None:
        out = item()
        if isinstance(out, (bool, int, float)):
            return out
    raise TypeError(f"scalar input of type {type(v).__name__} cannot be recorded")


class Writer:
    def __init__(
        self,
        root: Path,
        max_queue: int = 4096,
        max_pending_bytes: int = 1 << 30,
        interval_s: float = 0.05,
    ):
        self.root = Path(root)
        self.max_queue = max_queue
        self.max_pending_bytes = max_pending_bytes
        self.interval_s = interval_s
        self.stats = WriterStats()
        self._q: "collections.deque[Record]" = collections.deque()
        self._pending_bytes = 0
        self._lock = threading.RLock()
        self._bytes_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = False
        self._warned: set = set()
        self._thread = threading.Thread(target=self._run, name="fib-trace-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ calling thread
    def submit(self, rec: Record) -> bool:
        """Queue one record; False (and a one-time warning) when the queue is full."""
        nbytes = rec[4]
        if len(self._q) >= self.max_queue or (
            nbytes and self._pending_bytes + nbytes > self.max_pending_bytes
        ):
            self.stats.dropped_full += 1
            self.warn_once(
                "full",
                f"tracing: the write queue is full ({self.max_queue} calls or "
                f"{self.max_pending_bytes} bytes pending); calls are dropped until it drains",
            )
            return False
        if nbytes:
            with self._bytes_lock:
                self._pending_bytes += nbytes
        self._q.append(rec)
        self.stats.queued += 1
        return True

    def warn_once(self, key: Any, message: str) -> None:
        self.stats.problems.append(message)
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(message, TracingWarning, stacklevel=3)

    # ------------------------------------------------------------------ draining
    def _run(self) -> None:
        while not self._stop:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            self.flush()

    def flush(self) -> None:
        """Write everything queued so far (safe from any thread and from a signal handler)."""
        with self._lock:
            while self._q:
                batch: List[Record] = []
                while self._q and len(batch) < 1024:
                    batch.append(self._q.popleft())
                try:
                    self._write_batch(batch)
                except Exception:  # never let a bug here kill the thread or the program
                    self.stats.dropped_error += len(batch)
                    self.warn_once("bug", "tracing: writing failed unexpectedly:\n" + traceback.format_exc())
                finally:
                    freed = sum(r[4] for r in batch)
                    if freed:
                        with self._bytes_lock:
                            self._pending_bytes -= freed

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
        self.flush()

    # ------------------------------------------------------------------ file work
    def _write_batch(self, batch: Sequence[Record]) -> None:
        lines: Dict[str, List[Tuple[bytes, List[Path]]]] = collections.defaultdict(list)
        for info, axes, scalar_values, dumps, _ in batch:
            uid = str(uuidlib.uuid4())
            saved, blob = self._save_blob(info, uid, dumps)
            scalars = dict(zip(info.scalar_names, scalar_values))
            inputs: Dict[str, Any] = {}
            for name, is_scalar in info.inputs:
                if is_scalar:
                    if name in scalars:
                        try:
                            inputs[name] = {"type": "scalar", "value": _scalar_value(scalars[name])}
                            continue
                        except TypeError as e:
                            self.warn_once(("scalar", info.name, name), f"tracing {info.name}: {e}; recorded as random")
                    inputs[name] = {"type": "random"}
                elif name in saved:
                    inputs[name] = {
                        "type": "safetensors",
                        "path": info.blob_rel(uid),
                        "tensor_key": name,
                    }
                else:
                    inputs[name] = {"type": "random"}
            obj = {
                "definition": info.name,
                "workload": {"uuid": uid, "axes": dict(zip(info.var_axes, axes)), "inputs": inputs},
                "solution": None,
                "evaluation": None,
            }
            line = (json.dumps(obj, separators=(", ", ": ")) + "\n").encode("utf-8")
            lines[info.jsonl_rel].append((line, [blob] if blob else []))
        for rel, items in lines.items():
            self._append(self.root / rel, items)

    def _save_blob(
        self, info: DefInfo, uid: str, dumps: List[Tuple[str, Any, Any, bool]]
    ) -> Tuple[set, Optional[Path]]:
        if not dumps:
            return set(), None
        tensors: Dict[str, Any] = {}
        for name, t, event, to_host in dumps:
            try:
                if event is not None:
                    event.synchronize()
                if to_host:
                    t = t.cpu()
                tensors[name] = t.contiguous()
            except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
                self.warn_once(
                    ("snapshot", info.name, name),
                    f"tracing {info.name}: input {name!r} could not be copied ({type(e).__name__}: {e}); "
                    "recorded as random",
                )
        if not tensors:
            return set(), None
        from safetensors.torch import save_file

        path = self.root / info.blob_rel(uid)
        tmp: Optional[str] = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            os.close(fd)
            try:
                save_file(tensors, tmp)
            except OSError:
                raise
            except Exception as e:  # safetensors raises several types for unsavable tensors
                raise _Unsavable(f"{type(e).__name__}: {e}") from e
            os.replace(tmp, path)
            tmp = None
        except _Unsavable as e:
            self.warn_once(
                ("unsavable", info.name),
                f"tracing {info.name}: inputs {sorted(tensors)} cannot be saved to safetensors ({e}); "
                "recorded as random",
            )
            return set(), None
        except OSError as e:
            self._disk_error(path, e)
            return set(), None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        self.stats.blobs += 1
        return set(tensors), path

    def _append(self, path: Path, items: List[Tuple[bytes, List[Path]]]) -> None:
        data = b"".join(line for line, _ in items)
        fd = -1
        start = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            start = os.fstat(fd).st_size
            if start > 0:
                with open(path, "rb") as f:
                    f.seek(start - 1)
                    if f.read(1) != b"\n":
                        data = b"\n" + data
            n = os.write(fd, data)
            if n != len(data):
                raise OSError(errno.ENOSPC, f"short write ({n} of {len(data)} bytes)")
        except OSError as e:
            if fd >= 0 and start is not None:
                try:
                    os.ftruncate(fd, start)
                except OSError:
                    pass
            self._disk_error(path, e)
            self.stats.dropped_error += len(items)
            for _, blobs in items:
                for b in blobs:
                    try:
                        b.unlink()
                    except OSError:
                        pass
            return
        finally:
            if fd >= 0:
                os.close(fd)
        self.stats.written += len(items)

    def _disk_error(self, path: Path, e: OSError) -> None:
        name = errno.errorcode.get(e.errno or 0, str(e.errno))
        self.warn_once(
            ("disk", e.errno),
            f"tracing: cannot write {path} ({name}: {e.strerror or e}); traced calls are being lost",
        )


class _Unsavable(Exception):
    pass
