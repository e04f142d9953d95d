"""What handing a witness round's data over costs, step by step (issue 15: the witness's share).

    python benchmarks/witness_handover.py [--device cuda] [--dirs /tmp,$HOME] [--repeat 5]

For each size (a round's outputs or inputs, 64 KiB to 48 MiB) and each directory (the runners'
scratch lives on disk for CUDA runners, on a tmpfs for CPU runners): saving device tensors into a
new file as `witness._save_all` does (one copy off the device into new pageable memory, then
pwrite) against a copy into a reused pinned buffer then pwrite, and against a copy straight into
a shared mapping of the file; then handing the file to another folder of the same filesystem by
kernel copy (sendfile, as `_Folder.copy_file`) against a hard link. Median ms of `--repeat` runs.
"""
from __future__ import annotations

import argparse
import mmap
import os
import statistics
import tempfile
import time
from typing import Callable, List

import torch


def _median_ms(fn: Callable[[], None], repeat: int) -> float:
    fn()
    xs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t) * 1e3)
    return statistics.median(xs)


def _write_all(fd: int, view: memoryview) -> None:
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], done)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dirs", default=f"{tempfile.gettempdir()},{os.path.expanduser('~')}")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    dev = torch.device(args.device)
    sizes = [64 << 10, 1 << 20, 16 << 20, 48 << 20]
    pinned = {}
    print("| dir | size | cpu()+pwrite | pinned+pwrite | into a mapping | sendfile copy | hard link |")
    print("|---|---|---|---|---|---|---|")
    for base in args.dirs.split(","):
        root = tempfile.mkdtemp(prefix="fib-handover-", dir=base)
        a, b = os.path.join(root, "a"), os.path.join(root, "b")
        os.mkdir(a)
        os.mkdir(b)
        try:
            for n in sizes:
                src = torch.randint(0, 255, (n,), dtype=torch.uint8, device=dev)
                path = os.path.join(a, "out.bin")

                def fresh() -> int:
                    if os.path.exists(path):
                        os.unlink(path)
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
                    os.ftruncate(fd, n)
                    return fd

                def via_cpu() -> None:
                    fd = fresh()
                    try:
                        _write_all(fd, memoryview(src.cpu().numpy()))
                    finally:
                        os.close(fd)

                def via_pinned() -> None:
                    buf = pinned.get(n)
                    if buf is None:
                        buf = pinned[n] = torch.empty(n, dtype=torch.uint8, pin_memory=dev.type == "cuda")
                    buf.copy_(src)
                    fd = fresh()
                    try:
                        _write_all(fd, memoryview(buf.numpy()))
                    finally:
                        os.close(fd)

                def via_map() -> None:
                    fd = fresh()
                    try:
                        m = mmap.mmap(fd, n, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
                    finally:
                        os.close(fd)
                    dst = torch.frombuffer(m, dtype=torch.uint8)
                    dst.copy_(src)
                    del dst
                    m.close()

                save = [_median_ms(f, args.repeat) for f in (via_cpu, via_pinned, via_map)]
                via_cpu()
                target = os.path.join(b, "out.bin")

                def copy() -> None:
                    if os.path.exists(target):
                        os.unlink(target)
                    s = os.open(path, os.O_RDONLY)
                    d = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    try:
                        os.ftruncate(d, n)
                        done = 0
                        while done < n:
                            done += os.sendfile(d, s, done, n - done)
                    finally:
                        os.close(s)
                        os.close(d)

                def link() -> None:
                    if os.path.exists(target):
                        os.unlink(target)
                    os.link(path, target)

                hand: List[float] = [_median_ms(copy, args.repeat), _median_ms(link, args.repeat)]
                print(f"| {base} | {n >> 10} KiB | " + " | ".join(f"{x:.2f}" for x in save + hand) + " |")
        finally:
            for d in (a, b):
                for f in os.listdir(d):
                    os.unlink(os.path.join(d, f))
                os.rmdir(d)
            os.rmdir(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
