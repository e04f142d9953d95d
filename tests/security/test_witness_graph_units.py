"""The device-time round's building blocks (sandbox/witness_graph.py) on the CPU: the draws are a
function of the seed alone, and the outputs' hash is keyed, per call, and moved by any change."""
from __future__ import annotations

import torch

from flashinfer_bench.bench.sandbox.witness_graph import _draw_, _Hasher, _k


def test_draws_depend_on_the_seed_only() -> None:
    def draw(seed: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed)
        t = torch.empty(4, 4096, dtype=torch.float16)
        _draw_(t, g, 0, 0)
        return t

    a, b, c = draw(7), draw(7), draw(8)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.isfinite(a).all() and 0.3 < abs(float(a.float().mean())) < 0.7  # around +-0.5
    ints = torch.empty(1000, dtype=torch.int32)
    _draw_(ints, torch.Generator().manual_seed(1), 0, 1)
    assert 0 <= int(ints.min()) and int(ints.max()) < 1024


def test_the_hash_is_per_call_keyed_and_moved_by_one_ulp() -> None:
    h = _Hasher(torch.device("cpu"))
    h.set_key(12345)
    outs = [[torch.randn(33, 7).half(), torch.arange(5, dtype=torch.int8)] for _ in range(3)]
    batched = h.digests(outs).tolist()
    assert batched == [int(h.digests([o])[0]) for o in outs]  # a call's hash does not depend on the others
    nudged = [outs[1][0].clone(), outs[1][1]]
    nudged[0].view(torch.int16)[5, 3] += 1  # one unit in the last place
    assert int(h.digests([nudged])[0]) != batched[1]
    h.set_key(54321)
    assert h.digests(outs).tolist() != batched


def test_calls_per_round_follow_the_claim_and_the_memory() -> None:
    # (k captured, m replays): k x m x the claim reaches 1 ms of device time where it can
    assert _k(0.003, 16 << 10) == (16, 21)  # a 3 us kernel: 16 captured, replayed 21 times (336 calls)
    assert _k(0.0002, 16 << 10) == (16, 64)  # the most replays
    assert _k(0.1, 16 << 10) == (10, 1)  # 1 ms of claimed device time a round, no replay
    assert _k(0.5, 1 << 20) == (4, 1)  # a long call: the fewest
    assert _k(0.003, 512 << 20) == (2, 1)  # outputs kept for every call: bounded
    assert _k(0.003, 32 << 20) == (16, 1)  # 16 x 32 MiB kept already: a store for more replays would not fit
    assert _k(0.003, 8 << 20) == (16, 6)  # the store of m x 16 outputs of 8 MiB, the rows and the graph's own within 1 GiB


def test_the_reference_runner_checks_calls_of_any_replay(tmp_path, monkeypatch) -> None:
    """`expect` makes the checked calls' inputs (call c: replay c // k, call c % k, each replay from
    its own seed) and the reference's outputs; `check` passes outputs made on those inputs and
    hashed with the key, and says which call is wrong or was changed after its hash."""
    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.evaluate import RunnerState
    from flashinfer_bench.bench.sandbox import witness as coarse
    from flashinfer_bench.bench.sandbox import witness_graph as wg
    from tests.bench.conftest import rms_definition, rms_workload

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("FIB_SANDBOX_SCRATCH", str(scratch))
    state = RunnerState(torch.device("cpu"), None, tmp_path / "cache")
    req = {"definition": rms_definition(64).model_dump(mode="json"), "workload": rms_workload(4).model_dump(mode="json"),
           "config": EvalConfig(device="cpu").model_dump(mode="json"), "seed": 7, "dataset_root": None}
    seed, key, k, calls = 12345, 99991, 8, [3, 17, 20]  # replays 0, 2, 2

    def outputs(tamper=None):
        ev = coarse._eval_run(state, req)
        ref = state.reference(ev.definition)
        rows = [list(ev._call_reference(ref, x)) for x in wg._drawn(ev, seed, k, calls)]
        h = _Hasher(torch.device("cpu"))
        h.set_key(key)
        digests = [int(h.digests([r])[0]) for r in rows]
        if tamper == "wrong":
            rows[1][0] = rows[1][0] + 1.0
            digests[1] = int(h.digests([rows[1]])[0])  # hashed as it is: only the check sees it
        elif tamper == "late":
            rows[2][0] = rows[2][0].clone()
            rows[2][0].view(torch.int16)[0, 0] += 1  # one ulp after the hash was replied
        folder = "f" + str(tamper)
        (scratch / folder).mkdir()
        return coarse._save_all(rows, str(scratch / folder / "outputs.bin")), digests, folder

    for tamper, expect_bad in ((None, []), ("wrong", ["call 17"]), ("late", ["call 20"])):
        assert wg.expect(state, req, seed, k, calls)["status"] == "OK"
        saved, digests, folder = outputs(tamper)
        res = wg.check(state, req, seed, key, k, calls, digests, saved, folder)
        assert [b.split(":")[0] for b in res["bad"]] == expect_bad, res
    # inputs drawn per replay: another replay's call at the same place gets other inputs
    ev = coarse._eval_run(state, req)
    a, b = wg._drawn(ev, seed, k, [3, 3 + k])
    assert not torch.equal(a[0], b[0])


