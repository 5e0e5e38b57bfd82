"""OAuth end to end: ``mcp_lite.connect(url, auth=OAuth(...))`` against the tiny authorization
server + protected MCP resource of ``authserver.py`` (127.0.0.1 only)."""

from __future__ import annotations

import base64
import logging
import os
import webbrowser
from collections.abc import Callable
from typing import Any

import pytest
import requests
from authserver import AuthServer

import mcp_lite
from mcp_lite.auth import (
    ClientCredentials,
    FileTokenStore,
    MemoryTokenStore,
    OAuth,
    fetch_redirect,
)
from mcp_lite.errors import AuthRequired, ConfigError, McpError

Start = Callable[..., AuthServer]
PINNED = "2025-11-25"


def _oauth(server: AuthServer, **kw: Any) -> OAuth:
    kw.setdefault("authorization_handler", fetch_redirect)
    kw.setdefault("store", MemoryTokenStore())
    return OAuth(server.url, **kw)


def _connect(server: AuthServer, auth: Any) -> mcp_lite.Client:
    return mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED)


def _one(seen: list[Any]) -> dict[str, str]:
    assert len(seen) == 1, seen
    return {k: v[0] for k, v in (seen[0].query or seen[0].form).items()}


def test_code_flow_end_to_end(auth_server: Start) -> None:
    server = auth_server(scopes_supported=["mcp:read"])
    with _connect(server, _oauth(server)) as client:
        assert [t.name for t in client.list_tools()] == ["echo"]
    authorize = _one(server.requests_to("/authorize"))
    token = _one(server.requests_to("/token"))
    assert authorize["code_challenge_method"] == "S256" and authorize["state"]
    assert authorize["resource"] == token["resource"] == server.url  # RFC 8707, both
    assert authorize["scope"] == "mcp:read"  # from the PRM
    assert authorize["redirect_uri"].startswith("http://127.0.0.1")
    register = server.requests_to("/register")[0].body
    assert register["application_type"] == "native"
    assert "refresh_token" in register["grant_types"]
    # Every MCP request after the 401 carried the bearer token; none used the query string.
    mcp = server.requests_to("/mcp")
    assert mcp[0].headers.get("authorization") is None
    assert all(s.headers["authorization"].startswith("Bearer at-") for s in mcp[1:])
    assert all(not s.query for s in mcp)


def test_challenge_scope_wins_and_step_up_asks_for_the_union(auth_server: Start) -> None:
    server = auth_server(
        scopes_supported=["mcp:read", "mcp:x"], challenge_scope="mcp:read", write_scope="mcp:write"
    )
    with _connect(server, _oauth(server)) as client:
        client.list_tools()
        assert client.call_tool("echo", {}).text == "ok"
    scopes = [_one([s])["scope"] for s in server.requests_to("/authorize")]
    assert scopes == ["mcp:read", "mcp:read mcp:write"]


def test_step_up_is_bounded(auth_server: Start) -> None:
    server = auth_server(always_403=True)
    with pytest.raises(McpError), _connect(server, _oauth(server)) as client:
        client.list_tools()
    assert 1 < len(server.requests_to("/authorize")) <= 3


def test_state_mismatch_aborts_before_the_token_request(auth_server: Start) -> None:
    server = auth_server(wrong_state=True)
    with pytest.raises(AuthRequired, match="state"):
        _connect(server, _oauth(server))
    assert server.requests_to("/token") == []


@pytest.mark.parametrize(
    "behaviour", [{"iss_in_redirect": "wrong"}, {"iss_supported": True, "iss_in_redirect": None}]
)
def test_iss_mismatch_aborts(auth_server: Start, behaviour: dict[str, Any]) -> None:
    server = auth_server(**behaviour)
    with pytest.raises(AuthRequired, match="iss"):
        _connect(server, _oauth(server))
    assert server.requests_to("/token") == []


def test_correct_iss_is_accepted(auth_server: Start) -> None:
    server = auth_server(iss_supported=True, iss_in_redirect="correct")
    with _connect(server, _oauth(server)) as client:
        client.list_tools()


def test_wrong_issuer_in_metadata_is_refused(auth_server: Start) -> None:
    server = auth_server(issuer_override="http://127.0.0.1:1/other")
    with pytest.raises(AuthRequired, match="issuer"):
        _connect(server, _oauth(server))
    assert server.requests_to("/authorize") == []


