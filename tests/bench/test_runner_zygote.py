"""Runners forked from the runner zygote (issue 19): each solution still gets a fresh, fully
confined runner, but without paying torch's import again; a runner that dies is reported as
before, and the zygote being gone only means runners start from scratch again."""
from __future__ import annotations

import os
from pathlib import Path

from flashinfer_bench.bench.client import evaluate_via_worker, shutdown_worker

from .conftest import GOOD_VR, make_solution, rms_workload

PROBE = GOOD_VR + '''
import os
try:
    open("/etc/hostname").read()
    SEEN = "read /etc/hostname"
except OSError as e:
    SEEN = type(e).__name__
print("probe", SEEN, os.getpid(), flush=True)
'''

DIES = "import os\n\ndef run(x, weight, eps):\n    os.kill(os.getpid(), 9)\n"


def test_forked_runners_are_fresh_confined_and_fail_as_before(rms_def, build, cpu_config) -> None:
    wl = rms_workload(8, uuid="zygote_b8")
    seen = []
    for i in range(3):
        sol = make_solution(f"zygote_probe_{i}", PROBE + f"\n# {i}\n", rms_def)
        t = evaluate_via_worker(rms_def, sol, wl, build(sol, rms_def), cpu_config)
        ev = t.evaluation
        assert ev.status.value == "PASSED", ev.log
        env = ev.environment.model_dump()
        assert env["runner_start"] == "zygote"
        assert "landlock" in env["sandbox"] and "seccomp" in env["sandbox"] and "userns" in env["sandbox"]
        line = next(x for x in ev.log.splitlines() if x.startswith("probe"))
        assert "PermissionError" in line  # confined like any runner: no host files
        seen.append(line)
    assert len(set(seen)) == 3 or all(s.endswith(" 2") for s in seen)  # pid 2 of its own pid namespace
    # a solution that kills its runner costs only its own trace; the next one gets a new fork
    sol = make_solution("zygote_dies", DIES, rms_def)
    t = evaluate_via_worker(rms_def, sol, wl, build(sol, rms_def), cpu_config)
    assert t.evaluation.status.value == "RUNTIME_ERROR" and "SIGKILL" in t.evaluation.log, t.evaluation.log
    sol = make_solution("zygote_after", GOOD_VR + "\n# after\n", rms_def)
    t = evaluate_via_worker(rms_def, sol, wl, build(sol, rms_def), cpu_config)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log


def test_without_the_zygote_runners_start_from_scratch(rms_def, build, cpu_config, tmp_path: Path) -> None:
    cfg = cpu_config.model_copy(update={"worker_dir": str(tmp_path / "w")})
    os.environ["FIB_RUNNER_ZYGOTE"] = "0"
    try:
        sol = make_solution("zygote_off", GOOD_VR + "\n# off\n", rms_def)
        t = evaluate_via_worker(rms_def, sol, rms_workload(8, uuid="zygote_off_b8"), build(sol, rms_def), cfg)
    finally:
        del os.environ["FIB_RUNNER_ZYGOTE"]
        shutdown_worker("cpu", cfg)
    assert t.evaluation.status.value == "PASSED", t.evaluation.log
    assert t.evaluation.environment.model_dump()["runner_start"] == "exec"
