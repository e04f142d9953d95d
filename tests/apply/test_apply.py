"""apply() through its public API: routing, conventions, miss policies, noise rule, bad input."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import flashinfer_bench as fb
from flashinfer_bench import apply
from flashinfer_bench.apply import ApplyConfig, ApplyWarning, active_runtime, dispatch_table, stats

from .helpers import DEF, fallback_math, trace, write_dataset


@apply("toy_rmsnorm_h64")
def norm(x, weight, eps):
    return fallback_math(x, weight, eps)


W = torch.rand(64, dtype=torch.float16) + 0.5


def X(b: int) -> torch.Tensor:
    return torch.randn(b, 64, dtype=torch.float16)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One artifact cache for the module, filled once: enable_apply builds winners in parallel."""
    c = tmp_path_factory.mktemp("fib-cache")
    names = ["norm_a", "norm_b", "norm_dps", "norm_raises"]
    ds = write_dataset(tmp_path_factory.mktemp("prebuild") / "ds", names, [trace(n, i + 1, 0.01) for i, n in enumerate(names)])
    with fb.enable_apply(ds, ApplyConfig(cache_dir=c)) as rt:
        assert rt.solutions_built == sorted(names)
    return c


@pytest.fixture(autouse=True)
def _no_leftover_runtime():
    yield
    while active_runtime() is not None:
        fb.disable_apply()


def _cfg(cache: Path, **kw) -> ApplyConfig:
    return ApplyConfig(cache_dir=cache, **kw)


def test_routes_each_key_to_its_fastest_solution_in_either_convention(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(
        tmp_path / "ds",
        ["norm_a", "norm_b", "norm_dps"],
        [trace("norm_a", 1, 0.010), trace("norm_b", 1, 0.020), trace("norm_dps", 1, 0.030),
         trace("norm_a", 8, 0.050), trace("norm_b", 8, 0.020), trace("norm_dps", 8, 0.010)],
    )
    with fb.enable_apply(ds, _cfg(cache)) as rt:
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_a", (8,): "norm_dps"}}
        assert rt.solutions_built == ["norm_a", "norm_dps"]  # only the winners are built
        for b in (1, 8):
            x = X(b)
            want = fallback_math(x, W, 1e-6)
            got = norm(x, W, 1e-6)  # value-returning caller
            assert torch.allclose(got.float(), want.float(), atol=1e-2)
            out = torch.empty_like(want)
            assert norm(x, W, 1e-6, out) is None  # destination-passing caller
            assert torch.allclose(out.float(), want.float(), atol=1e-2)
            got = norm(x=x, weight=W, eps=1e-6)  # keywords
            assert torch.allclose(got.float(), want.float(), atol=1e-2)
        got = fb.apply(DEF["name"], args=(X(1), W, 1e-6), fallback=fallback_math)  # imperative
        assert got.shape == (1, 64)
        assert stats(by_axes=True)[DEF["name"]] == {(1,): {"norm_a": 4}, (8,): {"norm_dps": 3}}
    # disabled: the decorated function is its fallback again
    assert norm(X(2), W, 1e-6).shape == (2, 64)
    assert stats()[DEF["name"]] == {"norm_a": 4, "norm_dps": 3}


def test_traces_of_other_hardware_never_decide(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 1, 0.01, hardware="NVIDIA H100 80GB HBM3")])
    with pytest.warns(ApplyWarning, match="no PASSED traces for hardware"):
        rt = fb.enable_apply(ds, _cfg(cache))
    with rt:
        assert norm(X(1), W, 1e-6).shape == (1, 64)
        assert stats() == {DEF["name"]: {"fallback": 1}}
        assert rt.solutions_built == []


