"""Datasets move both ways between this project and the real FlashInfer-Bench 0.1.2.

0.1.2 runs in its own interpreter (FIB_UPSTREAM_PYTHON, default /tmp/fib012-venv/bin/python):
    python3 -m venv /tmp/fib012-venv
    /tmp/fib012-venv/bin/pip install torch==2.13.0
    /tmp/fib012-venv/bin/pip install --no-deps flashinfer-bench==0.1.2
    /tmp/fib012-venv/bin/pip install pydantic safetensors docstring-parser numpy
One subprocess does both directions (importing torch there dominates the run time).
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from flashinfer_bench.data import TraceSet
from flashinfer_bench.data.validate import validate_dataset

from .samples import traces_of_every_status

UPSTREAM_PY = Path(os.environ.get("FIB_UPSTREAM_PYTHON", "/tmp/fib012-venv/bin/python"))
SCRIPT = Path(__file__).with_name("upstream_fib.py")

pytestmark = pytest.mark.skipif(
    not UPSTREAM_PY.exists(),
    reason=f"FlashInfer-Bench 0.1.2 interpreter not found at {UPSTREAM_PY} (set FIB_UPSTREAM_PYTHON; "
    "see this module's docstring for the venv recipe)",
)


def _norm(v: Any) -> Any:
    """JSON values compared across implementations: NaN/inf as strings, ints as floats."""
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, str) and v.lower() in ("nan", "inf", "infinity"):
        return "NaN" if v.lower() == "nan" else "Infinity"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "NaN" if math.isnan(v) else "Infinity"
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def _pick(obj: Dict[str, Any], keys: List[str]) -> Dict[str, Any]:
    return {k: obj.get(k) for k in keys}


def core_definition(d: Dict[str, Any]) -> Dict[str, Any]:
    out = _pick(d, ["name", "op_type", "reference", "tags", "description", "constraints"])
    out["axes"] = {k: _pick(a, ["type", "value", "description"]) for k, a in d["axes"].items()}
    for group in ("inputs", "outputs"):
        out[group] = [(k, _pick(t, ["shape", "dtype", "description"])) for k, t in d[group].items()]  # ordered
    return _norm(out)


def core_solution(s: Dict[str, Any]) -> Dict[str, Any]:
    out = _pick(s, ["name", "definition", "author", "description"])
    out["spec"] = _pick(s["spec"], ["language", "target_hardware", "entry_point", "dependencies",
                                    "destination_passing_style", "binding"])
    out["sources"] = [_pick(x, ["path", "content"]) for x in s["sources"]]
    return _norm(out)


def core_workload(w: Dict[str, Any]) -> Dict[str, Any]:
    return _norm({
        "uuid": w["uuid"],
        "axes": w["axes"],
        "inputs": {k: _pick(i, ["type", "value", "path", "tensor_key"]) for k, i in w["inputs"].items()},
    })


def core_trace(t: Dict[str, Any]) -> Dict[str, Any]:
    ev = t.get("evaluation")
    out = {"definition": t["definition"], "solution": t.get("solution"), "workload": core_workload(t["workload"])}
    if ev is not None:
        out["evaluation"] = _norm({
            **_pick(ev, ["status", "timestamp", "log"]),
            "environment": _pick(ev["environment"], ["hardware", "libs"]),
            "correctness": ev.get("correctness") and _pick(ev["correctness"], ["max_relative_error", "max_absolute_error", "extra"]),
            "performance": ev.get("performance") and _pick(ev["performance"], ["latency_ms", "reference_latency_ms", "speedup_factor"]),
        })
    return out


def core_set(dump: Dict[str, Any]) -> Dict[str, Any]:
    """Everything both implementations must agree on, from a dump of either."""
    return {
        "definitions": {n: core_definition(d) for n, d in sorted(dump["definitions"].items())},
        "solutions": {n: core_solution(s) for n, s in sorted(dump["solutions"].items())},
        "workloads": sorted((core_trace(w) for w in dump["workloads"]), key=json.dumps),
        "traces": sorted((core_trace(t) for t in dump["traces"]), key=json.dumps),
    }


def our_dump(ts: TraceSet) -> Dict[str, Any]:
    d = ts.to_dict()
    return {
        "definitions": {x["name"]: x for x in d["definitions"]},
        "solutions": {x["name"]: x for x in d["solutions"]},
        "workloads": d["workloads"],
        "traces": d["traces"],
    }


def _with_our_traces(src: Path, dst: Path) -> TraceSet:
    """Load a dataset with our TraceSet, add our traces of every status, write it with to_path."""
    ts = TraceSet.from_path(src)
    assert ts.errors == [], ts.errors
    for dname, wls in ts.workloads.items():
        if not wls:
            continue
        sols = ts.solutions_for(dname)
        for t in traces_of_every_status(dname, wls[0].workload, sols[0].name if sols else "some_solution"):
            ts.add_trace(t)  # in memory: add_traces would write into the source dataset
    ts.to_path(dst)
    return ts


@pytest.fixture(scope="module")
def exchange(anchor_dataset: Path, repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Any]:
    tmp = tmp_path_factory.mktemp("upstream")
    sources = {"anchor": anchor_dataset}
    example = repo_root / "dataset"
    if (example / "definitions").is_dir():
        sources["example"] = example
    ours: Dict[str, TraceSet] = {}
    for name, src in sources.items():
        _with_our_traces(src, tmp / f"ours-{name}")
        ours[name] = TraceSet.from_path(tmp / f"ours-{name}")  # what is on disk, read back by us
    req = {"read": [str(tmp / f"ours-{n}") for n in sources],
           "write": {"from": str(anchor_dataset), "to": str(tmp / "theirs")}}
    r = subprocess.run([str(UPSTREAM_PY), "-I", str(SCRIPT), json.dumps(req)],
                       capture_output=True, text=True, timeout=300, cwd=tmp)
    assert r.returncode == 0, f"FlashInfer-Bench 0.1.2 failed:\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}"
    res = json.loads(r.stdout.split("@@RESULT@@", 1)[1])
    assert res["version"] == "0.1.2" and str(UPSTREAM_PY.parent.parent) in res["module"], res["module"]
    return {"ours": ours, "names": list(sources), "res": res, "theirs": tmp / "theirs"}


def test_upstream_loads_what_we_write_intact(exchange: Dict[str, Any]) -> None:
    for name, dump in zip(exchange["names"], exchange["res"]["read"]):
        ours = exchange["ours"][name]
        assert ours.problems == []
        mine, theirs = core_set(our_dump(ours)), core_set(dump)
        for kind in ("definitions", "solutions", "workloads", "traces"):
            assert len(theirs[kind]) == len(mine[kind]), (name, kind)
            assert theirs[kind] == mine[kind], (name, kind)
        statuses = {t["evaluation"]["status"] for t in theirs["traces"]}
        assert statuses == {"PASSED", "INCORRECT_NUMERICAL", "RUNTIME_ERROR", "COMPILE_ERROR", "TIMEOUT"}
        # our measurements survive in correctness.extra, which upstream keeps
        passed = [t for t in dump["traces"] if t["evaluation"]["status"] == "PASSED"]
        assert passed and all(t["evaluation"]["correctness"]["extra"]["timer"] == "cuda_event" for t in passed)


def test_we_load_and_validate_what_upstream_writes(exchange: Dict[str, Any]) -> None:
    theirs_dir: Path = exchange["theirs"]
    ts = TraceSet.from_path(theirs_dir)
    assert ts.errors == []
    assert core_set(our_dump(ts)) == core_set(exchange["res"]["wrote"])
    assert len(ts.all_traces()) == 8 and len(ts.workloads["rmsnorm_d4096"]) == 8
    problems = validate_dataset(theirs_dir)
    assert [p for p in problems if p.level == "error"] == []
    assert [p for p in problems if p.level == "warning"] == []
    # upstream wrote axes without "type" (exclude_unset); we read them right
    raw = json.loads((theirs_dir / "definitions/rmsnorm/rmsnorm_d4096.json").read_text())
    d = ts.definitions["rmsnorm_d4096"]
    assert d.var_axes == ["batch_size"] and d.const_axes == {"hidden_size": 4096}, raw["axes"]
    blob = [w for w in ts.workloads["rmsnorm_d4096"] if w.workload.uuid == "upstream-blob-b2"]
    assert blob and blob[0].workload.inputs["x"].type == "safetensors"


def test_validate_catches_a_broken_upstream_blob(exchange: Dict[str, Any], tmp_path: Path) -> None:
    """The safetensors file upstream wrote is checked for real: shrink the workload, get an error."""
    d = tmp_path / "theirs"
    shutil.copytree(exchange["theirs"], d)
    wl = d / "workloads/rmsnorm/rmsnorm_d4096.jsonl"
    lines = wl.read_text().splitlines()
    i = next(i for i, x in enumerate(lines) if "upstream-blob-b2" in x)
    obj = json.loads(lines[i])
    obj["workload"]["axes"]["batch_size"] = 3
    lines[i] = json.dumps(obj)
    wl.write_text("\n".join(lines) + "\n")
    errs = [str(p) for p in validate_dataset(d) if p.level == "error"]
    assert len(errs) == 1 and errs[0].startswith(f"{wl}:{i + 1}: workload.inputs.x.tensor_key: "), errs
    assert errs[0].endswith("has shape [2, 4096], the workload needs [3, 4096]")
