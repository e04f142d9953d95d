"""What a trace must say about where it was measured: device, versions, clocks, times.

Clocks come from NVML (pynvml when importable, else libnvidia-ml through ctypes); without NVML,
`nvidia-smi` is asked once per runner (driver version and the clocks at that moment) and the
per-evaluation clocks are omitted.
"""
from __future__ import annotations

import ctypes
import os
import platform
import re
import socket
import subprocess
from datetime import datetime, timezone
from typing import Any, Dict, Optional

import torch

from flashinfer_bench.device import cpu_model_name


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _Nvml:
    """The few NVML calls we need, through pynvml or ctypes."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2

    def __init__(self) -> None:
        self.kind = None
        self._py = None
        self._lib = None
        self._err: type = OSError
        try:
            import pynvml  # type: ignore

            self._err = pynvml.NVMLError
            pynvml.nvmlInit()
            self._py = pynvml
            self.kind = "pynvml"
            return
        except (ImportError, OSError, AttributeError):
            pass
        except self._err:  # no driver / library behind pynvml
            pass
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() == 0:
                self._lib = lib
                self.kind = "ctypes"
        except (OSError, AttributeError):
            self._lib = None

    def handle(self, uuid: Optional[str], index: int) -> Any:
        if self._py is not None:
            p = self._py
            try:
                if uuid:
                    return p.nvmlDeviceGetHandleByUUID(uuid)
                return p.nvmlDeviceGetHandleByIndex(index)
            except self._err:
                return None
        if self._lib is not None:
            h = ctypes.c_void_p()
            if uuid:
                rc = self._lib.nvmlDeviceGetHandleByUUID(ctypes.c_char_p(uuid.encode()), ctypes.byref(h))
            else:
                rc = self._lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(h))
            return h if rc == 0 else None
        return None

    def clocks(self, handle: Any) -> Optional[Dict[str, int]]:
        if handle is None:
            return None
        out: Dict[str, int] = {}
        for key, kind in (("sm", self.NVML_CLOCK_SM), ("mem", self.NVML_CLOCK_MEM)):
            if self._py is not None:
                try:
                    out[key] = int(self._py.nvmlDeviceGetClockInfo(handle, kind))
                except self._err:
                    pass
            elif self._lib is not None:
                v = ctypes.c_uint()
                if self._lib.nvmlDeviceGetClockInfo(handle, ctypes.c_int(kind), ctypes.byref(v)) == 0:
                    out[key] = int(v.value)
        return out or None

    def driver(self) -> Optional[str]:
        if self._py is not None:
            try:
                v = self._py.nvmlSystemGetDriverVersion()
                return v.decode() if isinstance(v, bytes) else str(v)
            except self._err:
                return None
        if self._lib is not None:
            buf = ctypes.create_string_buffer(96)
            if self._lib.nvmlSystemGetDriverVersion(buf, ctypes.c_uint(96)) == 0:
                return buf.value.decode()
        return None


def _nvidia_smi(index: int) -> Dict[str, Any]:
    try:
        r = subprocess.run(
            ["nvidia-smi", f"--id={index}", "--query-gpu=driver_version,clocks.sm,clocks.mem", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode != 0 or not r.stdout.strip():
        return {}
    parts = [p.strip() for p in r.stdout.strip().splitlines()[0].split(",")]
    out: Dict[str, Any] = {"driver": parts[0]}
    try:
        out["clocks"] = {"sm": int(float(parts[1])), "mem": int(float(parts[2]))}
    except (IndexError, ValueError):
        pass
    return out


def _versions() -> Dict[str, str]:
    from .. import __version__

    libs = {"torch": torch.__version__, "flashinfer_bench": __version__, "python": platform.python_version()}
    try:  # the installed version, without paying triton's import here
        from importlib.metadata import PackageNotFoundError, version

        libs["triton"] = version("triton")
    except PackageNotFoundError:
        pass
    if torch.version.cuda:
        libs["cuda"] = str(torch.version.cuda)
    return libs


class DeviceEnvironment:
    """Static facts of the runner's device, and clocks on demand."""

    def __init__(self, device: torch.device, physical_index: Optional[int]) -> None:
        self.device = device
        self.static: Dict[str, Any] = {"hostname": socket.gethostname(), "worker_pid": os.getpid()}
        libs = _versions()
        self._nvml: Optional[_Nvml] = None
        self._handle = None
        self.clock_source = None
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            m = re.search(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", str(getattr(props, "uuid", "")))
            uuid_s = f"GPU-{m.group(0)}" if m else None
            idx = physical_index if physical_index is not None else (device.index or 0)
            self.static.update(
                hardware=torch.cuda.get_device_name(device),
                device=f"cuda:{idx}",
                device_index=idx,
                gpu_uuid=uuid_s,
                sm_count=int(props.multi_processor_count),
                l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
                memory_bytes=int(props.total_memory),
                compute_capability=f"{props.major}.{props.minor}",
            )
            nv = _Nvml()
            if nv.kind:
                self._nvml = nv
                self._handle = nv.handle(uuid_s, idx) if uuid_s else None
                if self._handle is None:
                    self._handle = nv.handle(None, idx)
                self.clock_source = f"nvml/{nv.kind}"
                drv = nv.driver()
                if drv:
                    libs["driver"] = drv
            else:
                smi = _nvidia_smi(idx)
                if "driver" in smi:
                    libs["driver"] = smi["driver"]
                if "clocks" in smi:
                    self.static["clocks_at_worker_start"] = smi["clocks"]
                    self.clock_source = "nvidia-smi (once per worker)"
        else:
            self.static.update(
                hardware=f"CPU {cpu_model_name()}", device="cpu", device_index=0, cpu_count=os.cpu_count(),
                torch_threads=torch.get_num_threads(),
            )
        self.static["libs"] = libs

    def clocks(self) -> Optional[Dict[str, int]]:
        if self._nvml is None:
            return None
        return self._nvml.clocks(self._handle)