def test_a_win_inside_the_noise_goes_to_the_solution_that_wins_more_keys(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(
        tmp_path / "ds",
        ["norm_a", "norm_b"],
        [
            # batch 1: a is faster, but its interval overlaps b's: not a clear win
            trace("norm_a", 1, 0.010, spread=(0.008, 0.013)), trace("norm_b", 1, 0.011, spread=(0.009, 0.014)),
            # batch 2, 4, 16: b wins clearly (b is fastest on 3 keys, a on 2)
            trace("norm_a", 2, 0.030, spread=(0.029, 0.031)), trace("norm_b", 2, 0.010, spread=(0.009, 0.011)),
            trace("norm_a", 4, 0.030, spread=(0.029, 0.031)), trace("norm_b", 4, 0.010, spread=(0.009, 0.011)),
            trace("norm_a", 16, 0.030, spread=(0.029, 0.031)), trace("norm_b", 16, 0.010, spread=(0.009, 0.011)),
            # batch 8: a wins clearly
            trace("norm_a", 8, 0.010, spread=(0.009, 0.011)), trace("norm_b", 8, 0.030, spread=(0.029, 0.031)),
        ],
    )
    with fb.enable_apply(ds, _cfg(cache)):
        assert dispatch_table()[DEF["name"]] == {
            (1,): "norm_b", (2,): "norm_b", (4,): "norm_b", (8,): "norm_a", (16,): "norm_b"
        }
    with fb.enable_apply(ds, _cfg(cache, noise_aware=False)):
        assert dispatch_table()[DEF["name"]][(1,)] == "norm_a"


@pytest.mark.parametrize(
    "policy,distance,want",
    [
        ("nearest", 1.0, {1: "norm_a", 5: "norm_b", 64: "fallback"}),  # 1 -> 2 (a), 5 -> 4 (b), 64: 2 octaves off
        ("nearest", 10.0, {1: "norm_a", 5: "norm_b", 64: "norm_b"}),
        ("definition_best", 1.0, {1: "norm_b", 5: "norm_b", 64: "norm_b"}),
        ("fallback", 1.0, {1: "fallback", 5: "fallback", 64: "fallback"}),
    ],
)
def test_miss_policies(tmp_path: Path, cache: Path, policy: str, distance: float, want: dict) -> None:
    ds = write_dataset(
        tmp_path / "ds",
        ["norm_a", "norm_b"],
        [trace("norm_a", 2, 0.01), trace("norm_b", 2, 0.02),
         trace("norm_a", 4, 0.02), trace("norm_b", 4, 0.01),
         trace("norm_a", 16, 0.02), trace("norm_b", 16, 0.01)],
    )
    with fb.enable_apply(ds, _cfg(cache, on_miss=policy, max_log2_distance=distance)):
        for b in want:
            assert norm(X(b), W, 1e-6).shape == (b, 64)
        got = {axes[0]: next(iter(c)) for axes, c in stats(by_axes=True)[DEF["name"]].items()}
    assert got == want


def test_evaluator_verdict_is_trusted_unless_a_stricter_tolerance_is_asked(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 1, 0.01, rel_err=3e-3)])
    with fb.enable_apply(ds, _cfg(cache)):
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_a"}}
    with pytest.warns(ApplyWarning):
        with fb.enable_apply(ds, _cfg(cache, max_rtol=1e-5)):
            assert dispatch_table() == {}


def test_failed_traces_are_not_candidates(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(
        tmp_path / "ds", ["norm_a", "norm_b"],
        [trace("norm_a", 1, 0.001, status="INCORRECT_NUMERICAL"), trace("norm_b", 1, 0.01)],
    )
    with fb.enable_apply(ds, _cfg(cache)):
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_b"}}


def test_a_suspect_trace_is_never_dispatched_to(tmp_path: Path, cache: Path) -> None:
    """A PASSED trace the supervisor marked suspect (here: its timing disputed by the witness) is
    not a candidate, however fast it claims to be."""
    forged = trace("norm_a", 1, 0.0001)
    forged["evaluation"]["correctness"]["extra"] = {"suspect": True, "flags": ["timing_disputed"]}
    ds = write_dataset(tmp_path / "ds", ["norm_a", "norm_b"], [forged, trace("norm_b", 1, 0.01)])
    with fb.enable_apply(ds, _cfg(cache)):
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_b"}}


# ---------------------------------------------------------------------- bad input


def test_shapes_that_violate_the_definition_warn_once_and_fall_back(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 1, 0.01)])
    with fb.enable_apply(ds, _cfg(cache)):
        bad = torch.randn(1, 32, dtype=torch.float16)
        with pytest.warns(ApplyWarning, match="does not match the definition"):
            norm(bad, W[:32], 1e-6)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(3):
                assert norm(bad, W[:32], 1e-6).shape == (1, 32)  # no second warning
        with pytest.warns(ApplyWarning, match="dtype"):
            assert norm(torch.randn(1, 64), W.float(), 1e-6).shape == (1, 64)

        @apply(DEF["name"])
        def loose(*args):
            return len(args)

        with pytest.warns(ApplyWarning, match="called with 5 arguments"):
            assert loose(X(1), W, 1e-6, None, None) == 5
        assert stats()[DEF["name"]] == {"fallback": 6}


def test_a_dataset_without_traces_warns_and_falls_back(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [])
    with pytest.warns(ApplyWarning, match="no PASSED traces"):
        rt = fb.enable_apply(ds, _cfg(cache))
    with rt:
        assert torch.equal(norm(X(1).zero_(), W, 1e-6), torch.zeros(1, 64, dtype=torch.float16))


