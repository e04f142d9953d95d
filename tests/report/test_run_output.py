"""What a run leaves and prints: no lock files in traces/, and the summary `run` ends with."""
from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from flashinfer_bench.atomic import file_lock
from flashinfer_bench.data import TraceSet

from . import dataset as ds


def _no_locks(root: Path) -> list:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.lock"))


def test_aggregating_traces_leaves_no_lock_file(tmp_path):
    """The aggregate job merges a run's traces into traces/<op>/<definition>.jsonl under a lock;
    the lock file goes away with the lock (it used to stay: `rmsnorm_h4096.jsonl.lock`)."""
    from flashinfer_bench.pipeline.jobs import aggregate_job

    root = tmp_path / "dataset"
    ds.build().to_path(root)
    new = [t for t in TraceSet.from_path(root).traces_for("rmsnorm_h4096")][:3]
    files = []
    for i, t in enumerate(new):
        f = tmp_path / f"t{i}.json"
        f.write_text(t.model_dump_json())
        files.append(str(f))
    aggregate_job("rmsnorm_h4096", files, str(root), str(tmp_path / "agg.jsonl"), save_results=True, op_type="rmsnorm")
    aggregate_job("rmsnorm_h4096", files, str(root), str(tmp_path / "agg.jsonl"), save_results=True, op_type="rmsnorm")
    assert (root / "traces/rmsnorm/rmsnorm_h4096.jsonl").exists()
    assert _no_locks(root) == []


def _count(path: str, lock: str, n: int) -> None:
    for _ in range(n):
        with file_lock(lock):
            v = int(Path(path).read_text() or "0")
            Path(path).write_text(str(v + 1))


def test_file_lock_excludes_other_processes_and_removes_itself(tmp_path):
    counter = tmp_path / "n"
    counter.write_text("0")
    lock = str(tmp_path / "x.jsonl.lock")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_count, args=(str(counter), lock, 150)) for _ in range(3)]
    for p in procs:
        p.start()
    _count(str(counter), lock, 150)
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert counter.read_text() == str(4 * 150)  # no lost update: the lock excluded every other holder
    assert not os.path.exists(lock)


def test_plain_summary_without_pandas_reads_like_the_report():
    """The pipeline's summary when the report extra is not installed (pipeline/summary.py): the
    same units and names as the report, never 0.00x, at most 100 columns."""
    from flashinfer_bench.pipeline.summary import plain_summary

    from . import dataset as ds

    ts = ds.wide()
    text = plain_summary(ts, [{"solution": "s", "workload": "w", "reason": "x" * 300}], ["p" * 300])
    assert "latency (us)" in text and "0.0049x" in text and "0.00x" not in text
    flat = "".join(text.split())  # a long list of axes wraps after its commas
    assert "batch_size=64,num_pages=300000,len_indptr=65,num_kv_indices=16384" in flat and "uuid-64-300000" not in text
    assert max(len(line) for line in text.splitlines()) <= 100
