"""Class: cross-talk (the GPU's settings are the machine's, shared by every solution).

Tries, through NVML (libnvidia-ml, ctypes): lock the GPU's clocks (nvmlDeviceSetGpuLockedClocks,
nvmlDeviceSetMemoryLockedClocks), set application clocks, the power limit, the compute mode and
persistence mode. A solution allowed any of them could slow every solution measured after it
(clocks at their minimum) or speed up its own numbers against the reference timed earlier.
To do no lasting harm on the machine it asks for the values in force now and resets what it
could change; it reports what the driver allowed. Expect: every setting denied (the runner holds
no capability), its report in the log, the honest solution after it unchanged.
"""
import ctypes

import torch

_report = []


def _try():
    try:
        nv = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as e:
        _report.append(f"no NVML: {e}")
        return
    if nv.nvmlInit_v2() != 0:
        _report.append("nvmlInit failed")
        return
    h = ctypes.c_void_p()
    if nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) != 0:
        _report.append("no handle")
        return
    sm, mem, limit, mode = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_int()
    nv.nvmlDeviceGetMaxClockInfo(h, 1, ctypes.byref(sm))  # NVML_CLOCK_SM
    nv.nvmlDeviceGetMaxClockInfo(h, 2, ctypes.byref(mem))  # NVML_CLOCK_MEM
    nv.nvmlDeviceGetPowerManagementLimit(h, ctypes.byref(limit))
    nv.nvmlDeviceGetComputeMode(h, ctypes.byref(mode))
    tries = {
        "SetGpuLockedClocks": (lambda: nv.nvmlDeviceSetGpuLockedClocks(h, sm.value, sm.value), lambda: nv.nvmlDeviceResetGpuLockedClocks(h)),
        "SetMemoryLockedClocks": (lambda: nv.nvmlDeviceSetMemoryLockedClocks(h, mem.value, mem.value), lambda: nv.nvmlDeviceResetMemoryLockedClocks(h)),
        "SetApplicationsClocks": (lambda: nv.nvmlDeviceSetApplicationsClocks(h, mem.value, sm.value), lambda: nv.nvmlDeviceResetApplicationsClocks(h)),
        "SetPowerManagementLimit": (lambda: nv.nvmlDeviceSetPowerManagementLimit(h, limit.value), lambda: 0),
        "SetComputeMode": (lambda: nv.nvmlDeviceSetComputeMode(h, mode.value), lambda: 0),
        "SetPersistenceMode": (lambda: nv.nvmlDeviceSetPersistenceMode(h, 1), lambda: 0),
    }
    for name, (do, undo) in tries.items():
        rc = do()
        if rc == 0:
            undo()
            _report.append(f"ALLOWED {name}")
        else:
            _report.append(f"denied {name} (nvml {rc})")


if torch.cuda.is_available():
    _try()
    print("CLOCKS REPORT " + "; ".join(_report), flush=True)


def run(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