def test_a_missing_dataset_is_an_error_at_enable(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fb.enable_apply(tmp_path / "nope")


def test_a_solution_that_raises_is_disabled_with_one_warning(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_raises"], [trace("norm_raises", 2, 0.01), trace("norm_raises", 4, 0.01)])
    with fb.enable_apply(ds, _cfg(cache)):
        assert norm(X(2), W, 1e-6).shape == (2, 64)  # works for batch 2
        with pytest.warns(ApplyWarning, match="kernel bug for batch >= 4"):
            x = X(4)
            assert torch.allclose(norm(x, W, 1e-6).float(), fallback_math(x, W, 1e-6).float())
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            norm(X(4), W, 1e-6)
            norm(X(2), W, 1e-6)  # disabled for the whole process, every key
        assert stats(by_axes=True)[DEF["name"]] == {(2,): {"norm_raises": 1, "fallback": 1}, (4,): {"fallback": 2}}


def test_a_solution_that_does_not_build_is_skipped_for_the_next_best(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_broken", "norm_a"], [trace("norm_broken", 1, 0.001), trace("norm_a", 1, 0.01)])
    with pytest.warns(ApplyWarning, match="norm_broken"):
        rt = fb.enable_apply(ds, _cfg(cache))
    with rt:
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_a"}}
        norm(X(1), W, 1e-6)
        assert stats()[DEF["name"]] == {"norm_a": 1}


def test_unknown_definition_falls_back(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 1, 0.01)])

    @apply("not_in_the_dataset")
    def other(x):
        return x + 1

    with fb.enable_apply(ds, _cfg(cache)):
        with pytest.warns(ApplyWarning, match="not_in_the_dataset"):
            assert other(1) == 2


def test_enable_apply_nests_and_restores(tmp_path: Path, cache: Path) -> None:
    a = write_dataset(tmp_path / "a", ["norm_a"], [trace("norm_a", 1, 0.01)])
    b = write_dataset(tmp_path / "b", ["norm_b"], [trace("norm_b", 1, 0.01)])
    with fb.enable_apply(a, _cfg(cache)):
        with fb.enable_apply(b, _cfg(cache)):
            assert dispatch_table() == {DEF["name"]: {(1,): "norm_b"}}
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_a"}}


def test_seed_example_04_step_5_runs_as_written(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed's deploy.py on a bundle with no traces: every call is the fallback, with a warning."""
    from flashinfer_bench.data import Definition, TraceSet

    d = Definition.model_validate(
        {**DEF, "name": "fused_add_rmsnorm_d4096", "axes": {"batch": {"type": "var"}, "hidden": {"type": "const", "value": 4096}},
         "inputs": {"input": {"shape": ["batch", "hidden"], "dtype": "float16"},
                    "residual": {"shape": ["batch", "hidden"], "dtype": "float16"},
                    "weight": {"shape": ["hidden"], "dtype": "float16"}, "eps": {"shape": None, "dtype": "float32"}},
         "outputs": {"out": {"shape": ["batch", "hidden"], "dtype": "float16"},
                     "residual_out": {"shape": ["batch", "hidden"], "dtype": "float16"}},
         "reference": "import torch\n\ndef run(input, residual, weight, eps):\n    return input, residual\n"}
    )
    ts = TraceSet()
    ts.add_definition(d)
    ts.save(tmp_path / "custom_kernels.json")
    monkeypatch.chdir(tmp_path)
    code = textwrap.dedent(
        """
        import torch
        from flashinfer_bench import enable_apply, apply, TraceSet

        trace_set = TraceSet.load("custom_kernels.json")
        enable_apply(trace_set)

        @apply("fused_add_rmsnorm_d4096")
        def fused_add_rmsnorm(input, residual, weight, eps):
            # Fallback (only used if no solution matches)
            hidden_states = input + residual
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            normed = hidden_states * torch.rsqrt(variance + eps) * weight
            return normed, hidden_states

        x, res, w = torch.randn(2, 4096).half(), torch.randn(2, 4096).half(), torch.ones(4096).half()
        out, updated_residual = fused_add_rmsnorm(x, res, w, 1e-6)
        """
    )
    ns: dict = {}
    with pytest.warns(ApplyWarning, match="no PASSED traces"):
        exec(compile(code, "deploy.py", "exec"), ns)  # noqa: S102
    assert ns["out"].shape == (2, 4096) and torch.equal(ns["updated_residual"], ns["x"] + ns["res"])


def test_fib_enable_apply_activates_at_the_first_decorated_call(tmp_path: Path, cache: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 1, 0.01)])
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(
        f"""
        import sys, torch
        sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
        from apply.helpers import fallback_math
        from flashinfer_bench import apply
        from flashinfer_bench.apply import stats

        @apply("toy_rmsnorm_h64")
        def norm(x, weight, eps):
            return fallback_math(x, weight, eps)

        norm(torch.randn(1, 64).half(), torch.ones(64).half(), 1e-6)
        print(stats())
        """
    ))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FIB_", "FLASHINFER_BENCH_"))}
    env.update(FIB_ENABLE_APPLY="1", FIB_DATASET_PATH=str(ds), FIB_CACHE_PATH=str(cache))
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "{'toy_rmsnorm_h64': {'norm_a': 1}}" in r.stdout


