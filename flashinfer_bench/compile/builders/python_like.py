"""Builders for python, triton and tilelang: import the entry, check its signature, warm up.

Triton: with no usable GPU the solution runs under TRITON_INTERPRET=1 (set here before the
solution is imported: Triton reads it when @triton.jit decorates). The warm-up run compiles the
kernels into $TRITON_CACHE_DIR, which the parent points inside the artifact. TileLang: the same,
with $TILELANG_CACHE_DIR; it needs a GPU to run, so on CPU the build stops after the import.
"""
from __future__ import annotations

import importlib.util
import os
import traceback
from typing import Any, Dict

from ...data import Definition
from ..messages import exception_location
from ..pyimport import EntryError, import_entry, signature_problem
from ..warmup import run_warmup
from .common import Outcome, src_dir, torch_cuda_available


def build(job: Dict[str, Any]) -> Outcome:
    lang = job["language"]
    definition = Definition.model_validate(job["definition"])
    info: Dict[str, Any] = {"package": job["package"]}
    warm = False
    on_gpu = False
    if lang in ("triton", "tilelang") and importlib.util.find_spec(lang) is None:
        return Outcome.failed(f"{lang} is not installed (pip install {lang})")
    if lang == "triton":
        on_gpu = job["triton_backend"] == "cuda" and torch_cuda_available()
        if not on_gpu:
            os.environ["TRITON_INTERPRET"] = "1"
        info["triton_backend"] = "cuda" if on_gpu else "interpreter"
        info["triton_cache"] = "triton_cache"
        info["loadable_here"] = True
        warm = True
    elif lang == "tilelang":
        on_gpu = torch_cuda_available()
        info["tilelang_cache"] = "tilelang_cache"
        info["loadable_here"] = on_gpu
        warm = on_gpu
    else:
        info["loadable_here"] = True

    try:
        fn = import_entry(job["package"], src_dir(job), job["entry_file"], job["entry_symbol"])
    except EntryError as e:
        return Outcome.failed(str(e))
    why = signature_problem(
        fn, job["entry_symbol"], definition.input_names, definition.output_names, job["dps"]
    )
    if why:
        return Outcome.failed(f"{job['entry_file']}: {why}")
    if warm:
        try:
            info["warmup_axes"] = run_warmup(fn, definition, job["dps"], on_gpu)
        except BaseException as e:  # untrusted code: report whatever the run raised
            where = exception_location(e, src_dir(job)) or job["entry_file"]
            return Outcome.failed(
                f"{where}: the warm-up run on a small input raised {type(e).__name__}: {e}",
                traceback.format_exc(),
            )
        if not info["warmup_axes"]:
            info["warmup_note"] = "no var-axis value up to 4096 satisfies the constraints; no warm-up"
    return Outcome.ok(**info)
