"""build(): a solution into a cached artifact, or a COMPILE_ERROR / SKIPPED result. Never raises
for a bad solution.

The parent (this module) stays torch-free: it checks the spec, hashes, looks the artifact up,
takes the per-hash lock, stages the sources in a temp dir and runs the language's builder in a
child process (compile/child.py) with a timeout. Only a successful build is published (atomic
rename); failures and skips are returned, never cached, so a fixed environment or solution
rebuilds at once.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple

from .. import measure_lock
from ..data import Definition, Solution
from ..sandbox.keeper import Keeper
from ..sandbox.proctree import kill_tree
from . import keys
from . import toolchain as tc
from . import zygote
from .confine import child_info, sanitize_build_dir
from .cache import ArtifactCache, default_cache_dir
from .builders.common import RESULT
from .messages import MAX_LOG_CHARS, cap, relativise
from .result import COMPILE_ERROR, OK, SKIPPED, BuildResult
from .sources import package_name, spec_problems, syntax_problem, write_sources

DEFAULT_TIMEOUT_S = 900.0
LOCK_TIMEOUT_S = 3 * 3600.0
_CONTROL = "_build"  # job file, child result and log; removed before publishing


def _timeout(explicit: Optional[float]) -> float:
    if explicit is not None:
        return float(explicit)
    v = os.environ.get("FIB_BUILD_TIMEOUT")
    return float(v) if v else DEFAULT_TIMEOUT_S


def build(
    solution: Solution,
    definition: Definition,
    cache_dir: Optional[Path] = None,
    *,
    timeout_s: Optional[float] = None,
) -> BuildResult:
    """Build `solution` for `definition` into `cache_dir` (default: default_cache_dir()).

    A cache hit reads one manifest.json (milliseconds, no torch import). Otherwise the build runs
    under the hash's file lock, so concurrent callers build once and the others get the hit.
    Every outcome carries the solution's content hash (`solution_hash`).
    """
    return dataclasses.replace(_build(solution, definition, cache_dir, timeout_s=timeout_s),
                               solution_hash=solution.content_hash())


def _build(
    solution: Solution,
    definition: Definition,
    cache_dir: Optional[Path] = None,
    *,
    timeout_s: Optional[float] = None,
) -> BuildResult:
    t0 = time.perf_counter()
    cache = ArtifactCache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    language = solution.spec.language.value
    key = keys.build_key(solution, definition)
    digest = keys.key_hash(key)

    def result(status: str, message: str, log: str = "") -> BuildResult:
        return BuildResult(
            status=status, hash=digest, language=language, toolchain=key["toolchain"],
            message=message, log=cap(message + ("\n\n" + log if log else "")),
            build_seconds=round(time.perf_counter() - t0, 3), loadable_here=False,
        )

    hit = cache.read_manifest(digest)
    if hit is not None:
        return _from_manifest(hit, cache.artifact_dir(digest))
    problems = spec_problems(solution, definition)
    if problems:
        return result(COMPILE_ERROR, "; ".join(problems))
    syntax = syntax_problem(solution)
    if syntax:
        return result(COMPILE_ERROR, syntax)
    cannot = _cannot_build_here(key)
    if cannot:
        return result(SKIPPED, cannot)

    with cache.lock(digest, LOCK_TIMEOUT_S):
        hit = cache.read_manifest(digest)  # built by another process while we waited
        if hit is not None:
            return _from_manifest(hit, cache.artifact_dir(digest))
        cache.remove_stale(digest)
        tmp = cache.new_temp_dir(digest)
        try:
            with _beside_measurements():
                status, message, log, info = _run_child(solution, definition, key, digest, tmp, _timeout(timeout_s))
            seconds = round(time.perf_counter() - t0, 3)
            if status != OK:
                return result(status, message, log)
            too_big = _over_budget(tmp)
            if too_big:
                return result(COMPILE_ERROR, too_big, log)
            final = cache.artifact_dir(digest)
            _relocate_triton_cache(tmp / "triton_cache", tmp, final)
            shutil.rmtree(tmp / _CONTROL, ignore_errors=True)
            manifest = {
                **child_info(info),  # first: what the child reports never overrides what we know
                "hash": digest,
                "status": OK,
                "language": language,
                "binding": key["binding"],
                "destination_passing_style": key["destination_passing_style"],
                "entry_point": solution.spec.entry_point,
                "package": package_name(language, digest),
                "toolchain": key["toolchain"],
                "build_time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "build_seconds": seconds,
                "built_by": {"solution": solution.name, "definition": definition.name},
                "key": key,
                "log": cap(log),
            }
            manifest.setdefault("loadable_here", True)
            cache.publish(tmp, digest, manifest)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    m = cache.read_manifest(digest)
    assert m is not None, f"artifact {digest} vanished right after publishing"
    r = _from_manifest(m, cache.artifact_dir(digest))
    r.cache_hit = False
    return r


def _cannot_build_here(key: Dict[str, Any]) -> Optional[str]:
    """Why this machine cannot attempt the build (missing toolchain), known without a child."""
    tool = key["toolchain"]
    missing = tc.missing_toolchain(key["language"])
    if missing:
        return missing
    if key["binding"] == "tvm-ffi" and tool.get("tvm-ffi") is None:
        return "apache-tvm-ffi is not installed (pip install apache-tvm-ffi)"
    if "nvcc" in tool and tool["nvcc"] is None:
        return "nvcc (the CUDA toolkit) was not found: set CUDA_HOME or put nvcc on PATH"
    if key["binding"] == "torch" and "torch_cuda" in tool and tool.get("torch") and tool["torch_cuda"] is None:
        return (
            f"needs a CUDA build of torch (this torch {tool['torch']} is CPU-only, and "
            "torch.utils.cpp_extension refuses CUDA sources)"
        )
    return None


def _from_manifest(m: Dict[str, Any], artifact: Path) -> BuildResult:
    return BuildResult(
        status=OK, hash=m["hash"], artifact_dir=str(artifact), log=m.get("log", ""),
        language=m.get("language", ""), cache_hit=True,
        build_seconds=float(m.get("build_seconds", 0.0)), toolchain=m.get("toolchain", {}),
        loadable_here=bool(m.get("loadable_here", True)),
    )


_log = logging.getLogger(__name__)
# kills the build children of this process should it die mid-build (one keeper a process)
_KEEPER = Keeper()
KEPT = "FIB_BUILD_KEPT"  # tells the child the keeper holds it: no death signal of its own


def _child_env(tmp: Path) -> Dict[str, str]:
    env = dict(os.environ)
    env["TRITON_CACHE_DIR"] = str(tmp / "triton_cache")
    env["TILELANG_CACHE_DIR"] = str(tmp / "tilelang_cache")
    env.setdefault("TRITON_CACHE_AUTOTUNING", "1")  # autotuning results travel with the artifact
    env["FIB_BUILD_PARENT_PID"] = str(os.getpid())
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@contextmanager
def _beside_measurements() -> Iterator[None]:
    """While the build child runs (solution code, at idle priority): the CPU's measurement lock
    held shared, so no CPU measurement runs beside it (measure_lock's docstring)."""
    if not measure_lock.builds_hold_cpu_measurement():
        yield
        return
    with measure_lock.held(measure_lock.measure_lock_path("cpu"), exclusive=False):
        yield


def _run_child(
    solution: Solution,
    definition: Definition,
    key: Dict[str, Any],
    digest: str,
    tmp: Path,
    timeout_s: float,
) -> Tuple[str, str, str, Dict[str, Any]]:
    """Stage the sources and run the builder child: (status, message, log, manifest info)."""
    control = tmp / _CONTROL
    control.mkdir()
    src = write_sources(solution, tmp)
    spec = solution.spec
    job = {
        "language": key["language"],
        "binding": key["binding"],
        "entry_file": spec.entry_file,
        "entry_symbol": spec.entry_symbol,
        "dps": key["destination_passing_style"],  # as written, or what the entry's signature fits
        "package": package_name(key["language"], digest),
        "src_dir": str(src),
        "work_dir": str(tmp),
        "source_paths": [p for p, _ in key["sources"]],
        "definition": json.loads(definition.model_dump_json()),
        "has_cuda_sources": keys.has_cuda_sources(solution),
        "arch": key["toolchain"].get("arch") or tc.target_arch(),
        "triton_backend": key["toolchain"].get("triton_backend") or tc.triton_backend(),
        "cuda_home": tc.cuda_home(),
        "cxx_flags": list(keys.CXX_FLAGS),
        "cuda_flags": list(keys.CUDA_FLAGS),
    }
    job_path = control / "job.json"
    job_path.write_text(json.dumps(job), encoding="utf-8")
    log_path = control / "build.log"
    try:
        forked = zygote.run_build_child(job_path, tmp, _child_env(tmp), log_path, timeout_s)
    except zygote.ForgedReply:
        return COMPILE_ERROR, ("the build wrote on the build zygote's connection, answering for it (its own "
                               "result is not trusted)"), _read_log(log_path, src), {}
    if forked is not None:
        rc, timed_out = forked
        if timed_out:
            return COMPILE_ERROR, f"the build timed out after {timeout_s:g} s", _read_log(log_path, src), {}
        status, message, log, info = _child_result(control, rc, log_path, src)
        return status, message, log, {**info, "build_process": "zygote_fork"}
    cmd = [sys.executable, "-m", "flashinfer_bench.compile.child", str(job_path)]
    env = _child_env(tmp)
    try:
        _KEEPER.start()  # should this process die mid-build, the keeper kills the build whole
        env[KEPT] = "1"  # ... instead of the child's own death signal (see compile/child.py)
    except OSError as e:
        _log.warning("no keeper for builds (%s): a build outlives nothing but its parent's death", e)
    with open(log_path, "wb") as log_f:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log_f, stderr=subprocess.STDOUT, cwd=tmp,
            env=env, start_new_session=True,
        )
        if env.get(KEPT):
            try:
                _KEEPER.register(proc.pid)
            except OSError as e:  # kept by nobody and without its own death signal: not run
                _kill_tree(proc)
                return COMPILE_ERROR, f"the build could not be registered with its keeper: {e}", "", {}
        try:
            rc = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_tree(proc)
            return COMPILE_ERROR, f"the build timed out after {timeout_s:g} s", _read_log(log_path, src), {}
        except BaseException:
            _kill_tree(proc)
            raise
    return _child_result(control, rc, log_path, src)


