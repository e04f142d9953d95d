# expect: RUNTIME_ERROR; no connection reaches the test's listeners (TCP on 127.0.0.1, an abstract
# unix socket) nor the worker's own unix socket
import json
import socket

import torch

T = json.loads(__TARGETS__)


def _connect_all():
    got = []
    for fam, addr in ((socket.AF_INET, ("127.0.0.1", T["port"])), (socket.AF_UNIX, "\0" + T["abstract"]), (socket.AF_UNIX, T["worker_socket"])):
        try:
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(addr)
            s.sendall(b"exfiltrated\n")
            got.append(str(addr))
        except OSError as e:
            print(f"denied: {addr!r}: {type(e).__name__}: {e}")
    if not got:
        raise PermissionError("no network")
    print("BREACH: connected to", got)


def run(x, weight, eps):
    _connect_all()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).half()
