"""The design's incremental-run table, each row checked by running the real pipeline twice."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flashinfer_bench.data import TraceSet

from .harness import TORCH_VALUE, definition, run_pipeline, workload_line, write_dataset

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("incremental")
    write_dataset(work)
    r = run_pipeline(work)
    assert r.rc == 0, r.output[-4000:]
    return work, r


def _most_at_once(output: str, rule: str) -> int:
    """How many jobs of `rule` ran at the same time, from Snakemake's job start/finish lines."""
    running, most, current = set(), 0, None
    for line in output.splitlines():
        if re.match(r"^(?:local)?rule (\w+):", line):
            current = line.split()[-1].rstrip(":")
        elif current == rule and line.strip().startswith("jobid:"):
            running.add(line.split(":")[1].strip())
            most = max(most, len(running))
        m = re.match(rf"^Finished jobid: (\d+) \(Rule: {rule}\)", line)
        if m:
            running.discard(m.group(1))
    return most


def _fresh(tmp_path, first_run):
    """The first run's workdir: the tests below run in file order, each changing one thing after
    the previous one settled (one pipeline run per row of the table keeps the suite fast)."""
    work, _ = first_run
    return work


def test_first_run_benchmarks_everything(first_run):
    work, r = first_run
    assert r.count("compile") == 2
    assert r.count("benchmark") == 6
    ts = TraceSet.from_path(work / "dataset")
    traces = ts.traces_for("rms_h256")
    assert len(traces) == 6
    assert {t.evaluation.status.value for t in traces} == {"PASSED"}, [t.evaluation.log for t in traces]
    assert (work / "results/report/summary.txt").exists()
    assert (work / "results/report/index.html").exists()


def test_cpu_benchmark_jobs_run_one_at_a_time(first_run):
    """The CPU has one worker: a second benchmark job would only hold a core while it waits."""
    _, r = first_run
    assert _most_at_once(r.output, "benchmark") == 1, r.output[-3000:]
    assert _most_at_once(r.output, "compile") == 2  # the other jobs still use both cores


def test_noop_runs_nothing(tmp_path, first_run):
    work = _fresh(tmp_path, first_run)
    r = run_pipeline(work)
    assert r.rc == 0, r.output[-3000:]
    assert "Nothing to be done" in r.output, r.output[-3000:]
    # moving the dataset directory re-benchmarks nothing either (params hold dataset-relative paths)
    import shutil

    moved = work / "dataset_moved"
    shutil.copytree(work / "dataset", moved)
    r = run_pipeline(work, config={"dataset": str(moved)})
    assert r.rc == 0 and r.count("benchmark") == 0 and r.count("compile") == 0, r.output[-3000:]


def _edit_solution(work: Path, name: str, **changes):
    f = next((work / "dataset/solutions").rglob(f"{name}.json"))
    obj = json.loads(f.read_text())
    for k, v in changes.items():
        if k == "source":
            obj["sources"][0]["content"] = v
        else:
            obj[k] = v
    f.write_text(json.dumps(obj, indent=2))


def test_source_edit_reruns_only_that_solution(tmp_path, first_run):
    work = _fresh(tmp_path, first_run)
    _edit_solution(work, "torch_value", source=TORCH_VALUE + "\n# faster now\n")
    # until the pipeline runs again, the edited solution's traces measured its old version
    before = TraceSet.from_path(work / "dataset")
    assert {t.solution for t in before.all_traces() if before.is_stale(t)} == {"torch_value"}
    r = run_pipeline(work)
    assert r.rc == 0, r.output[-3000:]
    assert [j["solution"] for j in r.ran("compile")] == ["torch_value"]
    assert {j["solution"] for j in r.ran("benchmark")} == {"torch_value"}
    assert r.count("benchmark") == 3
    # every trace names the version it measured (the thin client's door: the build's hash)
    after = TraceSet.from_path(work / "dataset")
    for t in after.all_traces():
        assert t.evaluation.environment.model_dump().get("solution_hash") == after.get_solution(t.solution).content_hash()


def test_description_edit_reruns_no_benchmark(tmp_path, first_run):
    work = _fresh(tmp_path, first_run)
    _edit_solution(work, "torch_value", description="a new description", author="someone-else")
    r = run_pipeline(work)
    assert r.rc == 0, r.output[-3000:]
    assert r.count("benchmark") == 0
    assert r.count("compile") == 0


def test_appended_workload_runs_only_its_jobs(tmp_path, first_run):
    work = _fresh(tmp_path, first_run)
    with open(work / "dataset/workloads/rmsnorm/rms_h256.jsonl", "a") as f:
        f.write(workload_line("rms_h256", 64))
    r = run_pipeline(work)
    assert r.rc == 0, r.output[-3000:]
    assert sorted((j["solution"], j["uuid"]) for j in r.ran("benchmark")) == [
        ("torch_dps", "rms_h256_b64"), ("torch_value", "rms_h256_b64")]
    assert r.count("compile") == 0
    ts = TraceSet.from_path(work / "dataset")
    assert len({(t.solution, t.workload.uuid) for t in ts.traces_for("rms_h256")}) == 8


def test_reference_edit_reruns_the_definition(tmp_path, first_run):
    work = _fresh(tmp_path, first_run)
    f = work / "dataset/definitions/rmsnorm/rms_h256.json"
    d = definition()
    d["reference"] = d["reference"].replace("mean(-1", "mean(dim=-1")
    f.write_text(json.dumps(d, indent=2))
    r = run_pipeline(work)
    assert r.rc == 0, r.output[-3000:]
    assert r.count("benchmark") == 8  # every workload of the definition, the appended one included


def test_evaluation_setting_reruns_benchmarks(tmp_path, first_run):
    work = _fresh(tmp_path, first_run)
    r = run_pipeline(work, config={"cpu": {"evaluation": {"warmup_runs": 1, "iterations": 4, "num_trials": 1, "max_time_s": 0.05, "timeout_s": 60}}})
    assert r.rc == 0, r.output[-3000:]
    assert r.count("benchmark") == 8
    assert r.count("compile") == 0
    # a per-definition override touches only that definition's jobs (here: all of them, one definition)
    r = run_pipeline(work, config={"cpu": {"evaluation": {"warmup_runs": 1, "iterations": 4, "num_trials": 1, "max_time_s": 0.05, "timeout_s": 60}},
                                   "definition_evaluation": {"other_definition": {"rtol": 0.5}}})
    assert r.count("benchmark") == 0
