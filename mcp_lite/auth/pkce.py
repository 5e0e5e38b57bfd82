"""PKCE (RFC 7636) with ``S256`` only, and the ``state`` value of an authorization request (see
docs/explanation/oauth.md, "Grants and scopes").
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field

__all__ = ["Pkce", "new_state"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class Pkce:
    """One verifier/challenge pair; ``repr`` hides the verifier."""

    verifier: str = field(repr=False)
    challenge: str
    method: str = "S256"

    @classmethod
    def new(cls) -> Pkce:
        verifier = _b64url(secrets.token_bytes(64))
        return cls(verifier=verifier, challenge=challenge_for(verifier))


def challenge_for(verifier: str) -> str:
    """The S256 challenge of ``verifier``."""
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


def new_state() -> str:
    """An unguessable ``state`` (32 random bytes, base64url)."""
    return _b64url(secrets.token_bytes(32))