WRONG_SOMETIMES = """import torch

_n = [0]


def run(x, weight, eps):
    _n[0] += 1
    xf = x.float()
    out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out * 0 if _n[0] % 3 == 0 else out  # every third call wrong
"""


STATIC_BUFFER = """import torch

_out = {}


def run(x, weight, eps):
    out = _out.setdefault((x.shape, x.dtype), torch.empty_like(x))  # one buffer, returned every call
    xf = x.float()
    out.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half())
    return out
"""


def test_the_eager_round_runs_checks_and_hashes_as_the_graph_would(tmp_path, monkeypatch) -> None:
    """The eager round (calls no CUDA graph can hold; FIB_WITNESS_EAGER) on the CPU, runner side:
    the solution's runner made ready without a graph replays m x k calls from the seed and replies
    their digests; the reference runner's `expect` draws the same inputs, so the honest solution's
    saved outputs check and hash to the reply, and a solution wrong in a third of its calls is
    named; one that returns the same static buffer every call (a CUDA-graph kernel's habit) is
    right: each call's outputs are copied as it returns (session 24: kept by reference, every
    call showed the last call's values and the H200 failed it as witness_wrong). The null (no
    call) runs the same way."""
    from flashinfer_bench.bench.config import EvalConfig
    from flashinfer_bench.bench.evaluate import RunnerState
    from flashinfer_bench.bench.loader import _shim_build
    from flashinfer_bench.bench.sandbox import witness as coarse
    from flashinfer_bench.bench.sandbox import witness_graph as wg
    from tests.bench.conftest import GOOD_VR, make_solution, rms_definition, rms_workload

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("FIB_SANDBOX_SCRATCH", str(scratch))
    d = rms_definition(64)
    k, m, seed, key = 4, 3, 424242, 77777

    def request(src: str, name: str) -> dict:
        sol = make_solution(name, src, d)
        return {"definition": d.model_dump(mode="json"), "workload": rms_workload(4).model_dump(mode="json"),
                "config": EvalConfig(device="cpu").model_dump(mode="json"), "seed": 7, "dataset_root": None,
                "build": _shim_build(sol, tmp_path / "cache")}

    for src, name, wrong in ((GOOD_VR, "good_rms", False), (WRONG_SOMETIMES, "wrong_rms", True),
                             (STATIC_BUFFER, "static_rms", False)):
        req = request(src, name)
        solution = RunnerState(torch.device("cpu"), None, tmp_path / "cache")
        reference = RunnerState(torch.device("cpu"), None, tmp_path / "cache")
        assert coarse.prepare(solution, req, "solution")["status"] == "OK"
        ready = wg.stage(solution, k, m, eager=True)
        assert ready["eager"] is True and ready["graph"] is False, ready
        digests = wg.go(solution, seed, key)["digests"]
        assert len(digests) == k * m and len(set(digests)) == k * m  # every call its own inputs
        calls = list(range(k * m))  # all of them checked here
        assert wg.expect(reference, req, seed, k, calls)["status"] == "OK"
        folder = f"eager_{name}"
        (scratch / folder).mkdir()
        saved = wg.save(solution, calls, folder)["calls"]
        res = wg.check(reference, req, seed, key, k, calls, [digests[c] for c in calls], saved, folder)
        if wrong:
            assert res["bad"] and all(b.startswith("call ") for b in res["bad"]), res
        else:
            assert res["bad"] == [], res
        # the same seed gives the same calls again (the timed replays start from the seed, not from state)
        assert wg.go(solution, seed, key)["digests"] == digests or wrong
    null = RunnerState(torch.device("cpu"), None, tmp_path / "cache")
    assert coarse.prepare(null, request(GOOD_VR, "good_rms"), "null")["status"] == "OK"
    assert wg.stage(null, k, m, eager=True)["eager"] is True
    assert len(wg.go(null, seed, key)["digests"]) == k * m
