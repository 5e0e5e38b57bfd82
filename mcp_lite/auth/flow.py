"""The OAuth grants: authorization code with PKCE, refresh, client credentials (secret or
``private_key_jwt``) and the enterprise ID-JAG exchange, with the scope selection and the
checks of the redirect (see docs/explanation/oauth.md, "Grants and scopes").
"""

from __future__ import annotations

import base64
import secrets
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote_plus, urlencode, urlsplit, urlunsplit

from .._otel import oauth_span
from .._secrets import redact_url
from ..errors import AuthRequired, ConfigError
from ._net import Http, oauth_error, require_secure
from .discovery import AuthServerMetadata, ProtectedResource, require_issuer
from .pkce import Pkce, new_state
from .registration import ClientInfo
from .storage import TokenSet

__all__ = [
    "AuthorizationRequest",
    "ClientCredentials",
    "IdJagGrant",
    "merge_scopes",
    "require_issuer",
    "select_scope",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def select_scope(
    challenge_scope: str | None,
    prm: ProtectedResource | None,
    metadata: AuthServerMetadata,
    *,
    offline_access: bool = True,
    requested: str | None = None,
) -> str | None:
    """The ``scope`` to request (module docstring), or None to omit it.

    ``requested`` (configured by the user) wins over everything but the challenge.
    """
    if challenge_scope:
        base = challenge_scope.split()
    elif requested:
        base = requested.split()
    elif prm is not None and prm.scopes_supported:
        base = list(prm.scopes_supported)
    else:
        base = []
    if (
        offline_access
        and metadata.scopes_supported
        and "offline_access" in metadata.scopes_supported
        and "offline_access" not in base
        and base
    ):
        base.append("offline_access")
    return " ".join(dict.fromkeys(base)) or None


def merge_scopes(*scopes: str | None) -> str | None:
    """The union of space-separated scope strings, in first-seen order."""
    out: list[str] = []
    for scope in scopes:
        out.extend((scope or "").split())
    return " ".join(dict.fromkeys(out)) or None


# --- client authentication at the token endpoint -------------------------------------------------


def _basic(client_id: str, secret: str) -> str:
    # RFC 6749 §2.3.1: both parts form-urlencoded before base64.
    raw = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


def private_key_jwt(client_id: str, audience: str, private_key: Any, algorithm: str) -> str:
    """A client assertion (RFC 7523 §2.2): ``iss`` = ``sub`` = client id, ``aud`` = the
    authorization server's issuer, short-lived, unique ``jti``. Needs PyJWT
    (``pip install 'mcp-lite-client[jwt]'``)."""
    try:
        import jwt
    except ImportError:  # pragma: no cover - depends on the optional extra
        raise ConfigError(
            "private_key_jwt needs PyJWT: pip install 'mcp-lite-client[jwt]'"
        ) from None
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": str(uuid.uuid4()),
    }
    try:
        return str(jwt.encode(claims, private_key, algorithm=algorithm))
    except Exception as exc:  # a bad key: never quote it
        raise ConfigError(
            f"cannot sign the client assertion with {algorithm}: {type(exc).__name__}"
        ) from None


def token_request(
    http: Http,
    metadata: AuthServerMetadata,
    client: ClientInfo,
    form: dict[str, str],
    what: str,
    *,
    private_key: Any = None,
    signing_algorithm: str = "RS256",
    previous: TokenSet | None = None,
) -> TokenSet:
    """POST ``form`` to the token endpoint with ``client``'s authentication, and a DPoP
    proof when ``http.dpop`` holds a key (sent once more with the server's nonce after a
    ``use_dpop_nonce`` answer, RFC 9449 §8).

    Raises:
        AuthRequired: the server refused (its ``error``/``error_description``, scrubbed).
    """
    endpoint = metadata.token_endpoint
    if client.client_secret or client.token_endpoint_auth_method == "private_key_jwt":
        # The one place a client secret or signing key leaves: only to its own issuer.
        require_issuer(client.issuer, metadata)
    dpop = http.dpop
    # A child span "oauth <grant>" when OpenTelemetry is on (no secret in its attributes).
    with oauth_span(form.get("grant_type"), endpoint):
        for attempt in (1, 2):
            send_form, headers = _client_authentication(
                metadata, client, form, private_key, signing_algorithm
            )
            if dpop is not None:
                headers["DPoP"] = dpop.proof("POST", endpoint)
            hidden = [client.client_secret, *(send_form.get(key) for key in _SECRET_FIELDS)]
            status, reply_headers, data = http.post_with_headers(
                endpoint, what, form=send_form, headers=headers, secrets=hidden
            )
            new_nonce = dpop is not None and dpop.remember_nonce(
                endpoint, reply_headers.get("DPoP-Nonce")
            )
            if attempt == 1 and new_nonce and data.get("error") == "use_dpop_nonce":
                continue  # RFC 9449 §8: once more, with the server's nonce in the proof
            break
        if status != 200 or not isinstance(data.get("access_token"), str):
            raise oauth_error(status, data, f"{what} at {redact_url(endpoint)}", hidden)
    token_type = str(data.get("token_type") or "Bearer")
    accepted = ("bearer", "n_a", "dpop") if dpop is not None else ("bearer", "n_a")
    if token_type.lower() not in accepted:
        raise AuthRequired(f"{what}: unsupported token type {token_type!r}")
    return TokenSet.from_response(data, previous)


