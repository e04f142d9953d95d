"""Authenticated replies from the runner: a per-runner key, a per-request nonce, HMAC-SHA256.

The runner makes the key before any solution is loaded and hands it to the supervisor in its
`ready` message. Each result carries the request's nonce, a sequence number and a MAC over both and
the body; the supervisor rejects anything else. A solution that writes well-formed protocol frames
to the socket (found among its inherited descriptors) without the key is caught; one that digs
the key out of the runner's memory is not, which is why the supervisor also checks the numbers
(`supervise.plausibility_problems`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any, Dict, Optional, Tuple


def new_key() -> bytes:
    return os.urandom(32)


def _mac(key: bytes, nonce: str, seq: int, body: Any) -> str:
    text = json.dumps([nonce, seq, body], sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


class Sealer:
    """Runner side: seal each result with the key (kept in a closure, not on a module)."""

    def __init__(self, key: bytes) -> None:
        self._seal = _make_sealer(key)

    def seal(self, nonce: str, body: Dict[str, Any]) -> Dict[str, Any]:
        return self._seal(nonce, body)


def _make_sealer(key: bytes) -> Any:
    state = {"seq": 0}

    def seal(nonce: str, body: Dict[str, Any]) -> Dict[str, Any]:
        state["seq"] += 1
        return {"type": "result", "result": body, "nonce": nonce, "seq": state["seq"], "mac": _mac(key, nonce, state["seq"], body)}

    return seal


def verify(key: Optional[bytes], nonce: str, last_seq: int, msg: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """(result, "") when `msg` is the runner's sealed answer to `nonce`, else (None, why)."""
    if key is None:
        return msg.get("result") or {}, ""
    if not isinstance(msg, dict) or msg.get("type") != "result":
        return None, f"unexpected message type {msg.get('type') if isinstance(msg, dict) else type(msg).__name__!r}"
    body, seq, mac = msg.get("result"), msg.get("seq"), msg.get("mac")
    if not isinstance(body, dict) or not isinstance(seq, int) or not isinstance(mac, str):
        return None, "a result without seal"
    if msg.get("nonce") != nonce:
        return None, "a result for another request"
    if seq <= last_seq:
        return None, "a replayed result"
    if not hmac.compare_digest(mac, _mac(key, nonce, seq, body)):
        return None, "a result whose MAC does not match"
    return body, ""