def test_an_unusable_artifact_cache_warns_and_falls_back(tmp_path: Path) -> None:
    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 1, 0.01)])
    blocker = tmp_path / "cache-is-a-file"
    blocker.write_text("not a directory")
    with pytest.warns(ApplyWarning) as got:
        rt = fb.enable_apply(ds, ApplyConfig(cache_dir=blocker / "sub"))
    messages = [str(w.message) for w in got]
    assert any("could not be built" in m for m in messages)
    assert any("every measured solution failed to build" in m for m in messages)
    with rt:
        assert norm(X(1), W, 1e-6).shape == (1, 64)
        assert stats() == {DEF["name"]: {"fallback": 1}}


def test_tracing_and_apply_together(tmp_path: Path, cache: Path) -> None:
    """A traced program that also applies: the call is recorded and routed."""
    import json

    ds = write_dataset(tmp_path / "ds", ["norm_a"], [trace("norm_a", 2, 0.01)])
    with fb.enable_tracing(dataset_dir=ds), fb.enable_apply(ds, _cfg(cache)):
        for b in (2, 2, 3):
            norm(X(b), W, 1e-6)
        assert stats(by_axes=True)[DEF["name"]] == {(2,): {"norm_a": 2}, (3,): {"norm_a": 1}}
    lines = (ds / "workloads" / "rmsnorm" / f"{DEF['name']}.jsonl").read_text().splitlines()
    assert [json.loads(x)["workload"]["axes"] for x in lines] == [{"batch": 2}, {"batch": 3}]


def test_never_routed_to_a_solution_not_faster_than_the_reference(tmp_path: Path, cache: Path) -> None:
    # issue 17: at batch 8 every solution is slower than the reference (1 ms) or inside its noise;
    # its calls, and the calls nearest to it, stay with the fallback
    ds = write_dataset(
        tmp_path / "ds",
        ["norm_a", "norm_b"],
        [trace("norm_a", 2, 0.01), trace("norm_b", 2, 0.02),
         trace("norm_a", 8, 2.0), trace("norm_b", 8, 0.98, spread=(0.9, 1.2))],
    )
    with fb.enable_apply(ds, _cfg(cache, on_miss="nearest", max_log2_distance=1.0)):
        assert dispatch_table() == {DEF["name"]: {(2,): "norm_a", (8,): "fallback"}}
        for b in (2, 8, 9):
            assert norm(X(b), W, 1e-6).shape == (b, 64)
        got = {axes[0]: next(iter(c)) for axes, c in stats(by_axes=True)[DEF["name"]].items()}
    assert got == {2: "norm_a", 8: "fallback", 9: "fallback"}
    # 0.1.2's behaviour on request: any PASSED solution may win
    with fb.enable_apply(ds, _cfg(cache, require_speedup=False)):
        assert dispatch_table()[DEF["name"]][(8,)] == "norm_b"


def test_a_trace_of_an_edited_solution_is_never_dispatched_to(tmp_path: Path, cache: Path) -> None:
    """A trace records the content hash of the solution it measured (`solution_hash`); once the
    solution's file is edited, its old traces are stale: the fastest of them is not what would
    run, so apply() dispatches by the current versions' traces only."""
    from flashinfer_bench.data import Solution

    from .helpers import solution

    def measured(sol: str, latency_ms: float, version: str) -> dict:
        t = trace(sol, 1, latency_ms)
        t["evaluation"]["environment"]["solution_hash"] = version
        return t

    current_a = Solution.model_validate(solution("norm_a")).content_hash()
    current_b = Solution.model_validate(solution("norm_b")).content_hash()
    old = write_dataset(tmp_path / "old", ["norm_a", "norm_b"],
                        [measured("norm_a", 0.0001, "0" * 64), measured("norm_b", 0.01, current_b)])
    with fb.enable_apply(old, _cfg(cache)):
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_b"}}
    same = write_dataset(tmp_path / "same", ["norm_a", "norm_b"],
                         [measured("norm_a", 0.0001, current_a), measured("norm_b", 0.01, current_b)])
    with fb.enable_apply(same, _cfg(cache)):
        assert dispatch_table() == {DEF["name"]: {(1,): "norm_a"}}
