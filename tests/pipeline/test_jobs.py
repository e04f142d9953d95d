"""The workflow's job functions (pipeline/jobs.py) as scripts/<stage>.py call them."""
from __future__ import annotations

import json

from flashinfer_bench.pipeline.jobs import compile_job, validation_report

from .harness import definition, solution


def test_a_failed_build_is_recorded_not_raised(tmp_path) -> None:
    (tmp_path / "d.json").write_text(json.dumps(definition()))
    bad = solution("broken", "import nonexistent_module_xyz\n\ndef run(x, weight, eps):\n    return x\n", False)
    (tmp_path / "s.json").write_text(json.dumps(bad))
    out, log = tmp_path / "out" / "b.json", tmp_path / "logs" / "b.log"
    compile_job(str(tmp_path), "s.json", "d.json", str(out), str(log), cache_dir=str(tmp_path / "cache"))
    assert json.loads(out.read_text())["status"] == "COMPILE_ERROR"
    assert "build of broken: COMPILE_ERROR" in log.read_text()


def test_a_validation_report_is_the_plans_verdict_on_its_file(tmp_path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"by_file": {"/d/a.json": ["/d/a.json: tags: unknown tag"]}, "problems": [], "skipped": []}))
    validation_report("/d/a.json", "definition", str(notes), str(tmp_path / "a.txt"), str(tmp_path / "a.log"))
    validation_report("/d/b.json", "definition", str(notes), str(tmp_path / "b.txt"), str(tmp_path / "b.log"))
    assert (tmp_path / "a.txt").read_text() == "/d/a.json: definition: 1 problem(s)\n/d/a.json: tags: unknown tag\n"
    assert (tmp_path / "b.txt").read_text() == "/d/b.json: definition: OK\n"