def test_server_without_s256_is_refused(auth_server: Start) -> None:
    server = auth_server(pkce_methods=None)
    with pytest.raises(AuthRequired, match="S256"):
        _connect(server, _oauth(server))
    assert server.requests_to("/authorize") == []


def test_plain_http_endpoint_off_loopback_is_refused(auth_server: Start) -> None:
    server = auth_server(token_endpoint_override="http://example.com/token")
    with pytest.raises(AuthRequired, match="https"):
        _connect(server, _oauth(server))


def test_prm_for_another_resource_is_refused(auth_server: Start) -> None:
    server = auth_server(prm_resource_override="https://evil.example/mcp")
    with pytest.raises(AuthRequired, match="another resource"):
        _connect(server, _oauth(server))
    assert server.requests_to("/authorize") == []


def test_registration_rejection_is_reported(auth_server: Start) -> None:
    server = auth_server(registration_error=True)
    with pytest.raises(AuthRequired, match="invalid_client_metadata"):
        _connect(server, _oauth(server))


def test_no_registration_possible_says_what_to_configure(auth_server: Start) -> None:
    server = auth_server(registration=False)
    with pytest.raises(AuthRequired, match="client_id"):
        _connect(server, _oauth(server))


def test_preregistered_client_secret_basic(auth_server: Start) -> None:
    server = auth_server(registration=False, auth_methods=["client_secret_basic"])
    oauth = _oauth(server, client_id="pre id", client_secret="pre-secret")
    with _connect(server, oauth) as client:
        client.list_tools()
    (token,) = server.requests_to("/token")
    expected = base64.b64encode(b"pre+id:pre-secret").decode()
    assert token.headers["authorization"] == f"Basic {expected}"
    assert "client_secret" not in token.form


def test_refresh_before_expiry_keeps_old_refresh_token(auth_server: Start) -> None:
    server = auth_server(expires_in=0)  # expired as soon as issued: refreshed on each use
    oauth = _oauth(server)
    with _connect(server, oauth) as client:
        client.list_tools()
        client.list_tools()
    grants = [_one([s])["grant_type"] for s in server.requests_to("/token")]
    assert grants[0] == "authorization_code" and "refresh_token" in grants[1:]
    refreshes = [_one([s]) for s in server.requests_to("/token")[1:]]
    assert all(r["refresh_token"] == "rt-original-secretrefresh" for r in refreshes)
    assert len(server.requests_to("/authorize")) == 1


@pytest.mark.parametrize("lifetime", [30, 10])
def test_a_short_lived_token_is_not_refreshed_before_every_request(
    auth_server: Start, lifetime: int
) -> None:
    """The refresh margin is 60 s but at most half the token's lifetime: five calls made
    well within the first half of a 30 s (or 10 s) token refresh nothing."""
    server = auth_server(expires_in=lifetime)
    with _connect(server, _oauth(server)) as client:
        for _ in range(5):
            client.list_tools()
    grants = [_one([s])["grant_type"] for s in server.requests_to("/token")]
    assert grants == ["authorization_code"]  # no refresh_token grant
    presented = {s.headers.get("authorization") for s in server.requests_to("/mcp")} - {None}
    assert len(presented) == 1  # one token for every request


def test_tokens_persist_for_the_next_process(auth_server: Start, tmp_path: Any) -> None:
    server = auth_server()
    store_dir = os.path.join(str(tmp_path), "store")
    with _connect(server, _oauth(server, store=FileTokenStore(store_dir))) as client:
        client.list_tools()
    before = len(server.seen)
    # A new OAuth object (a new process) with no way to reach a user: the stored token works.
    tomorrow = OAuth(server.url, store=FileTokenStore(store_dir), open_browser=False)
    with _connect(server, tomorrow) as client:
        client.list_tools()
    paths = {s.path for s in server.seen[before:]}
    assert paths == {"/mcp"}
    tomorrow.logout()
    assert not OAuth(server.url, store=FileTokenStore(store_dir)).authorized


def test_no_user_and_no_token_is_auth_required(auth_server: Start) -> None:
    server = auth_server()
    oauth = OAuth(server.url, store=MemoryTokenStore(), open_browser=False)
    with pytest.raises(AuthRequired, match="mcp-lite auth"):
        _connect(server, oauth)


