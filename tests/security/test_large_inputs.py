"""Red team, part four: a forged latency on a workload whose inputs are large relative to its work
(issue 15): a big constant weight and a small activation, as a decode step's GEMM or the fp8 MoE's
expert weights.

The supervisor's witness re-times a PASSED solution's calls from outside its process and subtracts
its own share of a call (handing over the inputs, saving the outputs). That share grows with the
inputs' bytes; when it dwarfed the claimed latency the witness gave no timing verdict
(`witness_unresolved`: an honest fp8 MoE call of 0.4 ms beside ~16 ms of loading its weights had
been failed), and over its copy limit it did not run (`unwitnessed`). Either way a solution that
rewrote its statistics there was PASSED with a fake 100x speedup, only flagged. Now the verdict
must be given whatever the inputs' size: the attack is not PASSED with a gain, and the honest
solution of the same work is PASSED and judged (no `witness_unresolved`, no `unwitnessed`).
"""
from __future__ import annotations

from typing import Dict, Iterator, Tuple

import pytest

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker
from flashinfer_bench.bench.loader import _shim_build
from flashinfer_bench.data import Definition, Solution, Trace, Workload

from tests.bench.conftest import make_solution
from .conftest import ATTACKS, Lab, flags

# (N, K) of the fp32 weight: 16 MiB (the witness had no timing verdict: its share of a call was
# over 5 ms and 5x the claim) and 32 MiB (over its copy limit of 24 MiB a call: not witnessed)
WEIGHTS: Dict[str, Tuple[int, int]] = {"16MiB": (2048, 2048), "32MiB": (4096, 2048)}
HONEST = """import torch


def run(x, w):
    return x @ w.T
"""


@pytest.fixture(scope="module")
def big_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The security lab's worker with the default file-size limit (1 GiB; the lab's 16 MiB is for
    the log-flooding attacks): a round's inputs are one file in the runner's scratch."""
    lab = Lab(tmp_path_factory.mktemp("big-inputs"))
    lab.start(env={"FIB_SANDBOX_FSIZE_MB": "1024"})
    yield lab
    shutdown_worker("cpu", lab.config)
    lab.cleanup()


def matvec_definition(n: int, k: int) -> Definition:
    return Definition.model_validate({
        "name": f"big_weight_matvec_n{n}_k{k}", "op_type": "gemm",
        "axes": {"M": {"type": "var"}, "N": {"type": "const", "value": n}, "K": {"type": "const", "value": k}},
        "inputs": {"x": {"shape": ["M", "K"], "dtype": "float32"}, "w": {"shape": ["N", "K"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["M", "N"], "dtype": "float32"}},
        "reference": "import torch\n\n\ndef run(x, w):\n    return x @ w.T\n",
    })


def matvec_workload(d: Definition) -> Workload:
    return Workload(axes={"M": 1}, inputs={"x": {"type": "random"}, "w": {"type": "random"}}, uuid=f"{d.name}_m1")


def _evaluate(lab: Lab, d: Definition, sol: Solution) -> Trace:
    return evaluate_via_worker(d, sol, matvec_workload(d), _shim_build(sol, lab.cache), lab.config, dataset_root=lab.dataset)


def _speedup(t: Trace) -> float:
    p = t.evaluation.performance
    return p.speedup_factor if p is not None else 0.0


@pytest.mark.parametrize("size", sorted(WEIGHTS))
def test_a_forged_latency_beside_big_weights_is_disputed(size: str, big_lab: Lab) -> None:
    lab = big_lab
    d = matvec_definition(*WEIGHTS[size])
    honest = _evaluate(lab, d, make_solution(f"honest_matvec_{size}", HONEST, d))
    ev = honest.evaluation
    assert ev.status.value == "PASSED", ev.log[-1500:]
    witness = (ev.correctness.extra or {}).get("witness")
    assert witness is not None and not flags(honest) & {"witness_unresolved", "unwitnessed"}, (sorted(flags(honest)), witness)

    attack = make_solution(f"attack_big_weights_{size}", (ATTACKS / "big_weights_rewrite_stats.py").read_text(), d)
    t = _evaluate(lab, d, attack)
    ev = t.evaluation
    # its honest work costs as much as the honest solution's: any PASSED with a gain is the forgery
    assert ev.status.value != "PASSED", (size, _speedup(t), _speedup(honest), sorted(flags(t)), ev.log[-1500:])
    assert "timing_disputed" in ev.log or "timing_disputed" in flags(t), (size, ev.status, sorted(flags(t)), ev.log[-1500:])
