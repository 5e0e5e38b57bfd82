"""Finding the authorization server of an MCP server: the ``WWW-Authenticate`` challenge,
Protected Resource Metadata (RFC 9728) and authorization-server metadata (RFC 8414, OpenID
Connect), in the order the MCP specification gives, with the 2025-03-26 fallbacks (see
docs/explanation/oauth.md, "Discovery").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .._secrets import is_loopback_host, redact_url
from ..errors import AuthRequired
from ._net import Http, canonical_url, log, origin_of, require_secure, resource_covers

__all__ = [
    "AuthServerMetadata",
    "Challenge",
    "Discovery",
    "require_issuer",
    "ProtectedResource",
    "as_metadata_urls",
    "discover",
    "issuer_mismatch",
    "parse_challenge",
    "prm_urls",
    "same_issuer",
]

_PARAM = re.compile(r'\s*([A-Za-z0-9_\-\.]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)\s*,?')


@dataclass(frozen=True)
class Challenge:
    """A parsed ``Bearer`` or ``DPoP`` challenge from ``WWW-Authenticate`` (RFC 6750 §3,
    RFC 9728 §5.1, RFC 9449 §7.1); ``scheme`` says which."""

    error: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None
    error_description: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    scheme: str = "Bearer"

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


def parse_challenge(header: str | None) -> Challenge | None:
    """The first ``Bearer`` or ``DPoP`` challenge in a ``WWW-Authenticate`` value, or None.

    Accepts several challenges in one header (``Basic realm="x", Bearer scope="a"``),
    quoted and token values, and escaped quotes.
    """
    if not header:
        return None
    match = re.search(r"(?:^|[\s,])(Bearer|DPoP)(?:\s+|$)", header, re.IGNORECASE)
    if match is None:
        return None
    rest = header[match.end() :]
    params: dict[str, str] = {}
    pos = 0
    while pos < len(rest):
        item = _PARAM.match(rest, pos)
        if item is None or item.end() == pos:
            break
        # A new scheme name ("Basic realm=...") ends this challenge.
        name, value = item.group(1), item.group(2)
        if " " in rest[pos : item.start(1)].strip():
            break
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params.setdefault(name.lower(), value)
        pos = item.end()
        if re.match(r"\s*[A-Za-z][A-Za-z0-9_\-]*\s+[A-Za-z0-9_\-]+=", rest[pos:]):
            break
    return Challenge(
        error=params.get("error"),
        scope=params.get("scope"),
        resource_metadata=params.get("resource_metadata"),
        error_description=params.get("error_description"),
        params=params,
        scheme="DPoP" if match.group(1).lower() == "dpop" else "Bearer",
    )


@dataclass(frozen=True)
class ProtectedResource:
    """RFC 9728 metadata of the MCP server, as far as a client uses it."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class AuthServerMetadata:
    """RFC 8414 / OIDC metadata of an authorization server (the fields a client uses)."""

    issuer: str
    authorization_endpoint: str | None
    token_endpoint: str
    registration_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    code_challenge_methods_supported: tuple[str, ...] | None = None
    token_endpoint_auth_methods_supported: tuple[str, ...] | None = None
    grant_types_supported: tuple[str, ...] | None = None
    client_id_metadata_document_supported: bool = False
    authorization_response_iss_parameter_supported: bool = False
    # True when no metadata existed and the 2025-03-26 default endpoints are assumed.
    defaulted: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuthServerMetadata:
        def strings(key: str) -> tuple[str, ...] | None:
            value = data.get(key)
            if isinstance(value, list):
                return tuple(str(v) for v in value)
            return None

        token = data.get("token_endpoint")
        if not isinstance(token, str):
            raise AuthRequired(f"the metadata of {data.get('issuer')!r} has no token_endpoint")
        for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
            if isinstance(data.get(key), str):
                require_secure(data[key], key.replace("_", " "))
        return cls(
            issuer=str(data["issuer"]),
            authorization_endpoint=data.get("authorization_endpoint"),
            token_endpoint=token,
            registration_endpoint=data.get("registration_endpoint"),
            scopes_supported=strings("scopes_supported"),
            code_challenge_methods_supported=strings("code_challenge_methods_supported"),
            token_endpoint_auth_methods_supported=strings("token_endpoint_auth_methods_supported"),
            grant_types_supported=strings("grant_types_supported"),
            client_id_metadata_document_supported=data.get("client_id_metadata_document_supported")
            is True,
            authorization_response_iss_parameter_supported=data.get(
                "authorization_response_iss_parameter_supported"
            )
            is True,
            raw=dict(data),
        )

    @classmethod
    def defaults(cls, base: str) -> AuthServerMetadata:
        """The 2025-03-26 default endpoints on ``base`` (no metadata published)."""
        base = base.rstrip("/")
        return cls(
            issuer=base,
            authorization_endpoint=f"{base}/authorize",
            token_endpoint=f"{base}/token",
            registration_endpoint=f"{base}/register",
            code_challenge_methods_supported=("S256",),
            defaulted=True,
        )


