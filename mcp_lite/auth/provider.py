"""``OAuth``: the object passed as ``auth=`` to ``mcp_lite.connect`` for a protected server.

The HTTP transports ask it for a token before each request (``token()``) and, when the
server answers 401 (or 403 ``insufficient_scope``), for a new one (``refresh(sent_token,
challenge=..., status=...)``) before retrying. Everything else happens inside:

- ``token()``: the stored token, refreshed first when it expires within a minute;
- ``refresh`` after 401: another thread already got a new token → that one; else the refresh
  grant; else the full flow (discovery, registration, authorization);
- ``refresh`` after 403 ``insufficient_scope``: a new authorization for the union of the scopes
  asked before and the challenged ones (the transport bounds how often);
- tokens, the client registration and the discovered metadata go to the store, so the next
  process refreshes without a browser.

Where the user comes in: ``authorization_handler(url) -> redirect_url`` when given (headless:
show the URL, get the redirect back); otherwise the browser is opened and the redirect
arrives on a loopback server on ``127.0.0.1`` (random port). ``open_browser=False`` without
a handler makes a missing login an immediate ``AuthRequired`` (cron jobs, web apps) instead of
a wait. ``grant=ClientCredentials(...)``, ``IdJagGrant(...)`` or ``WorkloadIdentity(...)``
needs no user at all.

DPoP (RFC 9449, ``dpop.py``): with ``dpop=None`` (the default) tokens are bound to a key of
this client when the authorization server lists ES256 in ``dpop_signing_alg_values_supported``
or the MCP server's challenge uses the ``DPoP`` scheme; ``True`` insists, ``False`` never.
The key is kept in the store with the tokens it binds. The transports ask
``authorization_headers(token, method, url)`` for each request (``Authorization: DPoP`` and a
fresh proof) and hand every response's headers to ``observe_response`` (a ``DPoP-Nonce``).

Thread safety: one lock per object; a login in progress blocks the other threads that need a
token until it ends (bounded by ``callback_timeout``). The object holds tokens for one MCP
server: ``bind`` (called by the transports with their URL) refuses any other URL, so a token
is never sent to a resource it was not issued for.

Deadlines: ``token(timeout=)`` and ``refresh(..., timeout=)`` take the seconds the calling
request still waits (the transports pass them). Waiting for the lock, every HTTP exchange (a
total, not per read) and the wait for the browser's redirect end by then, with
``RequestTimeout``; without ``timeout``, each exchange ends after ``timeout`` seconds (the
constructor's) and the browser wait after ``callback_timeout``.

Processes sharing a store cooperate: a refresh runs under the store's ``lock`` for that
token record; it re-reads the record first and refreshes only when the stored token is still
the stale one (another process may have refreshed already: its token is used), writes the
result, then unlocks. An ``invalid_grant`` answer re-reads the record before giving up (a
process that did not take the lock may have rotated the refresh token). So an authorization
server that rotates refresh tokens and revokes the whole family on reuse never sees a reuse.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
import webbrowser
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from .._secrets import redact_url
from ..errors import AuthRequired, ConfigError, RequestTimeout
from ._loopback import LoopbackReceiver
from ._net import (
    DEFAULT_TIMEOUT,
    Http,
    OAuthError,
    canonical_url,
    require_loopback_redirect,
    require_secure,
)
from .discovery import Challenge, Discovery, discover, fetch_protected_resource, parse_challenge
from .dpop import INSTALL_HINT as DPOP_INSTALL_HINT
from .dpop import DPoPKey, dpop_available, server_supports_dpop
from .flow import AuthorizationRequest, ClientCredentials, IdJagGrant, refresh, select_scope
from .registration import ClientInfo, resolve_client
from .storage import FileTokenStore, TokenSet, TokenStore, store_lock
from .workload import WorkloadIdentity

__all__ = ["OAuth", "fetch_redirect"]

log = logging.getLogger("mcp_lite.auth")

DEFAULT_HEADLESS_REDIRECT = "http://127.0.0.1:8976/callback"
# How long a refresh waits for another process's refresh of the same record when the
# caller gave no deadline (that refresh is bounded by its own exchange timeout).
_STORE_LOCK_WAIT = 2 * DEFAULT_TIMEOUT


class OAuth:
    """OAuth 2.1 for one MCP server (module docstring).

    Args:
        server_url: the MCP server's URL; None binds to the first URL a transport uses.
        client_id, client_secret: pre-registered credentials (used first when given).
        token_endpoint_auth_method: force ``none``/``client_secret_basic``/``client_secret_post``.
        client_metadata_url: the https URL of your Client ID Metadata Document, used as
            ``client_id`` where the server supports CIMD.
        client_name: shown by the authorization server (registration).
        scope: scopes to ask for when the server's challenge names none.
        grant: ``ClientCredentials``, ``IdJagGrant`` or ``WorkloadIdentity`` for unattended
            use.
        dpop: bind tokens to a key (RFC 9449): None when the servers offer or ask for it,
            True always (the ``jwt`` extra is needed), False never.
        authorization_handler: ``fn(authorization_url) -> redirect_url`` (headless).
        open_browser: when there is no handler, open the browser (True) or fail (False).
        redirect_uri: a loopback ``http`` redirect URI (default: a random port for the
            browser flow, ``http://127.0.0.1:8976/callback`` for a handler).
        store: a ``TokenStore``; default ``FileTokenStore()`` (0600 files in your home).
        application_type: sent with dynamic registration (``native`` for local clients).
        offline_access: ask for ``offline_access`` when the server lists it.
        callback_timeout: seconds to wait for the browser to come back.
        timeout: seconds per HTTP exchange with the authorization server (a total).
        session: a ``requests.Session`` for the authorization server (proxies, CA bundle);
            mount ``mcp_lite.auth._net.WatchedAdapter`` on it to keep totals exact.
    """

    def __init__(
        self,
        server_url: str | None = None,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcp-lite",
        scope: str | None = None,
        grant: ClientCredentials | IdJagGrant | WorkloadIdentity | None = None,
        authorization_handler: Callable[[str], str] | None = None,
        open_browser: bool = True,
        redirect_uri: str | None = None,
        store: TokenStore | None = None,
        application_type: str = "native",
        offline_access: bool = True,
        callback_timeout: float = 300.0,
        timeout: float = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
        dpop: bool | None = None,
    ) -> None:
        if redirect_uri is not None:
            require_loopback_redirect(redirect_uri)
        if client_secret is not None and client_id is None:
            raise ConfigError("client_secret needs a client_id")
        self._server_url = canonical_url(server_url) if server_url else None
        if server_url:
            require_secure(server_url, "MCP server")
        self._preregistered = (
            ClientInfo(
                client_id=client_id,
                client_secret=client_secret,
                token_endpoint_auth_method=token_endpoint_auth_method or "auto",
            )
            if client_id
            else None
        )
        self._client_metadata_url = client_metadata_url
        self._client_name = client_name
        self._scope = scope
        self._grant = grant
        self._handler = authorization_handler
        self._open_browser = open_browser
        self._redirect_uri = redirect_uri
        self._store: TokenStore = store if store is not None else FileTokenStore()
        self._application_type = application_type
        self._offline_access = offline_access
        self._callback_timeout = callback_timeout
        self._http = Http(session, timeout)
        self._dpop = dpop
        if dpop is True and not dpop_available():
            raise ConfigError(f"dpop=True needs PyJWT and cryptography: {DPOP_INSTALL_HINT}")
        self._lock = threading.RLock()
        self._bound: str | None = None  # the last URL bind() accepted, as given
        self._loaded = False
        self._discovery: Discovery | None = None
        self._tokens: TokenSet | None = None
        self._requested_scope: str | None = None

    # --- what the transports call -----------------------------------------------------------

    def bind(self, url: str) -> None:
        """Tie this object to the MCP server at ``url`` (first call), or check that ``url``
        is that server.

        Raises:
            ConfigError: ``url`` is another server: its tokens must not go there.
        """
        if url == self._bound:
            return  # the URL checked last time (every request asks: keep it cheap)
        target = canonical_url(url)
        with self._lock:
            if self._server_url is None:
                require_secure(url, "MCP server")
                self._server_url = target
            elif target != self._server_url:
                raise ConfigError(
                    f"this OAuth object holds credentials for "
                    f"{self._shown_url}; refusing to send them to {redact_url(target)}"
                )
            self._bound = url

    def token(self, timeout: float | None = None) -> str | None:
        """The access token to send, or None (no login yet: the server's 401 starts one).

        Args:
            timeout: seconds the calling request still waits (None: this object's own
                limits); a refresh that is due ends by then.

        Raises:
            RequestTimeout: the lock or a due refresh did not finish within ``timeout``.
        """
        if self._loaded and self._lock.acquire(blocking=False):
            try:  # nothing to load or renew, nobody logging in: no deadline to arm
                tokens = self._tokens
                if tokens is None or not tokens.expired():
                    return tokens.access_token if tokens is not None else None
            finally:
                self._lock.release()
        with self._locked(timeout):
            self._load()
            tokens = self._tokens
            if tokens is None:
                return None
            if tokens.expired():
                if not self._renew(tokens.access_token):
                    return None
                tokens = self._tokens
            return tokens.access_token if tokens is not None else None

    def refresh(
        self,
        sent_token: str | None,
        *,
        challenge: Challenge | str | None = None,
        status: int = 401,
        timeout: float | None = None,
    ) -> str | None:
        """A new token after the server refused ``sent_token``.

        Returns None when there is nothing better to send (a 403 that is not about scope).

        Args:
            timeout: seconds the calling request still waits; a login it starts (browser
                included) ends by then.

        Raises:
            AuthRequired: authorization failed or needs a user this object cannot reach.
            RequestTimeout: ``timeout`` passed first.
        """
        parsed = parse_challenge(challenge) if isinstance(challenge, str) else challenge
        with self._locked(timeout):
            self._load()
            current = self._tokens.access_token if self._tokens is not None else None
            if parsed is not None and parsed.error == "use_dpop_nonce" and current:
                return current  # the transport sends it again with the new nonce
            if current is not None and current != sent_token and not self._tokens_expired():
                return current  # another request already got a new token
            if status == 403:
                if parsed is None or not parsed.insufficient_scope:
                    return None
                scope = " ".join(
                    dict.fromkeys(
                        (self._requested_scope or "").split() + (parsed.scope or "").split()
                    )
                )
                return self._authorize(parsed, scope or None)
            if self._renew(sent_token):
                assert self._tokens is not None
                return self._tokens.access_token
            return self._authorize(parsed, None)

    def authorization_headers(self, token: str, method: str, url: str) -> dict[str, str]:
        """The headers that present ``token`` on a ``method`` request to ``url``: a bearer
        token, or a DPoP-bound one with a fresh proof."""
        key, tokens = self._http.dpop, self._tokens
        if key is not None and tokens is not None and tokens.token_type.lower() == "dpop":
            return {"Authorization": f"DPoP {token}", "DPoP": key.proof(method, url, token)}
        return {"Authorization": f"Bearer {token}"}

    def observe_response(self, url: str, headers: Mapping[str, str]) -> bool:
        """Look at the headers of a response from the MCP server at ``url``: True when it
        sent a new ``DPoP-Nonce`` (the request may be sent again with it)."""
        key = self._http.dpop
        return key is not None and key.remember_nonce(url, headers.get("DPoP-Nonce"))

    # --- explicit use (CLI, scripts) ----------------------------------------------------------

    def login(self) -> bool:
        """Log in now (``mcp-lite auth``): probe the server for its challenge, then run the
        flow. Returns False when the server does not ask for authorization."""
        with self._locked(None):
            url = self._require_url()
            challenge, protected = self._probe(url)
            if not protected:
                # no 401: only protected-resource metadata (RFC 9728) says it still wants a
                # login; the 2025-03-26 fallback would invent endpoints for any server
                try:
                    if fetch_protected_resource(self._http, url, None) is None:
                        return False
                    discover(self._http, url, None)
                except AuthRequired:
                    return False
            self._authorize(challenge, None)
            return True

    def logout(self, *, forget_client: bool = False) -> None:
        """Forget this server's tokens (and, with ``forget_client``, the registration)."""
        with self._lock:
            self._load()
            url = self._require_url()
            disc = self._discovery
            if disc is not None:
                self._store.delete(_tokens_key(disc))
                if forget_client:
                    self._store.delete(f"client {disc.issuer}")
            self._store.delete(f"resource {url}")
            self._tokens = None
            self._discovery = None

    @property
    def authorized(self) -> bool:
        """True when a token is held (it may still be refused by the server)."""
        with self._lock:
            self._load()
            return self._tokens is not None

    def __repr__(self) -> str:
        issuer = self._discovery.issuer if self._discovery is not None else None
        url = redact_url(self._server_url) if self._server_url else None
        shown = redact_url(issuer) if issuer else None
        return f"OAuth(server_url={url!r}, issuer={shown!r}, authorized={self._tokens is not None})"

    # --- internals ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, timeout: float | None) -> Iterator[None]:
        """This object's lock and, within it, the caller's deadline on every exchange."""
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        if not self._lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            raise RequestTimeout(
                f"no OAuth token for {redact_url(self._server_url or '')} within "
                f"{timeout:g} seconds (another thread is getting one)",
                timeout,
            )
        try:
            with self._http.limit(deadline):
                yield
        finally:
            self._lock.release()

    def _require_url(self) -> str:
        if self._server_url is None:
            raise ConfigError("OAuth needs the MCP server URL (OAuth(url) or connect(url, ...))")
        return self._server_url

    def _tokens_expired(self) -> bool:
        return self._tokens is None or self._tokens.expired()

    def _load(self) -> None:
        if self._loaded or self._server_url is None:
            return
        self._loaded = True
        record = self._store.load(f"resource {self._server_url}")
        disc = Discovery.from_json(record.get("discovery") or {}) if record else None
        if disc is None:
            return
        saved = self._store.load(_tokens_key(disc))
        self._discovery = disc
        if saved:
            self._tokens = TokenSet.from_json(saved.get("tokens") or {})
            self._requested_scope = saved.get("requested_scope")
            self._load_dpop_key(saved)

    def _save(self, disc: Discovery, tokens: TokenSet, scope: str | None) -> None:
        self._discovery, self._tokens, self._requested_scope = disc, tokens, scope
        self._store.save(f"resource {self._require_url()}", {"discovery": disc.to_json()})
        record: dict[str, Any] = {"tokens": tokens.to_json(), "requested_scope": scope}
        if self._http.dpop is not None:
            record["dpop_key"] = self._http.dpop.to_json()
        self._store.save(_tokens_key(disc), record)

    def _read_tokens(self, disc: Discovery) -> TokenSet | None:
        """The token record as the store holds it now (another process may have written)."""
        saved = self._store.load(_tokens_key(disc))
        if not saved:
            return None
        tokens = TokenSet.from_json(saved.get("tokens") or {})
        if tokens is not None:
            self._requested_scope = saved.get("requested_scope")
            self._load_dpop_key(saved)
        return tokens

    def _load_dpop_key(self, saved: dict[str, Any]) -> None:
        """Take the DPoP key stored with the tokens (a refresh of a bound token needs it)."""
        if self._dpop is False or not isinstance(saved.get("dpop_key"), dict):
            return
        if not dpop_available():
            return  # the bound tokens are unusable here; a new login asks for the extra
        key = DPoPKey.from_json(saved["dpop_key"])
        if key is not None and (
            self._http.dpop is None or self._http.dpop.thumbprint() != key.thumbprint()
        ):
            self._http.dpop = key

    def _choose_dpop(self, disc: Discovery, challenge: Challenge | None) -> None:
        """Bind the next tokens to a key when this object and the servers call for it."""
        if self._dpop is False:
            self._http.dpop = None
            return
        required = challenge is not None and challenge.scheme == "DPoP"
        if not (self._dpop or required or server_supports_dpop(disc.metadata.raw)):
            self._http.dpop = None
            return
        if not dpop_available():
            if required:
                raise ConfigError(
                    f"MCP server {self._shown_url} requires DPoP-bound tokens, which need "
                    f"PyJWT and cryptography: {DPOP_INSTALL_HINT}"
                )
            return  # offered, not required: plain bearer tokens
        if self._http.dpop is None:
            self._http.dpop = DPoPKey.generate()

    def _renew(self, stale: str | None) -> bool:
        """Replace the token ``stale`` (expired, or refused by the server): under the store's
        lock, take a newer one another process stored, else run the refresh grant (or the
        unattended grant) and store the result. False when no new token could be had."""
        disc = self._discovery
        if disc is None or self._tokens is None:
            return False
        left = self._http.remaining()
        wait = _STORE_LOCK_WAIT if left is None else left
        with store_lock(self._store, _tokens_key(disc), wait):
            stored = self._read_tokens(disc)
            if stored is not None:
                if stored.access_token != stale and not stored.expired():
                    self._tokens = stored  # another process refreshed already
                    return True
                self._tokens = stored  # its refresh token is the newest one
            tokens = self._tokens
            try:
                new = self._grant_refresh(disc, tokens)
            except OAuthError as exc:
                if exc.code != "invalid_grant":
                    log.info("token refresh for %s failed: %s", self._shown_url, exc)
                    return False
                # Someone may have rotated the refresh token without the lock (a store
                # without one, another machine): re-read before giving up.
                again = self._read_tokens(disc)
                if again is None or again.refresh_token == tokens.refresh_token:
                    log.info("token refresh for %s refused: %s", self._shown_url, exc)
                    self._tokens = None
                    return False
                self._tokens = again
                if not again.expired() and again.access_token != stale:
                    return True
                try:
                    new = self._grant_refresh(disc, again)
                except AuthRequired as retry:
                    log.info("token refresh for %s failed: %s", self._shown_url, retry)
                    self._tokens = None
                    return False
            except AuthRequired as exc:
                log.info("token refresh for %s failed: %s", self._shown_url, exc)
                return False
            if new is None:
                return False
            self._save(disc, new, self._requested_scope)
            return True

    @property
    def _shown_url(self) -> str:
        return redact_url(self._server_url or "")

    def _grant_refresh(self, disc: Discovery, tokens: TokenSet) -> TokenSet | None:
        """The refresh grant, or a new unattended grant; None when neither applies."""
        if tokens.refresh_token:
            client = self._client_for_refresh(disc)
            if client is None:
                return None
            return refresh(self._http, disc.metadata, client, tokens, disc.resource)
        if self._grant is not None:
            return self._grant.fetch(
                self._http, disc.metadata, disc.resource, self._requested_scope
            )
        return None

    def _client_for_refresh(self, disc: Discovery) -> ClientInfo | None:
        if isinstance(self._grant, ClientCredentials):
            return self._grant.client(disc.metadata)
        if self._preregistered is not None:
            return resolve_client(
                self._http,
                disc.metadata,
                preregistered=self._preregistered,
                stored=None,
                client_metadata_url=None,
                client_name="",
                redirect_uris=[],
                grant_types=[],
                scope=None,
            )
        stored = ClientInfo.from_json(self._store.load(f"client {disc.issuer}") or {})
        if stored is not None and stored.issuer == disc.issuer:
            return stored
        if self._client_metadata_url and disc.metadata.client_id_metadata_document_supported:
            return ClientInfo(
                client_id=self._client_metadata_url, issuer=disc.issuer, source="cimd"
            )
        return None

    def _probe(self, url: str) -> tuple[Challenge | None, bool]:
        body = b'{"jsonrpc":"2.0","id":0,"method":"ping"}'
        status, headers, _ = self._http.exchange(
            "POST",
            url,
            "MCP server probe",
            data=body,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        return parse_challenge(headers.get("WWW-Authenticate")), status == 401

    def _authorize(self, challenge: Challenge | None, scope: str | None) -> str:
        """The full flow; returns the new access token."""
        url = self._require_url()
        if self._grant is None:
            self._check_user_reachable()  # before any discovery: nothing to do it for
        disc = discover(self._http, url, challenge)
        self._choose_dpop(disc, challenge)
        prm = disc.protected_resource
        if scope is None:
            scope = select_scope(
                challenge.scope if challenge else None,
                prm,
                disc.metadata,
                offline_access=self._offline_access,
                requested=self._scope,
            )
        if self._grant is not None:
            tokens = self._grant.fetch(
                self._http, disc.metadata, disc.resource, scope or self._grant.scope
            )
        else:
            tokens = self._authorization_code(disc, scope)
        self._save(disc, tokens, scope)
        return tokens.access_token

    def _check_user_reachable(self) -> None:
        if self._handler is None and not self._open_browser:
            raise AuthRequired(
                f"MCP server {self._shown_url} needs a login: run "
                f"`mcp-lite auth {self._shown_url}` (or pass an "
                f"authorization_handler)",
                self._shown_url,
            )

    def _authorization_code(self, disc: Discovery, scope: str | None) -> TokenSet:
        self._check_user_reachable()
        stored = ClientInfo.from_json(self._store.load(f"client {disc.issuer}") or {})
        if self._handler is not None:
            redirect_uri = self._redirect_uri or DEFAULT_HEADLESS_REDIRECT
            client = self._client(disc, stored, redirect_uri, scope)
            request = AuthorizationRequest.build(
                disc.metadata,
                client,
                redirect_uri=redirect_uri,
                resource=disc.resource,
                scope=scope,
            )
            redirect_url = self._handler(request.url)
        else:
            port, path = _port_and_path(self._redirect_uri, stored)
            with LoopbackReceiver(port, path) as receiver:
                client = self._client(disc, stored, receiver.redirect_uri, scope)
                request = AuthorizationRequest.build(
                    disc.metadata,
                    client,
                    redirect_uri=receiver.redirect_uri,
                    resource=disc.resource,
                    scope=scope,
                )
                _show(request.url)
                left = self._http.remaining()
                wait = self._callback_timeout if left is None else min(left, self._callback_timeout)
                redirect_url = receiver.wait(wait)
        code = request.code_from(str(redirect_url))
        return request.exchange(self._http, disc.metadata, client, code)

    def _client(
        self, disc: Discovery, stored: ClientInfo | None, redirect_uri: str, scope: str | None
    ) -> ClientInfo:
        grant_types = ["authorization_code", "refresh_token"]
        client = resolve_client(
            self._http,
            disc.metadata,
            preregistered=self._preregistered,
            stored=stored,
            client_metadata_url=self._client_metadata_url,
            client_name=self._client_name,
            redirect_uris=[redirect_uri],
            grant_types=grant_types,
            scope=scope,
            application_type=self._application_type,
        )
        if client.source == "dcr" and client is not stored:
            self._store.save(f"client {disc.issuer}", client.to_json())
        return client


def _tokens_key(disc: Discovery) -> str:
    return f"tokens {disc.issuer} {disc.resource}"


def _port_and_path(configured: str | None, stored: ClientInfo | None) -> tuple[int, str]:
    """Where the loopback receiver listens: the configured redirect URI, else the one a
    stored registration was made with (so it stays valid), else a random port."""
    for uri in ([configured] if configured else []) + list(stored.redirect_uris if stored else ()):
        parts = urlsplit(uri)
        if parts.hostname == "127.0.0.1" and parts.port:
            return parts.port, parts.path or "/callback"
    return 0, "/callback"


def _show(url: str) -> None:
    """Open ``url`` in the browser (never through a shell); print it when that fails."""
    opened = False
    try:
        opened = webbrowser.open(url)
    except Exception as exc:
        log.debug("could not open a browser: %s", type(exc).__name__)
    if not opened:
        print(f"mcp-lite: open this URL in a browser to authorize:\n  {url}", file=sys.stderr)


def fetch_redirect(url: str, *, timeout: float = DEFAULT_TIMEOUT) -> str:
    """An ``authorization_handler`` for authorization servers that approve without a user
    (tests, the conformance harness): GET the authorization URL and return where it
    redirects, without following it.

    Raises:
        AuthRequired: the server did not redirect.
    """
    require_secure(url, "authorization")
    # A total deadline, like every OAuth exchange (RequestTimeout when it passes).
    status, headers, _ = Http(timeout=timeout).exchange("GET", url, "authorization")
    location = headers.get("Location")
    if status not in (301, 302, 303, 307, 308) or not location:
        raise AuthRequired(
            f"the authorization endpoint answered HTTP {status} instead of redirecting"
        )
    return urljoin(url, location)
