"""The signed ``requestState`` of the small server's 2026-07-28 multi round-trip requests: an
HMAC per ``Server`` over the method, a digest of the params, the issue time and the answers so
far (see docs/explanation/server.md, "Two eras").
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from ..errors import InvalidParams
from ._context import _Request

__all__ = ["digest", "encode_state", "load_inputs"]

_STATE_TTL_S = 3600.0


def digest(req: _Request) -> str:
    salient = {
        k: v for k, v in req.params.items() if k not in ("_meta", "inputResponses", "requestState")
    }
    raw = json.dumps([req.method, salient], sort_keys=True, default=str).encode()
    return hashlib.sha256(raw).hexdigest()[:32]


def encode_state(secret: bytes, req: _Request) -> str:
    payload = json.dumps(
        {"m": req.method, "p": digest(req), "t": time.time(), "r": req.inputs},
        separators=(",", ":"),
        sort_keys=True,
    ).encode()
    mac = hmac.new(secret, payload, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(mac + payload).decode("ascii")


def load_inputs(secret: bytes, req: _Request) -> None:
    inputs: dict[str, Any] = {}
    state = req.params.get("requestState")
    if state is not None:
        try:
            raw = base64.urlsafe_b64decode(str(state).encode("ascii"))
            mac, payload = raw[:16], raw[16:]
            good = hmac.new(secret, payload, hashlib.sha256).digest()[:16]
            if not hmac.compare_digest(mac, good):
                raise ValueError("bad signature")
            data = json.loads(payload)
            if data["m"] != req.method or data["p"] != digest(req):
                raise ValueError("state of another request")
            if time.time() - float(data["t"]) > _STATE_TTL_S:
                raise ValueError("expired")
            inputs.update(data["r"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidParams(f"invalid requestState ({exc})") from None
    responses = req.params.get("inputResponses")
    if responses is not None:
        if not isinstance(responses, dict):
            raise InvalidParams("inputResponses must be an object")
        inputs.update({k: v for k, v in responses.items() if k.startswith("input_")})
    req.inputs = inputs