@dataclass(frozen=True)
class Discovery:
    """The outcome: which resource to ask tokens for, from which authorization server."""

    resource: str
    metadata: AuthServerMetadata
    protected_resource: ProtectedResource | None = None

    @property
    def issuer(self) -> str:
        return self.metadata.issuer

    def to_json(self) -> dict[str, Any]:
        prm = self.protected_resource
        return {
            "resource": self.resource,
            "as_metadata": self.metadata.raw or None,
            "as_defaulted": self.metadata.defaulted,
            "issuer": self.metadata.issuer,
            "prm": prm.raw if prm is not None else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Discovery | None:
        """Rebuild a stored discovery; None when the record is unusable."""
        try:
            if data.get("as_defaulted"):
                metadata = AuthServerMetadata.defaults(str(data["issuer"]))
            else:
                metadata = AuthServerMetadata.from_json(dict(data["as_metadata"]))
            prm = _prm(data["prm"]) if data.get("prm") else None
            return cls(resource=str(data["resource"]), metadata=metadata, protected_resource=prm)
        except (KeyError, TypeError, ValueError, AuthRequired):
            return None


def prm_urls(server_url: str, challenge: Challenge | None) -> list[str]:
    """PRM URLs to try, in order: the challenge's, then path-inserted, then root."""
    urls: list[str] = []
    if challenge is not None and challenge.resource_metadata:
        candidate = challenge.resource_metadata
        # A plain-http metadata URL is followed only for a loopback http server (local
        # development); otherwise a challenge could point us at any http service.
        if urlsplit(candidate).scheme.lower() != "http" or _loopback_http(server_url):
            urls.append(candidate)
        else:
            log.warning(
                "ignoring the plain-http resource_metadata URL %s in the challenge of %s",
                redact_url(candidate),
                redact_url(server_url),
            )
    parts = urlsplit(server_url)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if path:
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def _loopback_http(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme.lower() == "http" and is_loopback_host(parts.hostname)


def as_metadata_urls(issuer: str) -> list[str]:
    """Metadata URLs for ``issuer`` in spec order (RFC 8414 first, then OIDC)."""
    parts = urlsplit(issuer)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server",
        f"{base}/.well-known/openid-configuration",
    ]


def _prm(data: dict[str, Any]) -> ProtectedResource:
    servers = data.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
        raise AuthRequired("the protected resource metadata lists no authorization_servers")
    scopes = data.get("scopes_supported")
    return ProtectedResource(
        resource=str(data.get("resource") or ""),
        authorization_servers=tuple(servers),
        scopes_supported=tuple(str(s) for s in scopes) if isinstance(scopes, list) else None,
        raw=dict(data),
    )


def fetch_protected_resource(
    http: Http, server_url: str, challenge: Challenge | None
) -> ProtectedResource | None:
    """The server's PRM (first URL that answers), validated; None when none exists.

    Raises:
        AuthRequired: the PRM names another resource, lists no authorization server, or is
            served over plain http off loopback.
    """
    if challenge is not None and challenge.resource_metadata:
        # The server's own pointer is a hop like any other: refused, not skipped.
        http.check(challenge.resource_metadata, "protected resource metadata")
    for url in prm_urls(server_url, challenge):
        data = http.get_json(url, "protected resource metadata")
        if data is None:
            continue
        prm = _prm(data)
        if not prm.resource:
            raise AuthRequired(
                f"the protected resource metadata at {redact_url(url)} has no 'resource'"
            )
        if not resource_covers(prm.resource, server_url):
            raise AuthRequired(
                f"the protected resource metadata at {redact_url(url)} is for "
                f"{redact_url(prm.resource)!r}, not for {redact_url(canonical_url(server_url))!r}; refusing to authorize for another resource"
            )
        return prm
    return None


def same_issuer(a: str | None, b: str | None) -> bool:
    """Issuer identifiers compared as RFC 8414 does here (a trailing slash aside)."""
    return a is not None and b is not None and a.rstrip("/") == b.rstrip("/")


def require_issuer(expected: str | None, metadata: AuthServerMetadata) -> None:
    """Credentials bound to ``expected`` may go to ``metadata``'s server only when it is that
    issuer (None: not bound yet, the first use binds them). Checked before anything is sent.

    Raises:
        AuthRequired: naming both issuers (redacted).
    """
    if expected is not None and not same_issuer(expected, metadata.issuer):
        raise AuthRequired(
            f"the configured credentials belong to the authorization server "
            f"{redact_url(expected)}; refusing to send them to {redact_url(metadata.issuer)}"
        )


def issuer_mismatch(expected: str, found: str, server_url: str) -> AuthRequired:
    """The error for credentials of ``expected`` while the server now names ``found``."""
    return AuthRequired(
        f"MCP server {redact_url(server_url)} now names the authorization server "
        f"{redact_url(found)}, but the configured credentials belong to "
        f"{redact_url(expected)}; nothing was sent to {redact_url(found)} (if the server "
        f"really moved, pass issuer={redact_url(found)!r} with credentials for it)",
        redact_url(server_url),
    )


def _check_endpoints(http: Http, metadata: AuthServerMetadata) -> AuthServerMetadata:
    """Every endpoint of ``metadata`` passes the URL policy before any is used."""
    for what, url in (
        ("authorization endpoint", metadata.authorization_endpoint),
        ("token endpoint", metadata.token_endpoint),
        ("registration endpoint", metadata.registration_endpoint),
    ):
        if url:
            http.check(url, what)
    return metadata


def fetch_as_metadata(http: Http, issuer: str) -> AuthServerMetadata | None:
    """The metadata of ``issuer`` (first URL in spec order that answers), or None.

    Raises:
        AuthRequired: a document whose ``issuer`` differs from ``issuer`` (RFC 8414 §3.3,
            MCP 2026-07-28: such metadata must not be used), or an issuer or endpoint the
            URL policy refuses.
    """
    http.check(issuer, "authorization server")
    for url in as_metadata_urls(issuer):
        data = http.get_json(url, "authorization server metadata")
        if data is None:
            continue
        found = data.get("issuer")
        if not isinstance(found, str) or found.rstrip("/") != issuer.rstrip("/"):
            raise AuthRequired(
                f"the authorization server metadata at {redact_url(url)} names issuer {found!r}, not "
                f"{issuer!r}; refusing to use it (RFC 8414 issuer validation)"
            )
        return _check_endpoints(http, AuthServerMetadata.from_json(data))
    return None


def discover(
    http: Http,
    server_url: str,
    challenge: Challenge | None = None,
    *,
    issuer: str | None = None,
) -> Discovery:
    """Run discovery for ``server_url`` (see the module docstring).

    Args:
        issuer: the authorization server the caller's credentials belong to: no other is
            considered (nor contacted).

    Raises:
        AuthRequired: discovery failed; the message says at which step.
    """
    require_secure(server_url, "MCP server")
    prm = fetch_protected_resource(http, server_url, challenge)
    if prm is not None:
        candidates = list(prm.authorization_servers)
        if issuer is not None:
            candidates = [s for s in candidates if same_issuer(s, issuer)]
            if not candidates:
                raise issuer_mismatch(issuer, prm.authorization_servers[0], server_url)
        for candidate in candidates:
            metadata = fetch_as_metadata(http, candidate)
            if metadata is not None:
                return Discovery(
                    resource=canonical_url(prm.resource), metadata=metadata, protected_resource=prm
                )
        raise AuthRequired(
            f"no authorization server metadata found for {', '.join(prm.authorization_servers)}"
        )
    # A 2025-03-26 server: the authorization base URL is the server URL without its path.
    base = origin_of(server_url)
    log.debug(
        "no protected resource metadata for %s; using %s (2025-03-26)",
        redact_url(server_url),
        redact_url(base),
    )
    if issuer is not None and not same_issuer(base, issuer):
        raise issuer_mismatch(issuer, base, server_url)
    metadata = fetch_as_metadata(http, base) or _check_endpoints(
        http, AuthServerMetadata.defaults(base)
    )
    return Discovery(resource=canonical_url(server_url), metadata=metadata)