_SECRET_FIELDS = (
    "code",
    "code_verifier",
    "refresh_token",
    "client_assertion",
    "assertion",
    "subject_token",
)


def _client_authentication(
    metadata: AuthServerMetadata,
    client: ClientInfo,
    form: dict[str, str],
    private_key: Any,
    signing_algorithm: str,
) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers that authenticate ``client`` (a fresh assertion each time)."""
    form = dict(form)
    headers: dict[str, str] = {}
    method = client.token_endpoint_auth_method
    secret = client.client_secret
    if method == "client_secret_basic" and secret:
        headers["Authorization"] = _basic(client.client_id, secret)
    elif method == "client_secret_post" and secret:
        form["client_id"] = client.client_id
        form["client_secret"] = secret
    elif method == "private_key_jwt":
        form["client_id"] = client.client_id
        form["client_assertion_type"] = CLIENT_ASSERTION_TYPE
        form["client_assertion"] = private_key_jwt(
            client.client_id, metadata.issuer, private_key, signing_algorithm
        )
    elif client.client_id:
        form["client_id"] = client.client_id
    return form, headers


# --- authorization code ----------------------------------------------------------------------


@dataclass
class AuthorizationRequest:
    """One authorization-code attempt: what was sent, and what the answer must match."""

    url: str = field(repr=False)  # it carries the state
    state: str = field(repr=False)
    pkce: Pkce = field(repr=False)
    redirect_uri: str
    issuer: str
    iss_required: bool
    resource: str
    scope: str | None

    @classmethod
    def build(
        cls,
        metadata: AuthServerMetadata,
        client: ClientInfo,
        *,
        redirect_uri: str,
        resource: str,
        scope: str | None,
    ) -> AuthorizationRequest:
        """Raises ``AuthRequired`` for a server without ``S256`` or an unsafe endpoint."""
        methods = metadata.code_challenge_methods_supported
        if not metadata.defaulted and (not methods or "S256" not in methods):
            raise AuthRequired(
                f"the authorization server {metadata.issuer} does not advertise PKCE S256 "
                f"(code_challenge_methods_supported={list(methods or [])}); refusing to "
                f"authorize without it"
            )
        endpoint = metadata.authorization_endpoint
        if not endpoint:
            raise AuthRequired(f"{metadata.issuer} has no authorization_endpoint")
        require_secure(endpoint, "authorization endpoint")
        pkce, state = Pkce.new(), new_state()
        params = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": pkce.challenge,
            "code_challenge_method": "S256",
            "resource": resource,
        }
        if scope:
            params["scope"] = scope
        parts = urlsplit(endpoint)
        query = "&".join(q for q in (parts.query, urlencode(params)) if q)
        url = urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
        return cls(
            url=url,
            state=state,
            pkce=pkce,
            redirect_uri=redirect_uri,
            issuer=metadata.issuer,
            iss_required=metadata.authorization_response_iss_parameter_supported,
            resource=resource,
            scope=scope,
        )

    def code_from(self, redirect_url: str) -> str:
        """The ``code`` of the redirect, after the ``state`` and ``iss`` checks.

        Raises:
            AuthRequired: wrong or missing ``state``, wrong or missing ``iss``, an error
                answer, or no code.
        """
        query = parse_qs(urlsplit(redirect_url).query, keep_blank_values=True)

        def one(name: str) -> str | None:
            values = query.get(name)
            return values[0] if values else None

        state = one("state")
        if state is None or not secrets.compare_digest(state, self.state):
            raise AuthRequired(
                "the authorization response has a missing or wrong 'state'; aborted (possible CSRF)"
            )
        iss = one("iss")
        if iss is not None and iss != self.issuer:
            raise AuthRequired(
                f"the authorization response came from issuer {iss!r}, not "
                f"{self.issuer!r}; aborted (RFC 9207 mix-up protection)"
            )
        if iss is None and self.iss_required:
            raise AuthRequired(
                f"the authorization response has no 'iss' although "
                f"{self.issuer} promises one; aborted (RFC 9207)"
            )
        error = one("error")
        if error is not None:
            description = (one("error_description") or "")[:200]
            raise AuthRequired(
                f"authorization was refused: {error[:100]}"
                + (f" ({description})" if description else "")
            )
        code = one("code")
        if not code:
            raise AuthRequired("the authorization response carries no code")
        return code

    def exchange(
        self, http: Http, metadata: AuthServerMetadata, client: ClientInfo, code: str
    ) -> TokenSet:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": self.pkce.verifier,
            "resource": self.resource,
        }
        return token_request(http, metadata, client, form, "the token request")


def refresh(
    http: Http, metadata: AuthServerMetadata, client: ClientInfo, tokens: TokenSet, resource: str
) -> TokenSet:
    """The refresh-token grant; the old refresh token is kept when none comes back."""
    if not tokens.refresh_token:
        raise AuthRequired("no refresh token")
    form = {
        "grant_type": "refresh_token",
        "refresh_token": tokens.refresh_token,
        "resource": resource,
    }
    return token_request(http, metadata, client, form, "the token refresh", previous=tokens)


# --- grants without a user -------------------------------------------------------------------


@dataclass(frozen=True)
class ClientCredentials:
    """The ``client_credentials`` grant, for unattended jobs.

    Give ``client_secret`` (sent with ``client_secret_basic``, or ``client_secret_post`` when
    ``auth_method`` says so or the server supports only that), or ``private_key`` (a PEM
    string or key object) for ``private_key_jwt`` signed with ``signing_algorithm`` (needs
    the ``jwt`` extra). ``repr`` shows neither.

    ``issuer``: the authorization server these credentials belong to; they are presented to
    no other (``OAuth(..., issuer=)`` says the same; without either, the issuer of the first
    successful use is pinned in the token store).
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    private_key: Any = field(default=None, repr=False)
    signing_algorithm: str = "RS256"
    auth_method: str | None = None
    scope: str | None = None
    issuer: str | None = None

    def __post_init__(self) -> None:
        if (self.client_secret is None) == (self.private_key is None):
            raise ConfigError("ClientCredentials needs exactly one of client_secret or private_key")

    def client(self, metadata: AuthServerMetadata, issuer: str | None = None) -> ClientInfo:
        """This client at ``metadata``'s server; ``issuer`` is the one its credentials are
        bound to (``AuthRequired`` when that is another server)."""
        bound = issuer or self.issuer
        require_issuer(bound, metadata)
        if self.private_key is not None:
            method = "private_key_jwt"
        elif self.auth_method:
            method = self.auth_method
        else:
            supported = metadata.token_endpoint_auth_methods_supported or ()
            method = (
                "client_secret_post"
                if "client_secret_post" in supported and "client_secret_basic" not in supported
                else "client_secret_basic"
            )
        return ClientInfo(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method=method,
            issuer=bound or metadata.issuer,
        )

    def fetch(
        self,
        http: Http,
        metadata: AuthServerMetadata,
        resource: str,
        scope: str | None,
        issuer: str | None = None,
    ) -> TokenSet:
        form = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            form["scope"] = scope
        return token_request(
            http,
            metadata,
            self.client(metadata, issuer),
            form,
            "the client-credentials token request",
            private_key=self.private_key,
            signing_algorithm=self.signing_algorithm,
        )


