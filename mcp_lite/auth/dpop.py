"""DPoP (RFC 9449): access tokens bound to an EC P-256 key only this client holds, a fresh proof
on every token and resource request, and server nonces remembered per origin (see
docs/explanation/oauth.md, "DPoP").
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
import uuid
import weakref
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .. import _fork
from ..errors import ConfigError
from ._net import origin_of

__all__ = ["ALGORITHM", "DPoPKey", "dpop_available", "htu_of", "server_supports_dpop"]

ALGORITHM = "ES256"
INSTALL_HINT = "pip install 'mcp-lite-client[jwt]'"


def dpop_available() -> bool:
    """True when PyJWT and cryptography can sign proofs."""
    try:
        import jwt  # noqa: F401
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: F401
    except ImportError:
        return False
    return True


def server_supports_dpop(metadata_raw: dict[str, Any]) -> bool:
    """True when authorization server metadata lists an algorithm we sign with."""
    algorithms = metadata_raw.get("dpop_signing_alg_values_supported")
    return isinstance(algorithms, list) and ALGORITHM in algorithms


def htu_of(url: str) -> str:
    """The ``htu`` claim: the request URL without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64_int(value: int, length: int) -> str:
    return _b64(value.to_bytes(length, "big"))


def _from_b64(text: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")


# Live keys: a forked child replaces their nonce locks (a parent thread may hold one).
_keys: weakref.WeakSet[DPoPKey] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for key in list(_keys):
        key._lock = threading.Lock()


_fork.on_child(_reset_after_fork)


class DPoPKey:
    """One client's DPoP key pair and the nonces servers gave it. Thread-safe.

    ``repr`` shows the key's thumbprint, never the private part.
    """

    def __init__(self, private_key: Any) -> None:
        self._key = private_key
        numbers = private_key.public_key().public_numbers()
        self.public_jwk: dict[str, str] = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64_int(numbers.x, 32),
            "y": _b64_int(numbers.y, 32),
        }
        self._nonces: dict[str, str] = {}
        self._lock = threading.Lock()
        _keys.add(self)

    @classmethod
    def generate(cls) -> DPoPKey:
        """A new P-256 key.

        Raises:
            ConfigError: the ``jwt`` extra is not installed.
        """
        ec = _ec()
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DPoPKey | None:
        """The key saved by ``to_json``; None when ``data`` is not one."""
        if not isinstance(data, dict) or data.get("kty") != "EC" or data.get("crv") != "P-256":
            return None
        ec = _ec()
        try:
            public = ec.EllipticCurvePublicNumbers(
                _from_b64(data["x"]), _from_b64(data["y"]), ec.SECP256R1()
            )
            private = ec.EllipticCurvePrivateNumbers(_from_b64(data["d"]), public)
            return cls(private.private_key())
        except (KeyError, TypeError, ValueError):
            return None

    def to_json(self) -> dict[str, str]:
        """The private JWK, for the token store (which keeps its files 0600)."""
        d = self._key.private_numbers().private_value
        return {**self.public_jwk, "d": _b64_int(d, 32)}

    def thumbprint(self) -> str:
        """The JWK SHA-256 thumbprint (RFC 7638): the ``cnf.jkt`` a bound token carries."""
        canonical = json.dumps(
            {k: self.public_jwk[k] for k in ("crv", "kty", "x", "y")},
            separators=(",", ":"),
            sort_keys=True,
        )
        return _b64(hashlib.sha256(canonical.encode()).digest())

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A fresh proof for one request (a new ``jti`` every time)."""
        import jwt

        claims: dict[str, Any] = {
            "jti": str(uuid.uuid4()),
            "htm": method.upper(),
            "htu": htu_of(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = _b64(hashlib.sha256(access_token.encode("ascii")).digest())
        nonce = self.nonce_for(url)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        return str(jwt.encode(claims, self._key, algorithm=ALGORITHM, headers=headers))

    def nonce_for(self, url: str) -> str | None:
        with self._lock:
            return self._nonces.get(origin_of(url))

    def remember_nonce(self, url: str, nonce: str | None) -> bool:
        """Keep the ``DPoP-Nonce`` a server at ``url`` sent; True when it is a new one."""
        if not nonce:
            return False
        origin = origin_of(url)
        with self._lock:
            if self._nonces.get(origin) == nonce:
                return False
            self._nonces[origin] = nonce
            return True

    def __repr__(self) -> str:
        return f"DPoPKey(jkt={self.thumbprint()!r})"


def _ec() -> Any:
    try:
        import jwt  # noqa: F401
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError:
        raise ConfigError(f"DPoP needs PyJWT and cryptography: {INSTALL_HINT}") from None
    return ec
