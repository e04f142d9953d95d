"""Tracing through the public API: layout, policies, flushing, and bad input (CPU)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import flashinfer_bench as fb
from flashinfer_bench import TracingConfig
from flashinfer_bench.data import TraceSet
from flashinfer_bench.tracing import TracingWarning

from .toy import gather, rmsnorm, workload_lines, write_dataset

W = torch.ones(64, dtype=torch.float16)


@pytest.fixture
def ds(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "ds")


def _norm_lines(root: Path) -> list:
    return workload_lines(root, "rmsnorm", "toy_rmsnorm_h64")


def test_trace_writes_dataset_layout(ds: Path) -> None:
    cfg = TracingConfig(tensor_dump_policy="dump_all", dedup_policy="keep_all")
    xs = [torch.randn(b, 64).half() for b in (1, 2, 2)]
    saved = [x.clone() for x in xs]
    with fb.enable_tracing({"toy_rmsnorm_h64": cfg}, dataset_dir=ds):
        for x in xs:
            out = rmsnorm(x, W, 1e-6)
            x.mul_(0)  # the caller reuses its buffer: the record must hold the value at call time
            assert out.shape == x.shape
    lines = _norm_lines(ds)
    assert [ln["workload"]["axes"] for ln in lines] == [{"batch": 1}, {"batch": 2}, {"batch": 2}]
    assert len({ln["workload"]["uuid"] for ln in lines}) == 3
    for ln, x in zip(lines, saved):
        assert ln["solution"] is None and ln["evaluation"] is None
        inputs = ln["workload"]["inputs"]
        assert inputs["eps"] == {"type": "scalar", "value": 1e-6}
        ref = inputs["x"]
        assert ref["type"] == "safetensors" and ref["tensor_key"] == "x"
        assert ref["path"].startswith("blob/workloads/rmsnorm/toy_rmsnorm_h64/")
        tensors = load_file(str(ds / ref["path"]))
        assert torch.equal(tensors["x"], x)
        assert torch.equal(tensors["weight"], W)
    ts = TraceSet.from_path(ds)
    assert not ts.errors
    assert len(ts.workloads_for("toy_rmsnorm_h64")) == 3
    assert not list(ds.rglob("*.tmp"))


def test_dump_policies(ds: Path) -> None:
    table = torch.randn(10, 8)
    idx = torch.tensor([1, 3, 5], dtype=torch.int32)
    cases = {
        "dump_none": {"table": "random", "idx": "random"},
        "dump_non_float": {"table": "random", "idx": "safetensors"},
        ("table",): {"table": "safetensors", "idx": "random"},
        "dump_all": {"table": "safetensors", "idx": "safetensors"},
    }
    for i, (policy, want) in enumerate(cases.items()):
        root = write_dataset(ds.parent / f"p{i}")
        cfg = TracingConfig(tensor_dump_policy=list(policy) if isinstance(policy, tuple) else policy)
        with fb.enable_tracing({"toy_gather_d8": cfg}, dataset_dir=root):
            assert torch.equal(gather(table, idx), table[idx.long()])
        (line,) = workload_lines(root, "gather", "toy_gather_d8")
        assert line["workload"]["axes"] == {"n": 3, "rows": 10}
        got = {k: v["type"] for k, v in line["workload"]["inputs"].items()}
        assert got == want, policy
        if want["idx"] == "safetensors":
            t = load_file(str(root / line["workload"]["inputs"]["idx"]["path"]))
            assert torch.equal(t["idx"], idx)


@pytest.mark.parametrize(
    "cfg,batches,want",
    [
        (TracingConfig(dedup_policy="shape_only"), [1, 2, 1, 2, 4], [1, 2, 4]),
        (TracingConfig(dedup_policy="shape_only", k=2), [1, 1, 1, 2], [1, 1, 2]),
        (TracingConfig(dedup_policy="keep_first_k", k=2), [4, 1, 2, 8], [4, 1]),
        (TracingConfig(dedup_policy="keep_all"), [2, 2, 2], [2, 2, 2]),
        (TracingConfig(dedup_policy=lambda wl: wl.axes["batch"] % 2), [1, 3, 2, 4, 5], [1, 2]),
    ],
)
def test_dedup_policies(ds: Path, cfg: TracingConfig, batches: list, want: list) -> None:
    with fb.enable_tracing({"toy_rmsnorm_h64": cfg}, dataset_dir=ds):
        for b in batches:
            rmsnorm(torch.randn(b, 64).half(), W, 1e-6)
    assert [ln["workload"]["axes"]["batch"] for ln in _norm_lines(ds)] == want


def test_shape_only_counts_workloads_already_in_the_dataset(ds: Path) -> None:
    for _ in range(2):  # the second run of the same program adds nothing
        with fb.enable_tracing(dataset_dir=ds):
            for b in (1, 8):
                rmsnorm(torch.randn(b, 64).half(), W, 1e-6)
    assert sorted(ln["workload"]["axes"]["batch"] for ln in _norm_lines(ds)) == [1, 8]


def test_configs_select_definitions_and_warn_on_unknown(ds: Path) -> None:
    with pytest.warns(TracingWarning, match="no_such_def"):
        rt = fb.enable_tracing({"toy_gather_d8": TracingConfig(), "no_such_def": TracingConfig()}, dataset_dir=ds)
    with rt:
        rmsnorm(torch.randn(2, 64).half(), W, 1e-6)
        gather(torch.randn(4, 8), torch.tensor([0], dtype=torch.int32))
    assert _norm_lines(ds) == []
    assert len(workload_lines(ds, "gather", "toy_gather_d8")) == 1


def test_env_free_default_dataset_is_used_when_no_dir_given(ds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLASHINFER_BENCH_DATASET_PATH", str(ds))
    with fb.enable_tracing():
        rmsnorm(torch.randn(3, 64).half(), W, 1e-6)
    assert [ln["workload"]["axes"] for ln in _norm_lines(ds)] == [{"batch": 3}]


# ---------------------------------------------------------------------- bad input


def test_call_that_violates_the_definition_warns_and_runs_the_fallback(ds: Path) -> None:
    table, idx2d = torch.randn(5, 8), torch.tensor([[0, 1]], dtype=torch.int32)
    with fb.enable_tracing(dataset_dir=ds):
        with pytest.warns(TracingWarning, match="does not match the definition"):
            out = gather(table, idx2d)
        assert out.shape == (1, 2, 8)
    assert workload_lines(ds, "gather", "toy_gather_d8") == []


def test_dataset_without_definitions_warns_and_traces_nothing(tmp_path: Path) -> None:
    with pytest.warns(TracingWarning, match="definitions"):
        rt = fb.enable_tracing(dataset_dir=tmp_path / "empty")
    with rt:
        assert rmsnorm(torch.randn(2, 64).half(), W, 1e-6).shape == (2, 64)
    assert not (tmp_path / "empty" / "workloads").exists()


def test_unwritable_dataset_warns_and_traces_nothing(ds: Path) -> None:
    (ds / "workloads").write_text("a file where the workloads directory should be")
    with pytest.warns(TracingWarning, match="cannot write"):
        rt = fb.enable_tracing(dataset_dir=ds)
    with rt:
        assert rmsnorm(torch.randn(2, 64).half(), W, 1e-6).shape == (2, 64)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_full_disk_warns_and_the_program_goes_on(ds: Path) -> None:
    target = ds / "workloads" / "rmsnorm" / "toy_rmsnorm_h64.jsonl"
    target.parent.mkdir(parents=True)
    target.symlink_to("/dev/full")  # every write to it fails with ENOSPC
    rt = fb.enable_tracing(TracingConfig(dedup_policy="keep_all"), dataset_dir=ds, flush_interval_s=3600)
    for b in (1, 2, 3):
        assert rmsnorm(torch.randn(b, 64).half(), W, 1e-6).shape == (b, 64)
    with pytest.warns(TracingWarning, match="ENOSPC"):
        fb.disable_tracing()  # flushes on this thread
    assert rt.stats["dropped_error"] == 3 and rt.stats["written"] == 0


def test_tensor_that_cannot_be_saved_is_recorded_as_random(ds: Path) -> None:
    x = torch.empty(2, 64, dtype=torch.float16, device="meta")  # no data to save
    rt = fb.enable_tracing(TracingConfig(tensor_dump_policy="dump_all"), dataset_dir=ds, flush_interval_s=3600)
    with pytest.warns(TracingWarning, match="random"):
        out = rmsnorm(x, W.to("meta"), 1e-6)
        fb.disable_tracing()
    assert out.shape == (2, 64)
    (line,) = _norm_lines(ds)
    assert line["workload"]["inputs"]["x"] == {"type": "random"}
    assert rt.stats["written"] == 1


def test_full_queue_drops_calls_with_one_warning(ds: Path) -> None:
    rt = fb.enable_tracing(TracingConfig(dedup_policy="keep_all"), dataset_dir=ds, max_queue=2, flush_interval_s=3600)
    with pytest.warns(TracingWarning, match="queue is full"):
        for b in range(1, 6):
            rmsnorm(torch.randn(b, 64).half(), W, 1e-6)
    fb.disable_tracing()
    assert rt.stats["dropped_full"] == 3
    assert [ln["workload"]["axes"]["batch"] for ln in _norm_lines(ds)] == [1, 2]


# ---------------------------------------------------------------------- processes

_PROGRAM = textwrap.dedent(
    """
    import os, signal, sys, torch
    sys.path.insert(0, {tests!r})
    from tracing.toy import rmsnorm
    import flashinfer_bench as fb
    mode = sys.argv[1]
    if mode in ("sigterm", "sigint"):
        if mode == "sigterm":
            def mine(signum, frame):
                print("user handler ran", flush=True)
                sys.exit(3)
            signal.signal(signal.SIGTERM, mine)
        fb.enable_tracing(fb.TracingConfig(dedup_policy="keep_all"), flush_interval_s=3600)
    w = torch.ones(64, dtype=torch.float16)
    for b in range(1, 6):
        rmsnorm(torch.randn(b, 64).half(), w, 1e-6)
    if mode == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    if mode == "sigint":
        try:
            os.kill(os.getpid(), signal.SIGINT)
            import time; time.sleep(5)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            os._exit(4)  # skip atexit: only the signal handler can have flushed
    if mode == "rlimit":
        pass
    print("done", flush=True)
    """
)


def _run(tmp_path: Path, ds: Path, mode: str, env_extra: dict) -> subprocess.CompletedProcess:
    script = tmp_path / "prog.py"
    script.write_text(_PROGRAM.format(tests=str(Path(__file__).resolve().parent.parent)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIB_", "FLASHINFER_BENCH_"))}
    env.update(env_extra)
    env["FLASHINFER_BENCH_DATASET_PATH"] = str(ds)
    return subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("var", ["FLASHINFER_BENCH_ENABLE_TRACING", "FIB_ENABLE_TRACING"])
def test_env_variable_traces_a_program_and_flushes_at_exit(tmp_path: Path, ds: Path, var: str) -> None:
    r = _run(tmp_path, ds, "plain", {var: "1"})
    assert r.returncode == 0, r.stderr
    assert sorted(ln["workload"]["axes"]["batch"] for ln in _norm_lines(ds)) == [1, 2, 3, 4, 5]


def test_sigterm_flushes_then_chains_to_the_previous_handler(tmp_path: Path, ds: Path) -> None:
    r = _run(tmp_path, ds, "sigterm", {})
    assert r.returncode == 3, r.stderr
    assert "user handler ran" in r.stdout
    assert len(_norm_lines(ds)) == 5


def test_sigint_flushes_then_raises_keyboardinterrupt(tmp_path: Path, ds: Path) -> None:
    r = _run(tmp_path, ds, "sigint", {})
    assert r.returncode == 4, r.stderr
    assert "KeyboardInterrupt" in r.stdout
    assert len(_norm_lines(ds)) == 5


_FSIZE = textwrap.dedent(
    """
    import resource, signal, sys, torch
    sys.path.insert(0, {tests!r})
    from tracing.toy import rmsnorm
    import flashinfer_bench as fb
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
    rt = fb.enable_tracing(fb.TracingConfig(dedup_policy="keep_all"), flush_interval_s=3600)
    w = torch.ones(64, dtype=torch.float16)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1500, 1500))
    for b in range(1, 4):
        rmsnorm(torch.randn(b, 64).half(), w, 1e-6)
    rt.flush()  # one batch of 3 lines: fits
    for b in range(4, 40):
        rmsnorm(torch.randn(b, 64).half(), w, 1e-6)
    fb.disable_tracing()  # a batch that does not fit: a short write, rolled back
    print(rt.stats["written"], rt.stats["dropped_error"])
    """
)


def test_file_size_limit_never_leaves_a_torn_line(tmp_path: Path, ds: Path) -> None:
    script = tmp_path / "fsize.py"
    script.write_text(_FSIZE.format(tests=str(Path(__file__).resolve().parent.parent)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIB_", "FLASHINFER_BENCH_"))}
    env["FLASHINFER_BENCH_DATASET_PATH"] = str(ds)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "36"]
    assert "EFBIG" in r.stderr or "ENOSPC" in r.stderr
    text = (ds / "workloads" / "rmsnorm" / "toy_rmsnorm_h64.jsonl").read_text()
    assert text.endswith("\n")
    assert [json.loads(x)["workload"]["axes"]["batch"] for x in text.splitlines()] == [1, 2, 3]


def test_a_dataset_without_definitions_warns_that_nothing_is_traced(tmp_path: Path) -> None:
    # issue 17: `--trace DIR` on an empty folder traced nothing, silently
    (tmp_path / "definitions").mkdir()
    with pytest.warns(TracingWarning, match="holds no definition; nothing is traced"):
        with fb.enable_tracing(dataset_dir=tmp_path):
            pass
