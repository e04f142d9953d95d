#!/usr/bin/env python3
"""Check the example dataset's solutions against their definitions' references.

Not a test suite: it prints one table row per (solution, size) and exits 1 if anything failed.

On a machine without a GPU (the default, --device cpu):
  * python and triton solutions run on random fp16 CPU tensors, Triton kernels through the
    interpreter (TRITON_INTERPRET=1, set here before triton is imported); outputs are compared
    with the definition's reference computed in fp32 and cast to the output dtype:
    PASS when every element has |out - ref| <= atol + rtol * |ref| (atol = rtol = 1e-2, the
    FlashInfer-Bench defaults), and no NaN appears (outputs are poisoned with NaN first);
  * cuda solutions with binding "tvm-ffi" are compiled for sm_90 with tvm_ffi.cpp.build
    (CUDA_HOME is found from nvcc, TVM_FFI_CUDA_ARCH_LIST=9.0): "it compiles" is all that can
    be checked without a GPU;
  * cuda solutions with binding "torch" are compiled with `nvcc -c -std=c++17` against torch's
    headers (the CPU torch wheel refuses cpp_extension CUDA builds; it also lacks the generated
    header c10/cuda/impl/cuda_cmake_macros.h, for which a one-line stand-in is written to the
    scratch folder);
  * tilelang solutions are compiled for sm_90 when tilelang imports (in this Python, or in the
    one given by --tilelang-python, since tilelang pins an older apache-tvm-ffi); otherwise the
    row says SKIP.

With --device cuda the same checks run on the GPU (CUDA solutions are built for the visible GPU,
loaded and run), and --bench adds GPU timings: the median of CUDA-event timings of single
calls, each after an L2 flush, with the bytes moved (inputs + outputs) turned into GB/s and the
share of a device-to-device copy of the same size.

    python scripts/check_example_solutions.py                      # CPU
    python scripts/check_example_solutions.py --device cuda --bench
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ATOL = RTOL = 1e-2
DTYPES = {"float16": "float16", "bfloat16": "bfloat16", "float32": "float32",
          "int32": "int32", "int64": "int64"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dataset", type=Path, default=REPO / "dataset")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--sizes", default="1,8,32",
                   help="values of the var axis for rmsnorm-like definitions (default 1,8,32)")
    p.add_argument("--gemm-sizes", default="8",
                   help="values of M for gemm definitions (default 8: the interpreter is slow)")
    p.add_argument("--solutions", default="", help="comma-separated names; default all")
    p.add_argument("--no-compile", action="store_true", help="skip CUDA and TileLang builds")
    p.add_argument("--tilelang-python", default="",
                   help="a Python with tilelang installed, used when this one has none")
    p.add_argument("--bench", action="store_true", help="also time on the GPU (--device cuda)")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="scratch folder for builds (default: a temporary folder)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


ARGS = parse_args()
if ARGS.device == "cpu":
    # must happen before anything imports triton
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402


@dataclass
class Row:
    solution: str
    kind: str
    check: str
    size: str = ""
    status: str = ""
    max_abs: float | None = None
    max_rel: float | None = None
    seconds: float | None = None
    note: str = ""
    extra: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------- dataset


def load_dataset(root: Path):
    definitions = {}
    for path in sorted((root / "definitions").rglob("*.json")):
        d = json.loads(path.read_text())
        definitions[d["name"]] = d
    workloads = {}
    for path in sorted((root / "workloads").rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                w = json.loads(line)
                workloads.setdefault(w["definition"], []).append(w["workload"])
    solutions = []
    for path in sorted((root / "solutions").rglob("*.json")):
        solutions.append(json.loads(path.read_text()))
    return definitions, workloads, solutions


def var_axis(defn) -> str:
    names = [n for n, a in defn["axes"].items() if a["type"] == "var"]
    assert len(names) == 1, f"{defn['name']}: expected one var axis, got {names}"
    return names[0]


def scalar_values(defn, workloads) -> dict:
    """Scalar inputs (shape null) take their value from the definition's first workload."""
    values = {}
    for w in workloads.get(defn["name"], [])[:1]:
        for name, spec in w["inputs"].items():
            if spec.get("type") == "scalar":
                values[name] = spec["value"]
    return values


