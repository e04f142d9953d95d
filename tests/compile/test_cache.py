"""The artifact cache: what is a hit and what a miss, speed of a hit, concurrency, kills."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path


from flashinfer_bench.compile import COMPILE_ERROR, OK, build, default_cache_dir
from flashinfer_bench.compile import keys

from .helpers import PY_ADD, VADD, solution

REPO = Path(__file__).resolve().parents[2]


def test_renaming_or_redescribing_is_a_hit(cache):
    first = build(solution({"main.py": PY_ADD}, "main.py::run", name="a"), VADD, cache)
    assert first.status == OK and not first.cache_hit
    renamed = solution({"main.py": PY_ADD}, "main.py::run", name="b", author="someone else",
                       description="a new description")
    again = build(renamed, VADD, cache)
    assert again.cache_hit and again.hash == first.hash and again.artifact_dir == first.artifact_dir
    # The definition's name and description do not count either, only its interface.
    redescribed = VADD.model_copy(update={"description": "other words", "tags": ["x:y"]})
    assert build(renamed, redescribed, cache).cache_hit


def test_one_source_byte_or_the_calling_convention_is_a_miss(cache):
    base = build(solution({"main.py": PY_ADD}, "main.py::run"), VADD, cache)
    byte = build(solution({"main.py": PY_ADD + " "}, "main.py::run"), VADD, cache)
    assert not byte.cache_hit and byte.hash != base.hash
    dps = build(solution({"main.py": "def run(a, b, c=None):\n    return a + b\n"}, "main.py::run"), VADD, cache)
    dps2 = build(solution({"main.py": "def run(a, b, c=None):\n    return a + b\n"}, "main.py::run", dps=True), VADD, cache)
    assert dps.status == dps2.status == OK and dps.hash != dps2.hash and not dps2.cache_hit
    path = build(solution({"kernel.py": PY_ADD}, "kernel.py::run"), VADD, cache)
    assert path.hash != base.hash


def test_a_hit_takes_milliseconds(cache):
    s = solution({"main.py": PY_ADD}, "main.py::run")
    build(s, VADD, cache)
    build(s, VADD, cache)
    t0 = time.perf_counter()
    r = build(s, VADD, cache)
    elapsed = time.perf_counter() - t0
    assert r.cache_hit and elapsed < 0.05, elapsed


def test_a_hit_in_a_fresh_process_does_not_import_torch(cache):
    s = solution({"main.py": PY_ADD}, "main.py::run")
    assert build(s, VADD, cache).status == OK
    code = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from tests.compile.helpers import VADD, PY_ADD, solution
        from flashinfer_bench.compile import build
        s = solution({{"main.py": PY_ADD}}, "main.py::run")
        t0 = time.perf_counter()
        r = build(s, VADD, {str(cache)!r})
        print(r.cache_hit, "torch" in sys.modules, time.perf_counter() - t0)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    hit, torch_loaded, seconds = out.stdout.split()
    assert hit == "True" and torch_loaded == "False", out.stdout


def test_failed_builds_are_not_cached(cache):
    bad = solution({"main.py": "import not_installed_module_q\n\ndef run(a, b):\n    return a + b\n"}, "main.py::run")
    r1 = build(bad, VADD, cache)
    assert r1.status == COMPILE_ERROR
    assert not (cache / "artifacts" / r1.hash).exists()
    assert not list((cache / "tmp").iterdir())
    # The environment is fixed (the module appears): the same solution now builds.
    (cache.parent / "mods").mkdir()
    (cache.parent / "mods" / "not_installed_module_q.py").write_text("")
    os.environ["PYTHONPATH"] = str(cache.parent / "mods")
    try:
        r2 = build(bad, VADD, cache)
    finally:
        del os.environ["PYTHONPATH"]
    assert r2.status == OK and r2.hash == r1.hash and not r2.cache_hit


def test_default_cache_dir_follows_fib_cache_path(tmp_path, monkeypatch):
    monkeypatch.setenv("FIB_CACHE_PATH", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    monkeypatch.delenv("FIB_CACHE_PATH")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "flashinfer_bench"
    s = solution({"main.py": PY_ADD}, "main.py::run")
    monkeypatch.setenv("FIB_CACHE_PATH", str(tmp_path / "env-cache"))
    r = build(s, VADD)
    assert r.status == OK and Path(r.artifact_dir).is_relative_to(tmp_path / "env-cache")


def test_key_has_arch_for_gpu_code_only(monkeypatch):
    py = solution({"main.py": PY_ADD}, "main.py::run")
    cu = solution({"k.cu": "// x\n"}, "k.cu::run", language="cuda", dps=True)
    tr = solution({"k.py": PY_ADD}, "k.py::run", language="triton")
    monkeypatch.setenv("FIB_CUDA_ARCH", "8.0")
    before = {n: keys.key_hash(keys.build_key(s, VADD)) for n, s in (("py", py), ("cu", cu), ("tr", tr))}
    monkeypatch.setenv("FIB_CUDA_ARCH", "9.0a")
    after = {n: keys.key_hash(keys.build_key(s, VADD)) for n, s in (("py", py), ("cu", cu), ("tr", tr))}
    assert before["py"] == after["py"]
    assert before["cu"] != after["cu"] and before["tr"] != after["tr"]
    k = keys.build_key(cu, VADD)
    assert k["toolchain"]["arch"] == "9.0a" and "nvcc" in k["toolchain"] and "tvm-ffi" in k["toolchain"]
    assert "name" not in json.dumps(k["definition"])


# ----------------------------------------------------------------------------- processes
_COUNTING = """\
import os, time
print(f"IMPORTED {{os.getpid()}}", flush=True)  # a build writes only its own directory: the log says it
time.sleep(1.5)