# what the trusted parent reads of files the build child wrote, at most: a build that truncated
# its log to 1 GiB (sparse, no disk used) made the parent hold ~3 GiB decoding it (`sparse_build_log`)
RESULT_BYTES = 1 << 20


# a build's directory is published into the cache and kept: at most this much disk and this many files
BUILD_MAX_MB = int(os.environ.get("FIB_BUILD_MAX_MB", "4096"))
BUILD_MAX_FILES = int(os.environ.get("FIB_BUILD_MAX_FILES", "100000"))


def _over_budget(tmp: Path) -> Optional[str]:
    """Why the build's directory may not be kept (None when it may): its disk use (allocated
    blocks; a sparse file counts what it holds) or its number of files over the budget."""
    used, files = 0, 0
    for dirpath, dirnames, filenames in os.walk(tmp):
        for name in filenames + dirnames:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            used += st.st_blocks * 512
            files += 1
        if files > BUILD_MAX_FILES or used > BUILD_MAX_MB << 20:
            return (f"the build left more than {BUILD_MAX_MB} MiB or {BUILD_MAX_FILES} files in its directory "
                    f"(FIB_BUILD_MAX_MB, FIB_BUILD_MAX_FILES): not kept")
    return None


def _read_bounded(path: Path, limit: int) -> Optional[bytes]:
    """The head and tail of a regular file the build wrote, `limit` bytes at most (never through a
    link it planted, never blocking on a FIFO); None when it is not there or not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size <= limit:
            return f.read(limit)
        head = f.read(limit // 2)
        f.seek(st.st_size - limit // 2)
        return head + f"\n[... {st.st_size - limit} bytes cut ...]\n".encode() + f.read(limit // 2)


def _child_result(control: Path, rc: int, log_path: Path, src: Path) -> Tuple[str, str, str, Dict[str, Any]]:
    """What the build child reported: its status, message, log and `info`. All of it is the
    solution's to forge (its code ran there): whatever is not a report of the expected shape is a
    COMPILE_ERROR of this solution (a list, a number for the message, JSON nested 100,000 deep
    raised in the trusted parent and stopped its whole definition's aggregation and report:
    `build_result_type`)."""
    # the child is gone: remove the links and special files it may have planted for us to follow
    planted = sanitize_build_dir(control.parent)
    log = _read_log(log_path, src)
    if planted:
        log += f"\n(removed {len(planted)} symlink(s) or special file(s) the build left: {planted[:5]})"
    raw = _read_bounded(control / RESULT, RESULT_BYTES + 1)
    try:
        res = json.loads(raw.decode("utf-8")) if raw is not None and len(raw) <= RESULT_BYTES else None
    except (ValueError, RecursionError):
        res = None
    if raw is None or (res is None and rc != 0):
        how = f"signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        return COMPILE_ERROR, f"the build process died ({how}) before reporting a result", log, {}
    status, message, details, info = (res.get(k) for k in ("status", "message", "details", "info")) \
        if isinstance(res, dict) else (None, None, None, None)
    if status not in (OK, COMPILE_ERROR, SKIPPED) or not isinstance(message or "", str) \
            or not isinstance(details or "", str) or not isinstance(info or {}, dict):
        return COMPILE_ERROR, "the build left a result the builder cannot read (not a build report)", log, {}
    details = relativise(details or "", src)
    if details:
        log = (log + "\n" + details).strip()
    return status, relativise(message or "", src), log, info or {}


def _kill_tree(proc: subprocess.Popen) -> None:
    """The build child and everything it started: a process in a session of its own is not in
    its group, and would outlive it (`build_timeout_daemon`)."""
    kill_tree(proc.pid)
    proc.wait()


def _read_log(path: Path, src: Path) -> str:
    raw = _read_bounded(path, MAX_LOG_CHARS)
    return relativise(raw.decode("utf-8", errors="replace"), src).strip() if raw else ""


def _relocate_triton_cache(cache: Path, old_root: Path, new_root: Path) -> None:
    """Triton's group files hold absolute paths; rewrite them for the published location."""
    if not cache.is_dir():
        return
    old, new = str(old_root), str(new_root)
    for grp in cache.rglob("__grp__*"):
        raw = _read_bounded(grp, RESULT_BYTES)
        try:  # the build's code wrote these too (`triton_grp_type`: a list here raised in the parent)
            data = json.loads(raw.decode("utf-8")) if raw else None
        except (ValueError, RecursionError):
            continue
        paths = data.get("child_paths") if isinstance(data, dict) else None
        if isinstance(paths, dict) and all(isinstance(v, str) for v in paths.values()):
            data["child_paths"] = {k: v.replace(old, new, 1) for k, v in paths.items()}
            grp.write_text(json.dumps(data), encoding="utf-8")
