"""Who the client is at an authorization server: pre-registered credentials, a Client ID
Metadata Document or Dynamic Client Registration (RFC 7591), in that order, and the client
authentication method at the token endpoint (see docs/explanation/oauth.md, "Registration").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from .._secrets import redact_url
from ..errors import AuthRequired, ConfigError
from ._net import Http, oauth_error
from .discovery import AuthServerMetadata, require_issuer

__all__ = ["ClientInfo", "client_metadata_document", "register", "resolve_client"]

_SECRET_METHODS = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class ClientInfo:
    """A client identity at one authorization server (``issuer``). ``repr`` hides the secret."""

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str = "none"
    issuer: str | None = None
    redirect_uris: tuple[str, ...] = ()
    source: str = "pre-registered"  # or "cimd", "dcr"
    secret_expires_at: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.token_endpoint_auth_method,
            "issuer": self.issuer,
            "redirect_uris": list(self.redirect_uris),
            "source": self.source,
            "secret_expires_at": self.secret_expires_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClientInfo | None:
        if not isinstance(data, dict) or not isinstance(data.get("client_id"), str):
            return None
        expires = data.get("secret_expires_at")
        return cls(
            client_id=data["client_id"],
            client_secret=data.get("client_secret"),
            token_endpoint_auth_method=str(data.get("token_endpoint_auth_method") or "none"),
            issuer=data.get("issuer"),
            redirect_uris=tuple(data.get("redirect_uris") or ()),
            source=str(data.get("source") or "dcr"),
            secret_expires_at=float(expires) if isinstance(expires, (int, float)) else None,
        )

    @property
    def expired(self) -> bool:
        """True when the server said the secret expires and it has (0 means never)."""
        return bool(self.secret_expires_at) and time.time() >= float(self.secret_expires_at or 0)


def pick_auth_method(
    metadata: AuthServerMetadata, has_secret: bool, preferred: str | None = None
) -> str:
    """The token-endpoint auth method to use with these credentials at this server."""
    if preferred:
        return preferred
    if not has_secret:
        return "none"
    supported = metadata.token_endpoint_auth_methods_supported
    if supported is None:
        return "client_secret_basic"
    for method in _SECRET_METHODS:
        if method in supported:
            return method
    return "client_secret_basic"


def client_metadata_document(
    url: str,
    *,
    client_name: str,
    redirect_uris: list[str],
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token"),
    **extra: Any,
) -> dict[str, Any]:
    """The JSON to host at ``url`` for CIMD: ``client_id`` equals ``url`` exactly (MCP
    2025-11-25); ``url`` must be https with a path."""
    _check_cimd_url(url)
    return {
        "client_id": url,
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        **extra,
    }


def _check_cimd_url(url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme != "https" or parts.path in ("", "/"):
        raise ConfigError(
            f"a client metadata document URL must be https with a path, got {redact_url(url)!r}"
        )


def register(
    http: Http,
    metadata: AuthServerMetadata,
    *,
    client_name: str,
    redirect_uris: list[str],
    grant_types: list[str],
    scope: str | None,
    application_type: str = "native",
) -> ClientInfo:
    """Dynamic Client Registration (RFC 7591) at ``metadata.registration_endpoint``.

    Raises:
        AuthRequired: no endpoint, or the server refused (its error code and description).
    """
    endpoint = metadata.registration_endpoint
    if not endpoint:
        raise AuthRequired(f"{metadata.issuer} does not offer dynamic client registration")
    supported = metadata.token_endpoint_auth_methods_supported or ("none",)
    method = (
        "none"
        if "none" in supported
        else next((m for m in _SECRET_METHODS if m in supported), "client_secret_basic")
    )
    body: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": redirect_uris,
        "grant_types": grant_types,
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": method,
        "application_type": application_type,
    }
    if scope:
        body["scope"] = scope
    status, data = http.post(endpoint, "client registration", body=body)
    if status not in (200, 201) or not isinstance(data.get("client_id"), str):
        raise oauth_error(status, data, f"client registration at {redact_url(endpoint)}")
    secret = data.get("client_secret")
    answered = data.get("token_endpoint_auth_method")
    if not isinstance(answered, str):
        answered = pick_auth_method(metadata, bool(secret))
    expires = data.get("client_secret_expires_at")
    return ClientInfo(
        client_id=data["client_id"],
        client_secret=str(secret) if secret else None,
        token_endpoint_auth_method=answered,
        issuer=metadata.issuer,
        redirect_uris=tuple(redirect_uris),
        source="dcr",
        secret_expires_at=float(expires) if isinstance(expires, (int, float)) and expires else None,
    )


def resolve_client(
    http: Http,
    metadata: AuthServerMetadata,
    *,
    preregistered: ClientInfo | None,
    stored: ClientInfo | None,
    client_metadata_url: str | None,
    client_name: str,
    redirect_uris: list[str],
    grant_types: list[str],
    scope: str | None,
    application_type: str = "native",
) -> ClientInfo:
    """Pick the client identity for ``metadata.issuer`` in spec order (module docstring).

    ``stored`` is a registration made earlier at the same issuer; it is reused while its
    secret is valid and its redirect URIs cover ``redirect_uris``. ``preregistered`` with an
    ``issuer`` is used there only (never re-labelled with another server's issuer).

    Raises:
        AuthRequired: no way to be a client there, or pre-registered credentials of another
            issuer.
    """
    if preregistered is not None:
        if preregistered.client_secret:
            require_issuer(preregistered.issuer, metadata)
        method = pick_auth_method(
            metadata,
            bool(preregistered.client_secret),
            preregistered.token_endpoint_auth_method
            if preregistered.token_endpoint_auth_method != "auto"
            else None,
        )
        return replace(preregistered, issuer=metadata.issuer, token_endpoint_auth_method=method)
    if client_metadata_url and metadata.client_id_metadata_document_supported:
        _check_cimd_url(client_metadata_url)
        return ClientInfo(
            client_id=client_metadata_url,
            issuer=metadata.issuer,
            redirect_uris=tuple(redirect_uris),
            source="cimd",
        )
    if (
        stored is not None
        and stored.issuer == metadata.issuer
        and not stored.expired
        and set(redirect_uris) <= set(stored.redirect_uris)
    ):
        return stored
    if metadata.registration_endpoint:
        return register(
            http,
            metadata,
            client_name=client_name,
            redirect_uris=redirect_uris,
            grant_types=grant_types,
            scope=scope,
            application_type=application_type,
        )
    raise AuthRequired(
        f"the authorization server {metadata.issuer} supports neither client ID metadata "
        f"documents nor dynamic registration: register a client there and pass its "
        f"client_id (and client_secret) to mcp_lite.auth.OAuth"
    )