def run(a, b):
    return a + b
"""

_BUILD_SCRIPT = """\
import json, sys
sys.path.insert(0, {repo!r})
from tests.compile.helpers import VADD, solution
from flashinfer_bench.compile import build
s = solution({{"main.py": {src!r}}}, "main.py::run")
print(json.dumps(build(s, VADD, {cache!r}).to_dict()))
"""


def _script(src: str, cache: Path) -> str:
    return _BUILD_SCRIPT.format(repo=str(REPO), src=src, cache=str(cache))


def test_concurrent_builds_from_three_processes_build_once(cache, tmp_path):
    src = _COUNTING.format()
    procs = [
        subprocess.Popen([sys.executable, "-c", _script(src, cache)], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    results = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert all(r["status"] == OK for r in results), results
    assert len({r["hash"] for r in results}) == 1
    assert sorted(r["cache_hit"] for r in results) == [False, True, True]
    imported = {line for r in results for line in r["log"].splitlines() if line.startswith("IMPORTED")}
    assert len(imported) == 1, imported  # the solution was imported by one build (cache hits show its log)
    assert [p.name for p in (cache / "artifacts").iterdir()] == [results[0]["hash"]]


_SLOW = """\
import os, time
if os.environ.get("FIB_BUILD_TEST_SLOW_IMPORT"):
    # a build writes only its own directory (TMPDIR is inside it): the test finds the file there;
    # the build sees only allow-listed variables (FIB_BUILD_* among them), see sandbox/policy.py
    with open(os.path.join(os.environ["TMPDIR"], os.environ["FIB_BUILD_TEST_SLOW_IMPORT"]), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)

def run(a, b):
    return a + b
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_killed_build_leaves_no_artifact_and_the_next_build_succeeds(cache, tmp_path):
    name = f"started-{os.getpid()}.pid"
    env = dict(os.environ, FIB_BUILD_TEST_SLOW_IMPORT=name)
    proc = subprocess.Popen([sys.executable, "-c", _script(_SLOW, cache)], env=env, stdout=subprocess.DEVNULL)
    deadline = time.time() + 60

    def found() -> str:
        return next((p.read_text() for p in cache.rglob(name)), "")

    while not found():
        assert time.time() < deadline and proc.poll() is None, "the build never started"
        time.sleep(0.1)
    child = int(found())
    os.kill(proc.pid, signal.SIGKILL)  # kill -9 the building process half-way
    proc.wait()
    deadline = time.time() + 10
    while _alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(child), "the builder child outlived the killed build"
    s = solution({"main.py": _SLOW}, "main.py::run")
    arts = cache / "artifacts"
    assert not arts.exists() or not any(arts.iterdir())
    assert any((cache / "tmp").iterdir())  # the half-written build is still there...
    r = build(s, VADD, cache)
    assert r.status == OK and not r.cache_hit
    assert not any((cache / "tmp").iterdir())  # ...and the next build cleared it
    assert json.loads((Path(r.artifact_dir) / "manifest.json").read_text())["status"] == OK
