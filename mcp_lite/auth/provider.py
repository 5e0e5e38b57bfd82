"""``OAuth``: the object passed as ``auth=`` to ``mcp_lite.connect`` for a protected server. The
HTTP transports ask it for a token before each request (``token()``) and for a new one after a
401 or a 403 ``insufficient_scope`` (``refresh``); discovery, registration, the login (browser
or ``authorization_handler``), DPoP, issuer pinning and the token store happen inside, each step
within the caller's ``Deadline``. How it works: ``docs/explanation/inside-http.md`` ("OAuth").
"""

from __future__ import annotations

import contextlib
import errno
import logging
import sys
import threading
import weakref
import webbrowser
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests

from .. import _fork
from .._deadline import Deadline
from .._secrets import redact_url
from ..errors import AuthRequired, ConfigError
from ._loopback import LoopbackReceiver
from ._net import (
    DEFAULT_TIMEOUT,
    Http,
    OAuthError,
    canonical_url,
    operation_deadline,
    require_loopback_redirect,
    require_secure,
)
from ._policy import UrlPolicy
from .discovery import (
    Challenge,
    Discovery,
    discover,
    fetch_protected_resource,
    issuer_mismatch,
    parse_challenge,
    same_issuer,
)
from .dpop import INSTALL_HINT as DPOP_INSTALL_HINT
from .dpop import DPoPKey, dpop_available, server_supports_dpop
from .flow import AuthorizationRequest, ClientCredentials, IdJagGrant, refresh, select_scope
from .registration import ClientInfo, resolve_client
from .storage import FileTokenStore, TokenSet, TokenStore, store_lock
from .workload import WorkloadIdentity

__all__ = ["OAuth", "fetch_redirect"]

log = logging.getLogger("mcp_lite.auth")

DEFAULT_HEADLESS_REDIRECT = "http://127.0.0.1:8976/callback"

# Every live OAuth, so that a forked child can replace their locks (a parent thread may
# have held one at fork time: in the child nobody would ever release it).
_live: weakref.WeakSet[OAuth] = weakref.WeakSet()


def _reset_after_fork() -> None:
    for auth in list(_live):
        auth._lock = threading.RLock()


_fork.on_child(_reset_after_fork)


