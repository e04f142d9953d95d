"""The sandbox's parts on their own (fast, no worker): the seccomp program's decisions, Landlock in
a child process, sealed replies, the supervisor's plausibility checks."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flashinfer_bench.bench.sandbox import channel, supervise
from flashinfer_bench.sandbox import landlock, seccomp

from tests.bench.conftest import rms_definition


def _decide(nr: int, arch: int = 0xC000003E, arg0: int = 0) -> int:
    """Run the BPF program on one syscall (what the kernel would answer)."""
    prog, pc, acc = seccomp.program(), 0, 0
    while True:
        code, jt, jf, k = prog[pc]
        if code == 0x20:
            acc = {4: arch, 0: nr, 16: arg0}[k]
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x45:
            pc += 1 + (jt if acc & k else jf)
        else:
            return k


def test_seccomp_program() -> None:
    allow = 0x7FFF0000
    assert _decide(0) == allow and _decide(257) == allow  # read, openat
    assert _decide(56, arg0=0x3D0F00) == allow  # clone of a thread
    assert _decide(41) != allow  # socket
    assert _decide(101) != allow and _decide(310) != allow  # ptrace, process_vm_readv
    assert _decide(56, arg0=0x10000011) != allow  # clone(CLONE_NEWUSER)
    assert _decide(435) == 0x50000 | 38  # clone3 -> ENOSYS (libc falls back to clone)
    assert _decide(1, arch=0x40000003) != allow  # i386 ABI
    assert _decide(0x40000001) != allow  # x32 ABI


CHILD = r"""
import json, os, sys
from pathlib import Path
from flashinfer_bench.sandbox.policy import build_ruleset
scratch, data, logs = map(Path, sys.argv[1:4])
build_ruleset(scratch, [data], logs).apply()
out = {}
def attempt(name, fn):
    try:
        fn(); out[name] = "ok"
    except OSError as e:
        out[name] = type(e).__name__
attempt("write scratch", lambda: (scratch / "f").write_text("x"))
def _move_between_dirs():  # what Triton's cache does: write in a temp dir, rename into place
    (scratch / "tmp1").mkdir(); (scratch / "dest").mkdir()
    (scratch / "tmp1" / "k").write_text("kernel")
    os.replace(scratch / "tmp1" / "k", scratch / "dest" / "k")