def make_inputs(defn, size: int, scalars: dict, device: str, seed: int):
    axes = {n: a["value"] for n, a in defn["axes"].items() if a["type"] == "const"}
    axes[var_axis(defn)] = size
    gen = torch.Generator(device="cpu").manual_seed(seed)
    inputs = []
    for name, spec in defn["inputs"].items():
        if spec["shape"] is None:
            inputs.append(float(scalars.get(name, 1e-6)))
            continue
        shape = [axes[a] for a in spec["shape"]]
        dtype = getattr(torch, DTYPES[spec["dtype"]])
        t = torch.randn(shape, generator=gen, dtype=torch.float32).to(dtype)
        inputs.append(t.to(device))
    return inputs, axes


def output_specs(defn, axes):
    return [([axes[a] for a in spec["shape"]], getattr(torch, DTYPES[spec["dtype"]]))
            for spec in defn["outputs"].values()]


def reference(defn, inputs, axes):
    """The definition's reference on fp32 copies of the inputs, cast to the output dtypes."""
    ns: dict = {}
    exec(compile(defn["reference"], f"<reference {defn['name']}>", "exec"), ns)
    args = [x.detach().to("cpu", torch.float32) if isinstance(x, torch.Tensor)
            and x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        out = ns["run"](*args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [o.to(dtype) for o, (_, dtype) in zip(outs, output_specs(defn, axes))]


def compare(defn, axes, outs, refs):
    """Return (ok, max_abs, max_rel, note)."""
    specs = output_specs(defn, axes)
    if len(outs) != len(specs):
        return False, None, None, f"{len(outs)} outputs, expected {len(specs)}"
    max_abs = max_rel = 0.0
    ok = True
    notes = []
    for name, o, r, (shape, dtype) in zip(defn["outputs"], outs, refs, specs):
        if not isinstance(o, torch.Tensor):
            return False, None, None, f"{name}: not a tensor"
        if list(o.shape) != shape:
            return False, None, None, f"{name}: shape {list(o.shape)} != {shape}"
        if o.dtype != dtype:
            return False, None, None, f"{name}: dtype {o.dtype} != {dtype}"
        of = o.detach().to("cpu", torch.float32)
        rf = r.to(torch.float32)
        diff = (of - rf).abs()
        if not torch.isfinite(of).all():
            ok = False
            notes.append(f"{name}: non-finite values")
        max_abs = max(max_abs, float(diff.max()))
        max_rel = max(max_rel, float((diff / (rf.abs() + 1e-8)).max()))
        bad = ~(diff <= ATOL + RTOL * rf.abs())
        if bad.any():
            ok = False
            notes.append(f"{name}: {int(bad.sum())} elements out of tolerance")
    return ok, max_abs, max_rel, "; ".join(notes)


# ----------------------------------------------------------------------------- loading


def write_sources(sol, where: Path) -> Path:
    pkg = re.sub(r"[^0-9a-zA-Z_]", "_", f"example_{sol['name']}")
    pkg_dir = where / pkg
    shutil.rmtree(pkg_dir, ignore_errors=True)
    for src in sol["sources"]:
        dest = pkg_dir / src["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(src["content"])
    return pkg_dir


def load_python_entry(sol, where: Path):
    """Import the entry function of a python/triton/tilelang solution, like the builders do."""
    pkg_dir = write_sources(sol, where)
    file, symbol = sol["spec"]["entry_point"].split("::")
    module_name = pkg_dir.name + "." + file[:-3].replace("/", ".")
    if str(where) not in sys.path:
        sys.path.insert(0, str(where))
    module = importlib.import_module(module_name)
    return getattr(module, symbol), module


def cuda_home() -> str:
    """The CUDA prefix: $CUDA_HOME, or the folder holding the real nvcc (it may sit behind a
    wrapper script, as /usr/local/bin/nvcc does on the project's machines)."""
    candidates = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""),
                  "/usr/local/cuda"]
    nvcc = shutil.which("nvcc")
    if nvcc:
        candidates.append(str(Path(os.path.realpath(nvcc)).parent.parent))
    for c in candidates:
        if c and (Path(c) / "bin" / "nvcc").is_file() and any(
                (Path(c) / lib / "libcudart.so").exists() for lib in ("lib64", "lib")):
            return c
    raise RuntimeError("no CUDA toolkit found (set CUDA_HOME)")


def build_tvm_ffi(sol, where: Path) -> str:
    """tvm_ffi.cpp.build of the solution's sources (CUDA_HOME and, without a GPU,
    TVM_FFI_CUDA_ARCH_LIST are set once in main())."""
    import tvm_ffi.cpp

    pkg_dir = write_sources(sol, where)
    cuda_files = [str(pkg_dir / s["path"]) for s in sol["sources"] if s["path"].endswith(".cu")]
    cpp_files = [str(pkg_dir / s["path"]) for s in sol["sources"]
                 if s["path"].endswith((".cpp", ".cc", ".cxx"))]
    return tvm_ffi.cpp.build(name=pkg_dir.name, cuda_files=cuda_files, cpp_files=cpp_files,
                             extra_include_paths=[str(pkg_dir)],
                             build_directory=str(where / (pkg_dir.name + "_build")))


def compile_torch_binding_cpu(sol, where: Path) -> str:
    """nvcc -c of every .cu/.cpp source against torch's headers; returns a summary."""
    from torch.utils.cpp_extension import include_paths

    pkg_dir = write_sources(sol, where)
    shim = where / "torch_header_shim"
    macros = shim / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    if not macros.exists():
        macros.parent.mkdir(parents=True, exist_ok=True)
        macros.write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
    nvcc = str(Path(cuda_home()) / "bin" / "nvcc")
    includes = [*include_paths(), sysconfig.get_paths()["include"], str(pkg_dir), str(shim)]
    outputs = []
    for src in sol["sources"]:
        if not src["path"].endswith((".cu", ".cpp", ".cc", ".cxx")):
            continue
        obj = pkg_dir / (src["path"] + ".o")
        cmd = [nvcc, "-c", "-std=c++17", "-O2", "-arch=sm_90", "-Xcompiler", "-fPIC",
               f"-DTORCH_EXTENSION_NAME={pkg_dir.name}", "-DTORCH_API_INCLUDE_EXTENSION_H",
               *[f"-I{i}" for i in includes], str(pkg_dir / src["path"]), "-o", str(obj)]
        t0 = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed on {src['path']}:\n{proc.stderr[-4000:]}")
        warnings = len(re.findall(r"warning", proc.stderr))
        outputs.append(f"{obj.name} {obj.stat().st_size // 1024} KiB in {time.time() - t0:.0f} s"
                       + (f" ({warnings} header warnings)" if warnings else ""))
    return "; ".join(outputs)


def load_torch_binding_gpu(sol, where: Path):
    from torch.utils.cpp_extension import load

    pkg_dir = write_sources(sol, where)
    build_dir = where / (pkg_dir.name + "_torch_build")
    build_dir.mkdir(parents=True, exist_ok=True)
    sources = [str(pkg_dir / s["path"]) for s in sol["sources"]
               if s["path"].endswith((".cu", ".cpp", ".cc"))]
    module = load(name=pkg_dir.name, sources=sources, extra_include_paths=[str(pkg_dir)],
                  build_directory=str(build_dir), with_cuda=True, verbose=False)
    return getattr(module, sol["spec"]["entry_point"].split("::")[1])


TILELANG_COMPILE = r"""
import importlib, json, sys, time
sys.path.insert(0, sys.argv[1])
mod = importlib.import_module(sys.argv[2])
t0 = time.time()
kernel = mod.build(int(sys.argv[3]), target={"kind": "cuda", "arch": "sm_90"})
src = kernel.get_kernel_source()
print(json.dumps({"seconds": time.time() - t0, "source_chars": len(src),
                  "vector_loads": src.count("uint4")}))
"""


def compile_tilelang_cpu(sol, where: Path, hidden: int) -> str:
    pkg_dir = write_sources(sol, where)
    file = sol["spec"]["entry_point"].split("::")[0]
    module = pkg_dir.name + "." + file[:-3].replace("/", ".")
    python = sys.executable
    try:
        import tilelang  # noqa: F401
    except ImportError:
        if not ARGS.tilelang_python:
            return "SKIP: tilelang is not installed here (see --tilelang-python)"
        python = ARGS.tilelang_python
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run([python, "-c", TILELANG_COMPILE, str(where), module, str(hidden)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-4000:])
    info = json.loads(proc.stdout.strip().splitlines()[-1])
    return (f"compiled for sm_90 by {python}: {info['source_chars']} chars of CUDA, "
            f"{info['vector_loads']} uint4 (16-byte) accesses")


# ----------------------------------------------------------------------------- running


def call(fn, sol, inputs, out_specs, device):
    if sol["spec"].get("destination_passing_style", True):
        outs = [torch.full(shape, float("nan"), dtype=dtype, device=device)
                for shape, dtype in out_specs]
        fn(*inputs, *outs)
        return outs
    result = fn(*inputs)
    return list(result) if isinstance(result, (tuple, list)) else [result]


def run_numeric(rows, sol, fn, defn, sizes, scalars, device, kind, bench):
    for size in sizes:
        row = Row(sol["name"], kind, "numerics", size=f"{var_axis(defn)}={size}")
        try:
            inputs, axes = make_inputs(defn, size, scalars, device, ARGS.seed + size)
            refs = reference(defn, inputs, axes)
            t0 = time.time()
            outs = call(fn, sol, inputs, output_specs(defn, axes), device)
            if device == "cuda":
                torch.cuda.synchronize()
            row.seconds = time.time() - t0
            ok, row.max_abs, row.max_rel, row.note = compare(defn, axes, outs, refs)
            row.status = "PASS" if ok else "FAIL"
            if ok and bench:
                row.extra = bench_one(fn, sol, inputs, output_specs(defn, axes), defn, axes)
        except Exception as exc:  # report the failure in the table and go on
            row.status = "FAIL"
            row.note = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
            traceback.print_exc(file=sys.stderr)
        rows.append(row)


_copy_cache: dict = {}


def bench_one(fn, sol, inputs, out_specs, defn, axes, samples=100):
    device = "cuda"
    outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in out_specs]
    dps = sol["spec"].get("destination_passing_style", True)

    def once():
        if dps:
            fn(*inputs, *outs)
        else:
            fn(*inputs)

    flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=device)
    for _ in range(3):
        once()
    # keep the GPU busy for a while first so that its clocks are up when sampling starts
    torch.cuda.synchronize()
    t_end = time.time() + 0.3
    while time.time() < t_end:
        flush.zero_()
        torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        flush.zero_()  # evicts L2; keeps the GPU busy while the host enqueues the timed call
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        once()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)  # us
    med = statistics.median(times)
    nbytes = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
    nbytes += sum(o.numel() * o.element_size() for o in outs)
    result = {"us": med, "GB/s": nbytes / med / 1e3}
    if "flops" in defn:
        flops = eval(defn["flops"], {"__builtins__": {}}, dict(axes))  # e.g. "2*M*N*K"
        result["TFLOP/s"] = flops / med / 1e6
    # a device-to-device copy moving the same number of bytes (half read, half written)
    half = nbytes // 2
    if half not in _copy_cache:
        src = torch.empty(half, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        ct = []
        for _ in range(samples):
            flush.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            dst.copy_(src)
            e.record()
            e.synchronize()
            ct.append(s.elapsed_time(e) * 1e3)
        _copy_cache[half] = statistics.median(ct)
    result["copy_us"] = _copy_cache[half]
    result["of_copy"] = _copy_cache[half] / med
    return result


def main():
    definitions, workloads, solutions = load_dataset(ARGS.dataset)
    wanted = {s for s in ARGS.solutions.split(",") if s}
    if wanted:
        solutions = [s for s in solutions if s["name"] in wanted]
    device = ARGS.device
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no GPU visible")
    work = ARGS.work_dir or Path(tempfile.mkdtemp(prefix="check_example_solutions_"))
    work.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in ARGS.sizes.split(",") if s]
    gemm_sizes = [int(s) for s in ARGS.gemm_sizes.split(",") if s]
    # set once, before any build thread starts (threads must not mutate os.environ)
    if not ARGS.no_compile:
        os.environ["CUDA_HOME"] = cuda_home()
        if device == "cpu":
            os.environ["TVM_FFI_CUDA_ARCH_LIST"] = "9.0"  # no GPU to detect the arch from

    rows: list[Row] = []
    pool = ThreadPoolExecutor(max_workers=2)
    pending: list[tuple[Row, Future]] = []

    def background(row: Row, job):
        def timed():
            t0 = time.time()
            note = job()
            return note, time.time() - t0

        pending.append((row, pool.submit(timed)))
        rows.append(row)

    # start the slow CUDA builds first so that they overlap the interpreter runs
    if device == "cpu" and not ARGS.no_compile:
        for sol in solutions:
            spec = sol["spec"]
            lang, binding = spec["language"], spec.get("binding") or "tvm-ffi"
            if lang in ("cuda", "cpp") and binding == "tvm-ffi":
                background(Row(sol["name"], f"{lang}/tvm-ffi", "build sm_90"),
                           lambda sol=sol: "-> " + Path(build_tvm_ffi(sol, work)).name)
            elif lang in ("cuda", "cpp") and binding == "torch":
                background(Row(sol["name"], f"{lang}/torch", "nvcc -c sm_90"),
                           lambda sol=sol: compile_torch_binding_cpu(sol, work))
            elif lang == "tilelang":
                hidden = definitions[sol["definition"]]["axes"].get("hidden_size", {}).get(
                    "value", 4096)
                background(Row(sol["name"], "tilelang", "build sm_90"),
                           lambda sol=sol, h=hidden: compile_tilelang_cpu(sol, work, h))

    for sol in solutions:
        defn = definitions[sol["definition"]]
        spec = sol["spec"]
        lang, binding = spec["language"], spec.get("binding") or "tvm-ffi"
        sz = gemm_sizes if defn["op_type"] == "gemm" else sizes
        scalars = scalar_values(defn, workloads)
        kind = lang if lang in ("python", "triton", "tilelang") else f"{lang}/{binding}"
        try:
            if lang in ("python", "triton"):
                fn, _ = load_python_entry(sol, work)
            elif device == "cpu":
                continue  # compile-only rows were queued above
            elif lang == "tilelang":
                fn, _ = load_python_entry(sol, work)
            elif binding == "tvm-ffi":
                import tvm_ffi

                t0 = time.time()
                lib = build_tvm_ffi(sol, work)
                rows.append(Row(sol["name"], kind, "build", status="PASS",
                                seconds=time.time() - t0, note=Path(lib).name))
                fn = getattr(tvm_ffi.load_module(lib), spec["entry_point"].split("::")[1])
            elif binding == "torch":
                t0 = time.time()
                fn = load_torch_binding_gpu(sol, work)
                rows.append(Row(sol["name"], kind, "build", status="PASS",
                                seconds=time.time() - t0, note="cpp_extension.load"))
            else:
                rows.append(Row(sol["name"], kind, "load", status="SKIP",
                                note=f"unknown language/binding {lang}/{binding}"))
                continue
        except Exception as exc:
            rows.append(Row(sol["name"], kind, "load", status="FAIL",
                            note=f"{type(exc).__name__}: {exc}".splitlines()[0][:160]))
            traceback.print_exc(file=sys.stderr)
            continue
        run_numeric(rows, sol, fn, defn, sz, scalars, device, kind, ARGS.bench)

    for row, fut in pending:
        try:
            note, row.seconds = fut.result()
            row.status, row.note = ("SKIP", note[6:]) if note.startswith("SKIP: ") else (
                "PASS", note)
        except Exception as exc:
            row.status = "FAIL"
            row.note = str(exc).strip().splitlines()[-1][:160] if str(exc).strip() else repr(exc)
            print(f"--- {row.solution} ({row.check}) failed:\n{exc}", file=sys.stderr)
    pool.shutdown()

    print_table(rows, device)
    failed = [r for r in rows if r.status == "FAIL"]
    print(f"\n{sum(r.status == 'PASS' for r in rows)} passed, {len(failed)} failed"
          + (f", {sum(r.status == 'SKIP' for r in rows)} skipped"
             if any(r.status == "SKIP" for r in rows) else ""))
    return 1 if failed else 0


