#!/usr/bin/env bash
# The project's venv: CPU torch pinned (2.13.0 is on local disk; an unpinned torch pulls a
# multi-GB CUDA build), then the package with every extra the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q torch==2.13.0
.venv/bin/pip install -q -e ".[pipeline,report,triton,cuda,test]"
