"""What a DPoP-aware server checks in a proof (RFC 9449 §4.3), for the test servers.

Written from the RFC, independently of ``mcp_lite.auth.dpop``, so that the tests compare
the client against the specification and not against itself.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from typing import Any

import jwt
from jwt.algorithms import ECAlgorithm


class ProofError(Exception):
    pass


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 for an EC key: the required members in lexicographic order, no spaces."""
    members = {"crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"]}
    return _b64(hashlib.sha256(json.dumps(members, separators=(",", ":")).encode()).digest())


def verify(
    proof: str | None,
    method: str,
    url: str,
    *,
    access_token: str | None = None,
    nonce: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The proof's key thumbprint and claims, or ``ProofError`` saying what is wrong."""
    if not proof or "," in proof:
        raise ProofError("missing or multiple DPoP proofs")
    header = jwt.get_unverified_header(proof)
    jwk = header.get("jwk")
    if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256" or not isinstance(jwk, dict):
        raise ProofError(f"bad header {header}")
    if "d" in jwk:
        raise ProofError("the proof carries a private key")
    key = ECAlgorithm.from_jwk(json.dumps(jwk))
    claims = jwt.decode(proof, key, algorithms=["ES256"])  # type: ignore[arg-type]
    if claims.get("htm") != method or claims.get("htu") != url.split("?")[0]:
        raise ProofError(f"htm/htu {claims.get('htm')} {claims.get('htu')} != {method} {url}")
    if not isinstance(claims.get("jti"), str) or abs(time.time() - claims.get("iat", 0)) > 60:
        raise ProofError("jti or iat")
    if access_token is not None:
        ath = _b64(hashlib.sha256(access_token.encode()).digest())
        if claims.get("ath") != ath:
            raise ProofError("ath does not match the token")
    if nonce is not None and claims.get("nonce") != nonce:
        raise ProofError("use_dpop_nonce")
    return thumbprint(jwk), claims