def fmt(x, spec):
    return "" if x is None else format(x, spec)


def print_table(rows, device):
    mode = "TRITON_INTERPRET=1 on CPU" if device == "cpu" else f"GPU: {torch.cuda.get_device_name()}"
    print(f"\nExample solutions ({mode}; tolerance |out-ref| <= {ATOL} + {RTOL}*|ref|)\n")
    headers = ["solution", "kind", "check", "size", "status", "max_abs", "max_rel", "sec", "note"]
    bench = any(r.extra for r in rows)
    if bench:
        headers[-1:-1] = ["us", "GB/s", "of copy", "TFLOP/s"]
    table = []
    for r in rows:
        line = [r.solution, r.kind, r.check, r.size, r.status, fmt(r.max_abs, ".2e"),
                fmt(r.max_rel, ".2e"), fmt(r.seconds, ".1f")]
        if bench:
            e = r.extra
            line += [fmt(e.get("us"), ".2f"), fmt(e.get("GB/s"), ".0f"),
                     fmt(e.get("of_copy"), ".0%"), fmt(e.get("TFLOP/s"), ".1f")]
        line.append(r.note)
        table.append(line)
    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h)
              for i, h in enumerate(headers)]
    widths[-1] = len(headers[-1])
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip())


if __name__ == "__main__":
    sys.exit(main())
