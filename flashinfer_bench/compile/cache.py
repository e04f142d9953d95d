"""The artifact cache on disk.

    <cache>/artifacts/<hash>/manifest.json   published artifacts (only successful builds)
    <cache>/artifacts/<hash>/src/...          the sources, as the solution lists them
    <cache>/tmp/<hash>-<pid>-<rand>/          builds in progress
    <cache>/locks/<hash>.lock                 one lock per hash

An artifact is built in a temp dir inside the cache and published with one rename, so a reader
that sees manifest.json sees a complete artifact. The manifest is written last, before the rename.
Builds of one hash hold its file lock, so concurrent builders build once; a builder killed half-way
leaves only a temp dir, which the next holder of the lock deletes.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional

from .. import env
from .result import OK

MANIFEST = "manifest.json"


def default_cache_dir() -> Path:
    """$FIB_CACHE_PATH, else ~/.cache/flashinfer_bench ($XDG_CACHE_HOME respected)."""
    return env.cache_path()


class ArtifactCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def artifact_dir(self, digest: str) -> Path:
        return self.root / "artifacts" / digest

    def lock_path(self, digest: str) -> Path:
        return self.root / "locks" / f"{digest}.lock"

    def read_manifest(self, digest: str) -> Optional[Dict[str, Any]]:
        """The manifest of a published, successful artifact, or None."""
        return read_manifest(self.artifact_dir(digest))

    def lock(self, digest: str, timeout_s: float):
        from filelock import FileLock

        p = self.lock_path(digest)
        p.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(p), timeout=timeout_s)

    def new_temp_dir(self, digest: str) -> Path:
        tmp_root = self.root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"{digest}-{os.getpid()}-", dir=tmp_root))

    def remove_stale(self, digest: str) -> None:
        """Delete leftovers of builds of this hash that died. Call only while holding its lock."""
        tmp_root = self.root / "tmp"
        if tmp_root.is_dir():
            for p in tmp_root.glob(f"{digest}-*"):
                shutil.rmtree(p, ignore_errors=True)
        art = self.artifact_dir(digest)
        if art.exists() and read_manifest(art) is None:
            # Not produced by publish() (which renames complete dirs): set it aside, then delete.
            trash = self.new_temp_dir(digest)
            os.replace(art, trash / "stale")
            shutil.rmtree(trash, ignore_errors=True)

    def publish(self, tmp: Path, digest: str, manifest: Dict[str, Any]) -> Path:
        """Write the manifest into tmp, then rename tmp to the artifact dir (atomic). Whatever
        the build left at the manifest's name goes first (a directory made `publish` raise,
        `build_manifest_dir`), and the new one is created, never followed (a symlink planted
        there had the parent overwrite a file outside the build, `build_unreaped_daemon`)."""
        remove_entry(tmp / MANIFEST)
        write_json_durably(tmp / MANIFEST, manifest, exclusive=True)
        _fsync_dir(tmp)
        dest = self.artifact_dir(digest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.rename(tmp, dest)
        _fsync_dir(dest.parent)
        return dest


def read_manifest(artifact_dir: Path) -> Optional[Dict[str, Any]]:
    """The manifest of a published, successful build; None otherwise (manifest_problem says why)."""
    m, _ = _manifest(artifact_dir)
    return m


def manifest_problem(artifact_dir: Path) -> Optional[str]:
    """Why `artifact_dir` holds no usable build (None when it does): missing, unreadable (with the
    errno: a sandbox denial reads differently from a missing file), unparsable or not OK."""
    return _manifest(artifact_dir)[1]


def _manifest(artifact_dir: Path):
    path = Path(artifact_dir) / MANIFEST
    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as e:
        return None, f"{path} cannot be read: {e.strerror or e} (errno {e.errno})"
    except (ValueError, RecursionError) as e:  # RecursionError: nested past the parser's depth
        return None, f"{path} is not valid JSON: {type(e).__name__}: {e}"
    if not isinstance(m, dict) or m.get("status") != OK:
        return None, f"{path}: status is {m.get('status') if isinstance(m, dict) else m!r}, not {OK}"
    return m, None


def remove_entry(path: Path) -> None:
    """Remove what is at `path` (a file, link or directory tree), not following links."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def write_json_durably(path: Path, obj: Any, exclusive: bool = False) -> None:
    """`obj` as JSON at `path`, synced; `exclusive`: a new file, never an existing one or a link."""
    if exclusive:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        f = os.fdopen(fd, "w", encoding="utf-8")
    else:
        f = open(path, "w", encoding="utf-8")
    with f:
        json.dump(obj, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