@dataclass(frozen=True)
class IdJagGrant:
    """Enterprise-managed authorization (SEP-990, "cross-app access"): the user's identity
    provider exchanges its ID token for an ID-JAG (RFC 8693 token exchange), which the MCP
    server's authorization server accepts as a JWT bearer grant (RFC 7523).

    ``id_token`` may be a string or a callable returning a fresh one. ``issuer``: the MCP
    server's authorization server, the only one ``client_secret`` (and an ID-JAG) goes to.
    """

    client_id: str
    client_secret: str = field(repr=False)
    id_token: Any = field(repr=False)
    idp_token_endpoint: str
    idp_client_id: str | None = None
    idp_client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None

    def fetch(
        self,
        http: Http,
        metadata: AuthServerMetadata,
        resource: str,
        scope: str | None,
        issuer: str | None = None,
    ) -> TokenSet:
        bound = issuer or self.issuer
        # Before the identity provider mints an ID-JAG for that server, not only before
        # the secret goes there.
        require_issuer(bound, metadata)
        id_token = self.id_token() if callable(self.id_token) else str(self.id_token)
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": id_token,
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": metadata.issuer,
            "resource": resource,
        }
        if scope:
            form["scope"] = scope
        headers: dict[str, str] = {}
        if self.idp_client_id and self.idp_client_secret:
            headers["Authorization"] = _basic(self.idp_client_id, self.idp_client_secret)
        elif self.idp_client_id:
            form["client_id"] = self.idp_client_id
        hidden = [id_token, self.client_secret, self.idp_client_secret]
        status, data = http.post(
            self.idp_token_endpoint,
            "token exchange",
            form=form,
            headers=headers,
            secrets=hidden,
            configured=True,  # the user named this endpoint, not the MCP server
        )
        jag = data.get("access_token")
        if status != 200 or not isinstance(jag, str):
            raise oauth_error(
                status, data, f"the token exchange at {redact_url(self.idp_token_endpoint)}", hidden
            )
        client = ClientInfo(
            client_id=self.client_id,
            client_secret=self.client_secret,
            token_endpoint_auth_method="client_secret_basic",
            issuer=bound or metadata.issuer,
        )
        grant = {"grant_type": JWT_BEARER, "assertion": jag}
        if scope:
            grant["scope"] = scope
        return token_request(http, metadata, client, grant, "the JWT bearer grant")


def scopes_of(*values: Iterable[str] | None) -> set[str]:
    out: set[str] = set()
    for value in values:
        out.update(value or ())
    return out
