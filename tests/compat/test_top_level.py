"""FlashInfer-Bench 0.1.2's top-level names, in a fresh interpreter as a user's script sees them."""
from __future__ import annotations

import subprocess
import sys
import textwrap

# flashinfer_bench.__all__ of 0.1.2 (FFI_PROMPT*: instructions for agents, written for our builder)
UPSTREAM_TOP_LEVEL = [
    "FFI_PROMPT", "FFI_PROMPT_SIMPLE",
    "Benchmark", "BenchmarkConfig", "apply", "enable_apply", "disable_apply", "ApplyConfig",
    "ApplyConfigRegistry", "enable_tracing", "disable_tracing", "TracingConfig",
    "TracingConfigRegistry", "Definition",
    "Solution", "Trace", "TraceSet", "AxisConst", "AxisVar", "TensorSpec", "SourceFile", "BuildSpec",
    "SupportedLanguages", "RandomInput", "SafetensorsInput", "Workload", "Correctness",
    "Performance", "Environment", "Evaluation", "EvaluationStatus",
]


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_name_imports_and_none_needs_torch() -> None:
    out = _run(f"""
        import sys
        import flashinfer_bench
        assert "torch" not in sys.modules and "pydantic" not in sys.modules  # a fast, light import
        from flashinfer_bench import {", ".join(UPSTREAM_TOP_LEVEL)}
        import flashinfer_bench.data as data
        assert Definition is data.Definition and EvaluationStatus.PASSED == "PASSED"
        assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC" in FFI_PROMPT_SIMPLE and FFI_PROMPT.startswith(FFI_PROMPT_SIMPLE)
        assert "torch" not in sys.modules
        print(sorted(set({UPSTREAM_TOP_LEVEL!r}) - set(flashinfer_bench.__all__)))
    """)
    assert out.strip() == "[]"


def test_apply_is_the_decorator_and_the_package() -> None:
    out = _run("""
        import flashinfer_bench
        print(flashinfer_bench.apply.stats(), flashinfer_bench.apply.dispatch_table())  # README

        @flashinfer_bench.apply("some_definition")
        def add_one(x):
            return x + 1

        from flashinfer_bench import apply
        from flashinfer_bench.apply import ApplyConfig, stats

        @apply("other_definition")
        def twice(x):
            return 2 * x

        assert apply is flashinfer_bench.apply and callable(apply)
        print(add_one(1), twice(3), apply("third", args=(5,), fallback=lambda x: -x))
        from flashinfer_bench.apply import apply as plain
        print(plain("fourth", args=(), kwargs={"x": 7}, fallback=lambda x: x))
    """)
    assert out.split("\n")[:3] == ["{} {}", "2 6 -5", "7"]