class OAuth:
    """OAuth 2.1 for one MCP server (module docstring).

    Args:
        server_url: the MCP server's URL; None binds to the first URL a transport uses.
        client_id, client_secret: pre-registered credentials (used first when given).
        private_network: the MCP server and its identity provider are on a private network
            you trust: a private MCP server's OAuth documents may then name private hosts
            (never loopback or link-local ones). Off by default: a server that is not on
            loopback may lead OAuth only to public ``https`` hosts.
        issuer: the authorization server the configured credentials (``client_secret``,
            ``grant``) belong to; they are never presented to another. Without it, the
            issuer of the first successful use is pinned in the store.
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
        open_browser: when there is no handler, open the browser (True) or fail (False);
            None: only when the process has a terminal (module docstring).
        redirect_uri: a loopback ``http`` redirect URI (default: a port the system picks
            for the browser flow, ``http://127.0.0.1:8976/callback`` for a handler).
        store: a ``TokenStore``; default ``FileTokenStore()`` (0600 files in your home).
        application_type: sent with dynamic registration (``native`` for local clients).
        offline_access: ask for ``offline_access`` when the server lists it.
        callback_timeout: seconds to wait for the browser to come back.
        timeout: the total for getting a token when the caller gives no deadline, and the
            cap of each HTTP exchange with the authorization server.
        session: a ``requests.Session`` for the authorization server (proxies, CA bundle);
            mount ``mcp_lite._http.slots.AbortingAdapter`` on it to keep totals exact.
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
        open_browser: bool | None = None,
        redirect_uri: str | None = None,
        store: TokenStore | None = None,
        application_type: str = "native",
        offline_access: bool = True,
        callback_timeout: float = 300.0,
        timeout: float = DEFAULT_TIMEOUT,
        session: requests.Session | None = None,
        dpop: bool | None = None,
        issuer: str | None = None,
        private_network: bool = False,
    ) -> None:
        if issuer is not None:
            require_secure(issuer, "issuer")
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
        grant_issuer = getattr(grant, "issuer", None)
        if issuer and grant_issuer and not same_issuer(issuer, grant_issuer):
            raise ConfigError("OAuth(issuer=...) and the grant's issuer differ")
        self._issuer = issuer or grant_issuer
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
        if self._server_url is not None:
            self._http.policy = UrlPolicy(self._server_url, private_network=private_network)
        self._timeout = timeout
        self._private_network = private_network
        self._dpop = dpop
        if dpop is True and not dpop_available():
            raise ConfigError(f"dpop=True needs PyJWT and cryptography: {DPOP_INSTALL_HINT}")
        self._lock = threading.RLock()
        self._bound: str | None = None  # the last URL bind() accepted, as given
        self._loaded = False
        self._discovery: Discovery | None = None
        self._tokens: TokenSet | None = None
        self._requested_scope: str | None = None
        _live.add(self)

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
                self._http.policy = UrlPolicy(target, private_network=self._private_network)
            elif target != self._server_url:
                raise ConfigError(
                    f"this OAuth object holds credentials for "
                    f"{self._shown_url}; refusing to send them to {redact_url(target)}"
                )
            self._bound = url

    def token(
        self, timeout: float | None = None, *, deadline: Deadline | None = None
    ) -> str | None:
        """The access token to send, or None (no login yet: the server's 401 starts one).

        Args:
            timeout: seconds the calling request still waits.
            deadline: the caller's ``Deadline``; wins over ``timeout``.
                Neither: a total of this object's ``timeout``. A due refresh ends by then.

        Raises:
            RequestTimeout: the lock or a due refresh did not finish in time (the message
                names the phase, ``authorizing: ...``).
            AuthRequired: the refresh was refused and the flow cannot go on.
        """
        if self._loaded and self._lock.acquire(blocking=False):
            try:  # nothing to load or renew, nobody logging in: no deadline to arm
                tokens = self._tokens
                if tokens is None or not tokens.expired():
                    return tokens.access_token if tokens is not None else None
            finally:
                self._lock.release()
        with self._locked(deadline or _after(timeout), self._timeout):
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
        deadline: Deadline | None = None,
    ) -> str | None:
        """A new token after the server refused ``sent_token``.

        Returns None when there is nothing better to send (a 403 that is not about scope).

        Args:
            timeout, deadline: as for ``token``; a login it starts (browser included) ends
                by then. Neither: ``timeout`` (the constructor's), plus ``callback_timeout``
                when a user may log in.

        Raises:
            AuthRequired: authorization failed, needs a user this object cannot reach, or
                the server now names another issuer than the credentials'.
            RequestTimeout: the deadline passed first.
        """
        parsed = parse_challenge(challenge) if isinstance(challenge, str) else challenge
        with self._locked(deadline or _after(timeout), self._default_total(False)):
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
        with self._locked(None, self._default_total(True)):
            url = self._require_url()
            challenge, protected = self._probe(url)
            if not protected:
                # no 401: only protected-resource metadata (RFC 9728) says it still wants a
                # login; the 2025-03-26 fallback would invent endpoints for any server
                try:
                    if fetch_protected_resource(self._http, url, None) is None:
                        return False
                    discover(self._http, url, None, issuer=self._bound_issuer())
                except AuthRequired:
                    return False
            self._authorize(challenge, None, asked=True)
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
            if forget_client and self._pin_key() is not None:
                self._store.delete(str(self._pin_key()))  # the credentials may move
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
    def _locked(self, deadline: Deadline | None, default: float) -> Iterator[None]:
        """This object's lock and, within it, one deadline on every step: the caller's, or
        a total of ``default`` seconds from now."""
        deadline = Deadline.of(deadline, default)
        left = deadline.remaining()
        if not self._lock.acquire(timeout=-1 if left == float("inf") else left):
            raise deadline.error(
                "authorizing",
                f"no OAuth token for {self._shown_url} (another thread is getting one)",
            )
        try:
            with self._http.limit(deadline):
                yield
        finally:
            self._lock.release()

    def _default_total(self, asked: bool) -> float:
        """The total of an operation no caller bounds: the machine's exchanges, and the
        user's time when a login may wait for one."""
        if self._grant is None and self._user_reachable(asked):
            return self._timeout + self._callback_timeout
        return self._timeout

    def _user_reachable(self, asked: bool) -> bool:
        """True when an interactive login may start: a handler, ``open_browser=True``, or
        (``None``) a login asked for or a process with a terminal."""
        if self._handler is not None or self._open_browser is True:
            return True
        if self._open_browser is False:
            return False
        return asked or _has_terminal()

    # --- credentials bound to their issuer --------------------------------------------------

    def _pin_key(self) -> str | None:
        """The store record that pins the configured credentials to an issuer; None when
        nothing secret is configured (dynamic registration is keyed by issuer already)."""
        if self._server_url is None:
            return None
        grant = self._grant
        if grant is not None and not isinstance(grant, (ClientCredentials, IdJagGrant)):
            client_id = f"workload {getattr(grant, 'client_id', None) or ''}"
        elif grant is not None:
            client_id = grant.client_id
        elif self._preregistered is not None and self._preregistered.client_secret:
            client_id = self._preregistered.client_id
        else:
            return None
        return f"issuer-pin {self._server_url} {client_id}"

    def _bound_issuer(self) -> str | None:
        """The issuer the configured credentials may go to: ``issuer=``, else the pinned
        one; None when nothing is bound (no secret, or not used yet)."""
        if self._issuer is not None:
            return self._issuer
        key = self._pin_key()
        if key is None:
            return None
        record = self._store.load(key) or {}
        pinned = record.get("issuer")
        return pinned if isinstance(pinned, str) else None

    def _check_issuer(self, disc: Discovery) -> str | None:
        """The bound issuer, after checking ``disc`` is that server (``AuthRequired``)."""
        bound = self._bound_issuer()
        if bound is not None and not same_issuer(bound, disc.issuer):
            raise issuer_mismatch(bound, disc.issuer, self._require_url())
        return bound

    def _pin(self, disc: Discovery) -> None:
        """Pin the configured credentials to ``disc``'s issuer at their first success."""
        key = self._pin_key()
        if key is not None and self._issuer is None and self._store.load(key) is None:
            self._store.save(key, {"issuer": disc.issuer})

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
        wait = self._timeout if left is None else max(0.0, left)
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
            self._pin(disc)  # a store written before pins existed gets one now
            return True

    @property
    def _shown_url(self) -> str:
        return redact_url(self._server_url or "")

    def _grant_refresh(self, disc: Discovery, tokens: TokenSet) -> TokenSet | None:
        """The refresh grant, or a new unattended grant; None when neither applies.

        Raises:
            AuthRequired: the stored server is not the issuer the credentials are bound to.
        """
        bound = self._check_issuer(disc)
        if tokens.refresh_token:
            client = self._client_for_refresh(disc, bound)
            if client is None:
                return None
            return refresh(self._http, disc.metadata, client, tokens, disc.resource)
        if self._grant is not None:
            return self._grant.fetch(
                self._http, disc.metadata, disc.resource, self._requested_scope, bound
            )
        return None

    def _preregistered_at(self, bound: str | None) -> ClientInfo | None:
        """The configured client, labelled with the issuer its credentials are bound to."""
        if self._preregistered is None or bound is None:
            return self._preregistered
        return replace(self._preregistered, issuer=bound)

    def _client_for_refresh(self, disc: Discovery, bound: str | None) -> ClientInfo | None:
        if isinstance(self._grant, ClientCredentials):
            return self._grant.client(disc.metadata, bound)
        if self._preregistered is not None:
            return resolve_client(
                self._http,
                disc.metadata,
                preregistered=self._preregistered_at(bound),
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

    def _authorize(
        self, challenge: Challenge | None, scope: str | None, *, asked: bool = False
    ) -> str:
        """The full flow; returns the new access token. ``asked``: the user asked for a
        login (``login()``), so one may start without a terminal."""
        url = self._require_url()
        if self._grant is None:
            self._check_user_reachable(asked)  # before any discovery: nothing to do it for
        # Credentials bound to an issuer: discovery considers that server only.
        disc = discover(self._http, url, challenge, issuer=self._bound_issuer())
        bound = self._check_issuer(disc)
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
                self._http, disc.metadata, disc.resource, scope or self._grant.scope, bound
            )
        else:
            tokens = self._authorization_code(disc, scope, bound, asked)
        self._save(disc, tokens, scope)
        self._pin(disc)
        return tokens.access_token

    def _check_user_reachable(self, asked: bool = False) -> None:
        if not self._user_reachable(asked):
            why = (
                "open_browser=False"
                if self._open_browser is False
                else "no terminal and no authorization_handler"
            )
            raise AuthRequired(
                f"MCP server {self._shown_url} needs a login, and none can start here "
                f"({why}): run `mcp-lite auth {self._shown_url}` (or pass an "
                f"authorization_handler)",
                self._shown_url,
            )

    def _authorization_code(
        self, disc: Discovery, scope: str | None, bound: str | None, asked: bool
    ) -> TokenSet:
        self._check_user_reachable(asked)
        stored = ClientInfo.from_json(self._store.load(f"client {disc.issuer}") or {})
        if self._handler is not None:
            redirect_uri = self._redirect_uri or DEFAULT_HEADLESS_REDIRECT
            client = self._client(disc, stored, redirect_uri, scope, bound)
            request = self._request(disc, client, redirect_uri, scope)
            redirect_url = self._handler(request.url)
        else:
            with _receiver(self._redirect_uri, stored) as receiver:
                client = self._client(disc, stored, receiver.redirect_uri, scope, bound)
                request = self._request(disc, client, receiver.redirect_uri, scope)
                receiver.expect(request.state)  # other requests get an error page
                _show(request.url)
                deadline = self._http.deadline()
                left = self._callback_timeout if deadline is None else deadline.remaining()
                try:
                    redirect_url = receiver.wait(min(left, self._callback_timeout))
                except AuthRequired:
                    if deadline is not None and left < self._callback_timeout:
                        raise deadline.error(
                            "authorizing", "the browser login got no answer"
                        ) from None
                    raise
        code = request.code_from(str(redirect_url))
        return request.exchange(self._http, disc.metadata, client, code)

    def _request(
        self, disc: Discovery, client: ClientInfo, redirect_uri: str, scope: str | None
    ) -> AuthorizationRequest:
        """The authorization request; its URL (for the browser) passes the URL policy."""
        request = AuthorizationRequest.build(
            disc.metadata, client, redirect_uri=redirect_uri, resource=disc.resource, scope=scope
        )
        self._http.check(request.url, "authorization endpoint")
        return request

    def _client(
        self,
        disc: Discovery,
        stored: ClientInfo | None,
        redirect_uri: str,
        scope: str | None,
        bound: str | None,
    ) -> ClientInfo:
        grant_types = ["authorization_code", "refresh_token"]
        client = resolve_client(
            self._http,
            disc.metadata,
            preregistered=self._preregistered_at(bound),
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


def _after(timeout: float | None) -> Deadline | None:
    """``timeout=`` seconds as the caller's deadline (None: none given)."""
    return None if timeout is None else Deadline.after(max(0.0, timeout))


def _has_terminal() -> bool:
    """True when someone may be watching: stdin or stderr is a terminal, or the code runs
    in a Jupyter kernel (whose streams are no terminals, but a person reads them)."""
    if "ipykernel" in sys.modules:
        return True
    for stream in (sys.stdin, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return True
        except (AttributeError, ValueError, OSError):  # closed or replaced streams
            continue
    return False


def _fixed_port(uri: str | None) -> tuple[int, str] | None:
    parts = urlsplit(uri or "")
    if parts.hostname == "127.0.0.1" and parts.port:
        return parts.port, parts.path or "/callback"
    return None


def _receiver(configured: str | None, stored: ClientInfo | None) -> LoopbackReceiver:
    """The loopback receiver of one login, on a port no other process can be waiting on.

    A configured ``redirect_uri`` is used as it is: its port busy is an ``AuthRequired`` at
    once (another login, another program). Else the port of a stored dynamic registration
    is tried (it stays valid), and when it is busy a free port the system picks (the client
    then registers again for it); else a free port the system picks.
    """
    fixed = _fixed_port(configured)
    if fixed is not None:
        try:
            return LoopbackReceiver(*fixed)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise AuthRequired(
                f"cannot receive the login: port {fixed[0]} of redirect_uri "
                f"{configured} is in use (another login is running, or another program "
                f"holds it); choose another port or leave redirect_uri unset"
            ) from None
    for uri in stored.redirect_uris if stored is not None else ():
        remembered = _fixed_port(uri)
        if remembered is not None:
            with contextlib.suppress(OSError):
                return LoopbackReceiver(*remembered)
    return LoopbackReceiver(0, "/callback")


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

    Called inside a login, it ends by that login's deadline (never a fresh ``timeout``).

    Raises:
        AuthRequired: the server did not redirect.
    """
    require_secure(url, "authorization")
    # A total deadline, like every OAuth exchange (RequestTimeout when it passes).
    http = Http(timeout=timeout)
    with http.limit(operation_deadline()):
        status, headers, _ = http.exchange("GET", url, "authorization")
    location = headers.get("Location")
    if status not in (301, 302, 303, 307, 308) or not location:
        raise AuthRequired(
            f"the authorization endpoint answered HTTP {status} instead of redirecting"
        )
    return urljoin(url, location)