def test_tokens_only_go_to_their_resource(auth_server: Start) -> None:
    first, second = auth_server(), auth_server()
    oauth = _oauth(first)
    with _connect(first, oauth) as client:
        client.list_tools()
    with pytest.raises(ConfigError, match="refusing"):
        oauth.bind(second.url)
    with pytest.raises(McpError):
        _connect(second, oauth)
    assert all("authorization" not in s.headers for s in second.seen)


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_secret(auth_server: Start, method: str) -> None:
    server = auth_server(auth_methods=[method])
    oauth = OAuth(
        server.url,
        store=MemoryTokenStore(),
        grant=ClientCredentials("svc", client_secret="svc-secret"),
    )
    with _connect(server, oauth) as client:
        client.list_tools()
    (token,) = server.requests_to("/token")
    form = {k: v[0] for k, v in token.form.items()}
    assert form["grant_type"] == "client_credentials" and form["resource"] == server.url
    if method == "client_secret_basic":
        assert token.headers["authorization"].startswith("Basic ")
    else:
        assert form["client_secret"] == "svc-secret" and "authorization" not in token.headers
    assert server.requests_to("/authorize") == []


def test_client_credentials_private_key_jwt(auth_server: Start) -> None:
    jwt = pytest.importorskip("jwt")
    ec = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.ec")
    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    server = auth_server(auth_methods=["private_key_jwt"])
    oauth = OAuth(
        server.url,
        store=MemoryTokenStore(),
        grant=ClientCredentials("svc", private_key=pem, signing_algorithm="ES256"),
    )
    with _connect(server, oauth) as client:
        client.list_tools()
    form = _one(server.requests_to("/token"))
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    claims = jwt.decode(
        form["client_assertion"], key.public_key(), algorithms=["ES256"], audience=server.base
    )
    assert claims["iss"] == claims["sub"] == "svc"


def test_interactive_flow_uses_the_loopback_receiver(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No handler: the browser is opened; here a 'browser' that follows the redirect to the
    loopback receiver on 127.0.0.1."""
    server = auth_server()
    opened: list[str] = []

    def browser(url: str, *args: Any, **kwargs: Any) -> bool:
        opened.append(url)
        redirect = fetch_redirect(url)
        assert redirect.startswith("http://127.0.0.1:")
        requests.get(redirect, timeout=10).raise_for_status()
        return True

    monkeypatch.setattr(webbrowser, "open", browser)
    oauth = OAuth(server.url, store=MemoryTokenStore(), callback_timeout=30, open_browser=True)
    with _connect(server, oauth) as client:
        client.list_tools()
    assert len(opened) == 1 and opened[0].startswith(f"{server.base}/authorize?")


def test_secrets_never_in_logs_reprs_or_errors(
    auth_server: Start, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = auth_server(
        client_secret="dcr-client-secret-value", auth_methods=["client_secret_post"], expires_in=0
    )
    oauth = _oauth(server)
    with _connect(server, oauth) as client:
        client.list_tools()
        client.list_tools()
    tokens = [
        s.headers["authorization"][7:]
        for s in server.requests_to("/mcp")
        if "authorization" in s.headers
    ]
    secrets = {*tokens, "rt-original-secretrefresh", "dcr-client-secret-value"}
    codes = [_one([s]).get("code") for s in server.requests_to("/token")]
    secrets.update(c for c in codes if c)
    text = caplog.text + repr(oauth)
    # A failing refresh (the server forgot the refresh token) must not quote it either.
    server.refresh_tokens.clear()
    server.tokens.clear()
    with (
        pytest.raises(McpError) as err,
        _connect(server, _oauth(server, open_browser=False, authorization_handler=None)),
    ):
        pass
    text += str(err.value)
    for secret in secrets:
        assert secret not in text


def test_a_configured_server_uses_the_tokens_saved_by_a_login(
    auth_server: Start, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``mcp-lite auth`` once, then plain ``connect(url)`` / a Hub entry needs no auth object."""
    monkeypatch.setenv("MCP_LITE_AUTH_DIR", str(tmp_path / "store"))
    server = auth_server()
    with pytest.raises(AuthRequired):
        mcp_lite.connect(server.url, timeout=20, protocol_version=PINNED)
    login = OAuth(server.url, authorization_handler=fetch_redirect)  # the default file store
    with _connect(server, login) as client:
        client.list_tools()
    with mcp_lite.connect(
        {"type": "http", "url": server.url}, timeout=20, protocol_version=PINNED
    ) as client:
        assert client.list_tools()
