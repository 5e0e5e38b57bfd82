"""Workload identity federation (SEP-1933): a job with no person present trades the identity
assertion its platform gives it (a file or a callable, read afresh for every token request)
for an access token with the JWT-bearer grant (RFC 7523 §2.1) (see
docs/explanation/oauth.md, "Workload identity").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AuthRequired, ConfigError
from ._net import Http
from .discovery import AuthServerMetadata
from .flow import JWT_BEARER, require_issuer, token_request
from .registration import ClientInfo
from .storage import TokenSet

__all__ = ["WorkloadIdentity"]

# An assertion is a JWT: a few KiB at most. A larger file is not one.
_MAX_ASSERTION = 64 * 1024


@dataclass(frozen=True)
class WorkloadIdentity:
    """The JWT-bearer grant for workloads: give exactly one of ``assertion_file`` (a path)
    or ``assertion`` (a callable returning the assertion, or the assertion itself).

    Args:
        assertion_file: a file holding the identity assertion (e.g. a projected Kubernetes
            service-account token); read at every token request.
        assertion: ``fn() -> str``, called at every token request, or a fixed string.
        client_id: sent as ``client_id`` when the authorization server wants one.
        scope: scopes to ask for when the MCP server's challenge names none.
        issuer: the authorization server that accepts the assertion: it goes to no other
            (without it, the issuer of the first successful use is pinned in the store).
    """

    assertion_file: str | os.PathLike[str] | None = None
    assertion: Callable[[], str] | str | None = field(default=None, repr=False)
    client_id: str | None = None
    scope: str | None = None
    issuer: str | None = None

    def __post_init__(self) -> None:
        if (self.assertion_file is None) == (self.assertion is None):
            raise ConfigError("WorkloadIdentity needs exactly one of assertion_file or assertion")

    def current_assertion(self) -> str:
        """The assertion as it is now.

        Raises:
            AuthRequired: the file cannot be read, or the assertion is empty.
        """
        if self.assertion_file is not None:
            path = Path(self.assertion_file)
            try:
                with path.open("rb") as f:
                    raw = f.read(_MAX_ASSERTION + 1)
            except OSError as exc:
                raise AuthRequired(
                    f"cannot read the workload identity assertion {path}: {exc.strerror}"
                ) from None
            if len(raw) > _MAX_ASSERTION:
                raise AuthRequired(f"the workload identity assertion {path} is too large")
            value = raw.decode("utf-8", "replace").strip()
        elif callable(self.assertion):
            value = str(self.assertion() or "").strip()
        else:
            value = str(self.assertion or "").strip()
        if not value:
            raise AuthRequired("the workload identity assertion is empty")
        return value

    def fetch(
        self,
        http: Http,
        metadata: AuthServerMetadata,
        resource: str,
        scope: str | None,
        issuer: str | None = None,
    ) -> TokenSet:
        """One JWT-bearer token request with the current assertion (an identity credential:
        only to the issuer it is bound to, checked before the file is even read)."""
        require_issuer(issuer or self.issuer, metadata)
        form = {
            "grant_type": JWT_BEARER,
            "assertion": self.current_assertion(),
            "resource": resource,
        }
        if scope:
            form["scope"] = scope
        client = ClientInfo(
            client_id=self.client_id or "",
            token_endpoint_auth_method="none",
            issuer=metadata.issuer,
        )
        return token_request(http, metadata, client, form, "the workload identity grant")
