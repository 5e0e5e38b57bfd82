"""A tiny authorization server and protected MCP resource on 127.0.0.1, for the auth tests.

One ``ThreadingHTTPServer`` plays both roles (``http://127.0.0.1:<port>``): PRM at
``/.well-known/oauth-protected-resource/mcp``, RFC 8414 metadata at
``/.well-known/oauth-authorization-server``, ``/authorize`` (approves at once and redirects),
``/token``, ``/register``, and a minimal stateless MCP endpoint at ``/mcp`` that checks bearer
tokens and scopes. Every request is recorded; ``Behaviour`` switches the misbehaviours the
tests need (wrong state, wrong ``iss``, wrong issuer, no S256, mismatched resource...).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit


@dataclass
class Behaviour:
    scopes_supported: list[str] | None = None  # PRM
    as_scopes_supported: list[str] | None = None
    challenge_scope: str | None = None  # scope= in the 401 challenge
    write_scope: str | None = None  # tools/call needs this scope (403 otherwise)
    always_403: bool = False
    issuer_override: str | None = None
    pkce_methods: list[str] | None = field(default_factory=lambda: ["S256"])
    iss_supported: bool = False
    iss_in_redirect: str | None = None  # "correct", "wrong" or None
    wrong_state: bool = False
    redirect_error: str | None = None
    prm_resource_override: str | None = None
    token_endpoint_override: str | None = None
    auth_methods: list[str] = field(default_factory=lambda: ["none"])
    registration: bool = True
    registration_error: bool = False
    expires_in: int = 3600
    issue_refresh: bool = True
    refresh_returns_refresh: bool = False
    # Rotation with reuse detection (OAuth 2.1 §4.3.1): every refresh answers a new refresh
    # token and spends the old one; a spent one presented again revokes its whole family
    # (every refresh and access token descended from the same authorization).
    rotate_refresh: bool = False
    refresh_delay: float = 0.0  # seconds a refresh_token grant takes (widens refresh races)
    client_secret: str | None = None  # DCR hands this secret out
    revoke_on_reuse: bool = True  # False: a spent refresh token is only refused
    drip: tuple[str, ...] = ()  # paths answered one byte at a time, for minutes (hostile)
    drip_interval: float = 0.2
    # DPoP (RFC 9449): metadata lists ES256, token requests need a proof and get DPoP-bound
    # tokens, the MCP endpoint wants "Authorization: DPoP" with a proof per request.
    dpop: bool = False
    dpop_challenge: bool = False  # the MCP server's 401 uses the DPoP scheme (requires it)
    dpop_nonce: bool = False  # both servers answer use_dpop_nonce until the proof has theirs
    dpop_optional: bool = False  # a token request without a proof gets a bearer token
    # JWT-bearer grant (workload identity): these assertions are accepted, others refused.
    assertions: tuple[str, ...] = ()
    # Hostile documents: the PRM's authorization_servers, endpoints of the AS metadata, the
    # challenge's resource_metadata (None: this server's own).
    authorization_servers: list[str] | None = None
    registration_endpoint_override: str | None = None
    authorization_endpoint_override: str | None = None
    resource_metadata_override: str | None = None
    refuse_tokens: bool = False  # every token request: 400 invalid_grant


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    form: dict[str, list[str]]
    body: Any


class AuthServer:
    """Start with ``start()``; ``url`` is the MCP endpoint; ``seen`` every request."""

    def __init__(
        self, behaviour: Behaviour | None = None, tls: Any = None, host: str = "127.0.0.1"
    ) -> None:
        self.b = behaviour or Behaviour()
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.counter = 0
        self.tokens: dict[str, set[str]] = {}  # access token -> scopes
        self.refresh_tokens: dict[str, set[str]] = {}
        self.challenges: dict[str, str] = {}  # code -> code_challenge
        self.code_scopes: dict[str, set[str]] = {}
        self.family: dict[str, int] = {}  # refresh or access token -> family (rotate_refresh)
        self.spent: set[str] = set()  # refresh tokens already exchanged (rotate_refresh)
        self.reuse_detected = 0
        self.refreshes = 0
        self.delayed = 0  # refresh requests that slept refresh_delay
        self.bound: dict[str, str] = {}  # DPoP-bound access token -> key thumbprint
        self.proof_jtis: list[str] = []  # every DPoP proof the MCP endpoint accepted
        self.proof_errors: list[str] = []
        self.token_keys: list[str] = []  # the thumbprint of each DPoP token request
        self.nonce_challenges = 0
        handler = type("H", (_Handler,), {"srv": self})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        if tls is not None:  # an ssl.SSLContext: https, under the name ``host``
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.base = f"{scheme}://{host}:{self.httpd.server_address[1]}"
        self.url = f"{self.base}/mcp"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, daemon=True, name="test-authserver"
        )

    def start(self) -> AuthServer:
        self.thread.start()
        return self

    stopping = False

    def stop(self) -> None:
        self.stopping = True
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)

    def requests_to(self, path: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.path == path]

    def rotate(self, presented: str) -> dict[str, Any] | None:
        """A refresh in ``rotate_refresh`` mode: the new token answer, or None (refused)."""
        with self.lock:
            family = self.family.get(presented)
            if presented in self.spent and family is not None:
                self.reuse_detected += 1
                if not self.b.revoke_on_reuse:
                    return None
                for token in [t for t, f in self.family.items() if f == family]:
                    self.tokens.pop(token, None)
                    self.refresh_tokens.pop(token, None)
                return None
            scopes = self.refresh_tokens.pop(presented, None)
            if scopes is None or family is None:
                return None
            self.spent.add(presented)
            self.refreshes += 1
        answer = self.new_token(scopes)
        with self.lock:
            self.counter += 1
            fresh = f"rt-{self.counter}-secretrefresh"
            self.refresh_tokens[fresh] = set(scopes)
            self.family[fresh] = self.family[answer["access_token"]] = family
        answer["refresh_token"] = fresh
        return answer

    def new_token(self, scopes: set[str]) -> dict[str, Any]:
        with self.lock:
            self.counter += 1
            access = f"at-{self.counter}-secretaccess"
            self.tokens[access] = set(scopes)
            answer: dict[str, Any] = {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": self.b.expires_in,
            }
            if scopes:
                answer["scope"] = " ".join(sorted(scopes))
            return answer


import dpop_check  # noqa: E402  (beside this file, like the tests' own imports)


class _Handler(BaseHTTPRequestHandler):
    srv: AuthServer
    protocol_version = "HTTP/1.0"  # one request per connection: nothing left open at stop()

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _record(self, body: bytes) -> Seen:
        parts = urlsplit(self.path)
        ctype = self.headers.get("Content-Type", "")
        form = parse_qs(body.decode()) if "x-www-form-urlencoded" in ctype else {}
        parsed = json.loads(body) if "json" in ctype and body else None
        seen = Seen(
            self.command,
            parts.path,
            parse_qs(parts.query),
            {k.lower(): v for k, v in self.headers.items()},
            form,
            parsed,
        )
        with self.srv.lock:
            self.srv.seen.append(seen)
        return seen

    def _drip(self) -> bool:
        """Answer one byte at a time, for minutes, when this path is to drip."""
        if urlsplit(self.path).path not in self.srv.b.drip:
            return False
        head = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nX-Pad: "
        try:
            for i in range(100_000):
                if self.srv.stopping:
                    return True
                self.wfile.write(head[i : i + 1] if i < len(head) else b"a")
                self.wfile.flush()
                time.sleep(self.srv.b.drip_interval)
        except OSError:
            pass  # the client hung up: what it should do at its deadline
        return True

    binding: str | None = None  # the DPoP key thumbprint a token answer is bound to

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        if self.binding and status == 200 and isinstance(body, dict) and "access_token" in body:
            body["token_type"] = "DPoP"
            self.srv.bound[body["access_token"]] = self.binding
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        seen = self._record(b"")
        if self._drip():
            return
        b, base = self.srv.b, self.srv.base
        if seen.path == "/.well-known/oauth-protected-resource/mcp":
            prm: dict[str, Any] = {
                "resource": b.prm_resource_override or self.srv.url,
                "authorization_servers": b.authorization_servers or [base],
            }
            if b.scopes_supported is not None:
                prm["scopes_supported"] = b.scopes_supported
            self._send(200, prm)
        elif seen.path == "/.well-known/oauth-authorization-server":
            meta: dict[str, Any] = {
                "issuer": b.issuer_override or base,
                "authorization_endpoint": b.authorization_endpoint_override or f"{base}/authorize",
                "token_endpoint": b.token_endpoint_override or f"{base}/token",
                "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": b.auth_methods,
                "grant_types_supported": [
                    "authorization_code",
                    "refresh_token",
                    "client_credentials",
                ],
            }
            if b.pkce_methods is not None:
                meta["code_challenge_methods_supported"] = b.pkce_methods
            if b.registration:
                meta["registration_endpoint"] = b.registration_endpoint_override or (
                    f"{base}/register"
                )
            if b.as_scopes_supported is not None:
                meta["scopes_supported"] = b.as_scopes_supported
            if b.iss_supported:
                meta["authorization_response_iss_parameter_supported"] = True
            if b.dpop:
                meta["dpop_signing_alg_values_supported"] = ["ES256"]
            if b.assertions:
                meta["grant_types_supported"].append("urn:ietf:params:oauth:grant-type:jwt-bearer")
            self._send(200, meta)
        elif seen.path == "/authorize":
            q = {k: v[0] for k, v in seen.query.items()}
            with self.srv.lock:
                self.srv.counter += 1
                code = f"code-{self.srv.counter}"
                self.srv.challenges[code] = q.get("code_challenge", "")
                self.srv.code_scopes[code] = set(q.get("scope", "").split())
            params = {"code": code, "state": "forged" if b.wrong_state else q.get("state", "")}
            if b.redirect_error:
                params = {
                    "error": b.redirect_error,
                    "error_description": "shown?",
                    "state": params["state"],
                }
            if b.iss_in_redirect == "correct":
                params["iss"] = base
            elif b.iss_in_redirect == "wrong":
                params["iss"] = "https://evil.example"
            self._send(302, None, {"Location": f"{q['redirect_uri']}?{urlencode(params)}"})
        elif seen.path == "/mcp":
            self._send(405, {"error": "no GET stream"})
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        seen = self._record(self.rfile.read(length))
        if self._drip():
            return
        if seen.path == "/token":
            self._token(seen)
        elif seen.path == "/register":
            if self.srv.b.registration_error:
                self._send(
                    400,
                    {
                        "error": "invalid_client_metadata",
                        "error_description": "redirect_uris rejected",
                    },
                )
                return
            answer = {"client_id": "dcr-client", "redirect_uris": seen.body["redirect_uris"]}
            if self.srv.b.client_secret:
                answer["client_secret"] = self.srv.b.client_secret
            self._send(201, answer)
        elif seen.path == "/mcp":
            self._mcp(seen)
        else:
            self._send(404, {"error": "not_found"})

    def _dpop_token_proof(self, seen: Seen) -> str | None:
        """The thumbprint of the token request's valid proof; None after answering an error."""
        srv = self.srv
        nonce = "as-nonce-1" if srv.b.dpop_nonce else None
        try:
            jkt, _ = dpop_check.verify(seen.headers.get("dpop"), "POST", f"{srv.base}/token")
            dpop_check.verify(seen.headers.get("dpop"), "POST", f"{srv.base}/token", nonce=nonce)
        except dpop_check.ProofError as exc:
            if str(exc) == "use_dpop_nonce":
                srv.nonce_challenges += 1
                self._send(400, {"error": "use_dpop_nonce"}, {"DPoP-Nonce": "as-nonce-1"})
            else:
                srv.proof_errors.append(f"token: {exc}")
                self._send(400, {"error": "invalid_dpop_proof", "error_description": str(exc)})
            return None
        srv.token_keys.append(jkt)
        return jkt

    def _token(self, seen: Seen) -> None:
        optional = self.srv.b.dpop_optional and "dpop" not in seen.headers
        if self.srv.b.dpop and not optional:
            self.binding = self._dpop_token_proof(seen)
            if self.binding is None:
                return
        form = {k: v[0] for k, v in seen.form.items()}
        grant = form.get("grant_type")
        srv = self.srv
        if srv.b.refuse_tokens:
            self._send(400, {"error": "invalid_grant", "error_description": "refused"})
        elif grant == "urn:ietf:params:oauth:grant-type:token-exchange":  # an IdP: an ID-JAG
            with srv.lock:
                srv.counter += 1
                jag = f"jag-{srv.counter}"
            self._send(200, {"access_token": jag, "token_type": "N_A"})
        elif grant == "urn:ietf:params:oauth:grant-type:jwt-bearer" and form.get(
            "assertion", ""
        ).startswith("jag-"):
            self._send(200, srv.new_token(set(form.get("scope", "").split())))
        elif grant == "urn:ietf:params:oauth:grant-type:jwt-bearer" and srv.b.assertions:
            if form.get("assertion") not in srv.b.assertions:
                self._send(400, {"error": "invalid_grant", "error_description": "bad assertion"})
                return
            self._send(200, srv.new_token(set(form.get("scope", "").split())))
        elif grant == "authorization_code":
            expected = srv.challenges.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            if expected is None or digest.rstrip(b"=").decode() != expected:
                self._send(400, {"error": "invalid_grant"})
                return
            answer = srv.new_token(srv.code_scopes.get(form["code"], set()))
            if srv.b.issue_refresh:
                answer["refresh_token"] = "rt-original-secretrefresh"
                srv.refresh_tokens["rt-original-secretrefresh"] = srv.tokens[answer["access_token"]]
                if srv.b.rotate_refresh:
                    with srv.lock:
                        srv.counter += 1
                        family = srv.counter
                        fresh = f"rt-{family}-secretrefresh"
                        srv.refresh_tokens[fresh] = srv.refresh_tokens.pop(answer["refresh_token"])
                        answer["refresh_token"] = fresh
                        srv.family[fresh] = srv.family[answer["access_token"]] = family
            self._send(200, answer)
        elif grant == "refresh_token" and srv.b.rotate_refresh:
            self._delay()
            rotated = srv.rotate(form.get("refresh_token", ""))
            if rotated is None:
                self._send(400, {"error": "invalid_grant"})
                return
            self._send(200, rotated)
        elif grant == "refresh_token":
            self._delay()
            scopes = srv.refresh_tokens.get(form.get("refresh_token", ""))
            if scopes is None:
                self._send(400, {"error": "invalid_grant"})
                return
            answer = srv.new_token(scopes)
            if srv.b.refresh_returns_refresh:
                answer["refresh_token"] = "rt-rotated-secretrefresh"
                srv.refresh_tokens["rt-rotated-secretrefresh"] = scopes
            self._send(200, answer)
        elif grant == "client_credentials":
            self._send(200, srv.new_token(set(form.get("scope", "").split())))
        else:
            self._send(400, {"error": "unsupported_grant_type"})

    def _delay(self) -> None:
        """Sleep ``refresh_delay`` (read once), counted in ``delayed`` while it sleeps."""
        delay = self.srv.b.refresh_delay
        if delay:
            with self.srv.lock:
                self.srv.delayed += 1
            time.sleep(delay)

    def _mcp(self, seen: Seen) -> None:
        b, srv = self.srv.b, self.srv
        prm = b.resource_metadata_override or f"{srv.base}/.well-known/oauth-protected-resource/mcp"
        auth = seen.headers.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        if b.dpop and auth.startswith("DPoP "):
            token = self._dpop_resource(seen, auth[5:], prm)
            if token is None:
                return
        elif token in srv.bound:
            token = None  # a bound token presented as a bearer token is worthless
        scopes = srv.tokens.get(token or "")
        if scopes is None:
            scheme = "DPoP" if b.dpop_challenge else "Bearer"
            challenge = f'{scheme} resource_metadata="{prm}"'
            if b.challenge_scope:
                challenge += f', scope="{b.challenge_scope}"'
            self._send(401, {"error": "invalid_token"}, {"WWW-Authenticate": challenge})
            return
        message = seen.body or {}
        method = message.get("method")
        needed = b.write_scope if method == "tools/call" else None
        refused = b.always_403 and method != "initialize" and "id" in message
        if refused or (needed and needed not in scopes):
            want = b.write_scope or "admin"
            self._send(
                403,
                {"error": "insufficient_scope"},
                {
                    "WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{want}", '
                    f'resource_metadata="{prm}"'
                },
            )
            return
        if "id" not in message:
            self._send(202)
            return
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "t", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
        else:
            self._send(
                200,
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "no such method"},
                },
            )
            return
        self._send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _dpop_resource(self, seen: Seen, token: str, prm: str) -> str | None:
        """The token of a valid DPoP presentation; None after answering 401."""
        srv = self.srv
        nonce = "rs-nonce-1" if srv.b.dpop_nonce else None
        proof = seen.headers.get("dpop")
        try:
            jkt, claims = dpop_check.verify(proof, "POST", srv.url, access_token=token)
            dpop_check.verify(proof, "POST", srv.url, access_token=token, nonce=nonce)
            if srv.bound.get(token) != jkt:
                raise dpop_check.ProofError("the proof's key is not the token's")
            if claims["jti"] in srv.proof_jtis:
                raise dpop_check.ProofError("a proof was used twice")
        except dpop_check.ProofError as exc:
            if str(exc) == "use_dpop_nonce":
                srv.nonce_challenges += 1
                challenge = f'DPoP error="use_dpop_nonce", resource_metadata="{prm}"'
                headers = {"WWW-Authenticate": challenge, "DPoP-Nonce": "rs-nonce-1"}
                self._send(401, {"error": "use_dpop_nonce"}, headers)
                return None
            srv.proof_errors.append(f"mcp: {exc}")
            challenge = f'DPoP error="invalid_dpop_proof", resource_metadata="{prm}"'
            self._send(401, {"error": "invalid_dpop_proof"}, {"WWW-Authenticate": challenge})
            return None
        srv.proof_jtis.append(claims["jti"])
        return token
