"""`flashinfer-bench run --gpus N` measures on N GPUs, even with a look-ahead job in flight."""
from __future__ import annotations

from flashinfer_bench.cli.run_cmd import gpus_to_show


def test_gpus_n_shows_the_run_the_first_n_visible_gpus(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,1,7")
    assert gpus_to_show(1) == "4"  # physical ids as listed, so slot locks keep their names
    assert gpus_to_show(2) == "4,1"
    assert gpus_to_show(3) is None  # all of them: nothing to hide
    assert gpus_to_show(8) is None
