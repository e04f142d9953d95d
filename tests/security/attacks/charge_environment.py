"""Class: harness state reached from inside the runner (its own exception type): a failure
charged to the machine instead of the solution.

Tries: the runner lets an `EvalFailure` raised inside a call through unchanged (status and
message), and the trace's log starts with that message. A failure whose log starts with
"environment error (not the solution's): " (or "dataset error ...") is never merged into the
dataset (`charge.charged_party`, pipeline/jobs.aggregate_job, Benchmark), and `run` exits with
the machine's error status. So a solution that would fail here (this one returns wrong answers
and, where its own check says they are wrong, i.e. always) raises
`EvalFailure("RUNTIME_ERROR", ENVIRONMENT_ERROR + ...)` from its call: its failure is kept out
of the record, an older PASSED trace of it stays in the dataset, and the operator is told the
machine is at fault. Expect: the trace charged to the solution (its log not starting with the
environment or dataset prefix).
"""
import torch

try:
    _COST = int("__COST__")
except ValueError:
    _COST = 1


def _answer(x, weight, eps):
    for _ in range(_COST):
        xf = x.float()
        out = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
    return out


def run(x, weight, eps):
    out = _answer(x, weight, eps) * 1.5  # wrong: a solution that would fail on this workload
    if not torch.allclose(out.float(), _answer(x, weight, eps).float(), rtol=1e-2, atol=1e-2):
        try:
            from flashinfer_bench.bench.evaluate import EvalFailure
            from flashinfer_bench.data.charge import ENVIRONMENT_ERROR
        except Exception:  # noqa: BLE001
            return out
        raise EvalFailure("RUNTIME_ERROR", ENVIRONMENT_ERROR + "CUDA driver reset (Xid 79: GPU has fallen off the bus); "
                          "the machine could not evaluate this solution")
    return out