attempt("rename across scratch dirs", _move_between_dirs)
attempt("read data", lambda: (data / "d").read_text())
attempt("write data", lambda: (data / "d").write_text("y"))
attempt("new file in data", lambda: (data / "n").write_text("y"))
attempt("write log", lambda: (logs / "eval.log").write_text("z"))
attempt("read log", lambda: (logs / "eval.log").read_text())
attempt("fifo in logs", lambda: os.mkfifo(logs / "fifo"))
attempt("symlink in logs", lambda: os.symlink("/etc/passwd", logs / "link"))
attempt("read home", lambda: os.listdir(os.path.expanduser("~")))
attempt("write /tmp", lambda: open("/tmp/fib-landlock-probe-" + str(os.getpid()), "w").close())
print(json.dumps(out))
"""


@pytest.mark.skipif(landlock.abi_version() < 1, reason="no Landlock in this kernel")
def test_landlock_policy_in_a_child(tmp_path: Path) -> None:
    scratch, data, logs = tmp_path / "scratch", tmp_path / "data", tmp_path / "logs"
    for d in (scratch, data, logs):
        d.mkdir()
    (data / "d").write_text("data")
    r = subprocess.run([sys.executable, "-c", CHILD, str(scratch), str(data), str(logs)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {
        "write scratch": "ok", "rename across scratch dirs": "ok", "read data": "ok", "write data": "PermissionError", "new file in data": "PermissionError",
        "write log": "ok", "read log": "PermissionError", "fifo in logs": "PermissionError",
        "symlink in logs": "PermissionError", "read home": "PermissionError", "write /tmp": "PermissionError",
    }, out
    assert (data / "d").read_text() == "data"


def test_sealed_replies() -> None:
    key = channel.new_key()
    sealer = channel.Sealer(key)
    body = {"status": "PASSED", "performance": {"latency_ms": 0.5}}
    msg = json.loads(json.dumps(sealer.seal("n1", body)))  # through the wire format
    assert channel.verify(key, "n1", 0, msg) == (body, "")
    assert channel.verify(key, "n2", 0, msg)[0] is None  # another request's answer
    assert channel.verify(key, "n1", msg["seq"], msg)[0] is None  # replayed
    forged = dict(msg, result={**body, "performance": {"latency_ms": 1e-6}})
    assert "MAC" in channel.verify(key, "n1", 0, forged)[1]
    assert channel.verify(key, "n1", 0, {"type": "result", "result": body})[0] is None  # unsealed
    assert channel.verify(channel.new_key(), "n1", 0, msg)[0] is None  # another runner's key


def _passed(lat: float, ref: float = 1.0, **extra: object) -> dict:
    return {
        "status": "PASSED", "correctness": {"max_abs": 0.0, "max_rel": 0.0},
        "performance": {"latency_ms": lat, "reference_latency_ms": ref, "speedup_factor": ref / lat},
        "extra": {"samples": 20, **extra},
    }


def test_plausibility() -> None:
    d = rms_definition(4096)
    req = {"definition": d.model_dump(mode="json"), "workload": {"axes": {"batch_size": 8192}}, "config": {}}
    ready = {"peaks": {"peak_gbps": 3000.0}}
    # 8192 x 4096 fp16 in and out: 134 MB, 45 us at 3 TB/s
    assert supervise.plausibility_problems(_passed(0.05), req, ready, "cuda:0") == []
    assert supervise.floor_suspicion(_passed(0.05), req, ready, "cuda:0") is None
    # far under the floor: flagged suspect by the supervisor, not rejected (an unread input does it)
    assert supervise.plausibility_problems(_passed(0.005), req, ready, "cuda:0") == []
    assert "floor" in supervise.floor_suspicion(_passed(0.005), req, ready, "cuda:0")
    assert supervise.floor_suspicion(_passed(0.005), req, ready, "cpu") is None  # no floor on the CPU
    bad = _passed(0.05)
    bad["performance"]["speedup_factor"] = 1000.0
    assert any("speedup" in p for p in supervise.plausibility_problems(bad, req, ready, "cuda:0"))
    nan = _passed(0.05)
    nan["performance"]["latency_ms"] = float("nan")
    assert supervise.plausibility_problems(nan, req, ready, "cuda:0")
    assert supervise.plausibility_problems({**_passed(0.05), "extra": {"samples": 0}}, req, ready, "cuda:0")
    assert supervise.plausibility_problems({"status": "WHATEVER"}, req, ready, "cpu")
    assert supervise.plausibility_problems({"status": "RUNTIME_ERROR"}, req, ready, "cpu") == []


def test_refusal_and_coverage(tmp_path: Path) -> None:
    confined = {"confine": {"confined": True, "sandbox": "landlock+seccomp",
                            "notes": {"landlock": {"read": [str(tmp_path / "a")], "write": []}}}}
    assert supervise.refusal(confined, False) is None
    unconfined = {"confine": {"confined": False, "sandbox": "none", "missing": ["filesystem (Landlock)"]}}
    assert "allow_unconfined" in supervise.refusal(unconfined, False)
    assert supervise.refusal(unconfined, True) is None
    (tmp_path / "a" / "x").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    assert supervise.uncovered(confined, [str(tmp_path / "a" / "x"), str(tmp_path / "b"), None]) == [tmp_path / "b"]


def test_dataset_needed_only_for_file_inputs() -> None:
    build = {"artifact_dir": "/cache/a"}
    rnd = {"workload": {"inputs": {"x": {"type": "random"}, "eps": {"type": "scalar", "value": 1}}}, "dataset_root": "/ds"}
    files = {"workload": {"inputs": {"x": {"type": "safetensors", "path": "blob/x.safetensors", "tensor_key": "x"}}}, "dataset_root": "/ds"}
    assert supervise.needed_paths(rnd, build) == ["/cache/a", None]
    assert supervise.needed_paths(files, build) == ["/cache/a", "/ds"]
