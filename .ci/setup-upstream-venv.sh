#!/usr/bin/env bash
# FlashInfer-Bench 0.1.2 itself, for the both-ways compatibility tests (loading needs only
# torch, pydantic, safetensors and docstring-parser; its GPU dependencies are left out).
set -euo pipefail
venv=${FIB_UPSTREAM_VENV:-/tmp/fib012-venv}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import flashinfer_bench" 2>/dev/null; then exit 0; fi
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q torch==2.13.0
"$venv/bin/pip" install -q --no-deps flashinfer-bench==0.1.2
"$venv/bin/pip" install -q pydantic safetensors docstring-parser numpy
