"""Pure parts of mcp_lite.auth: challenge parsing, discovery order, URL rules, PKCE, scopes,
token sets and the stores. No sockets."""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import time
from typing import Any

import pytest

from mcp_lite.auth import (
    ClientCredentials,
    ClientInfo,
    FileTokenStore,
    MemoryTokenStore,
    TokenSet,
    client_metadata_document,
    parse_challenge,
)
from mcp_lite.auth._net import canonical_url, require_loopback_redirect, require_secure, scrub
from mcp_lite.auth.discovery import (
    AuthServerMetadata,
    ProtectedResource,
    as_metadata_urls,
    prm_urls,
)
from mcp_lite.auth.flow import AuthorizationRequest, merge_scopes, select_scope
from mcp_lite.auth.pkce import Pkce, new_state
from mcp_lite.errors import AuthRequired, ConfigError


def test_parse_challenge_bearer_params() -> None:
    c = parse_challenge(
        'Bearer realm="r", error="insufficient_scope", scope="a b", '
        'resource_metadata="https://x/.well-known/oauth-protected-resource"'
    )
    assert c is not None and c.insufficient_scope
    assert c.scope == "a b"
    assert c.resource_metadata == "https://x/.well-known/oauth-protected-resource"


def test_parse_challenge_among_other_schemes() -> None:
    c = parse_challenge('Basic realm="x", Bearer scope="mcp:read"')
    assert c is not None and c.scope == "mcp:read"
    assert parse_challenge('Basic realm="x"') is None
    assert parse_challenge(None) is None
    bare = parse_challenge("Bearer")
    assert bare is not None and bare.scope is None


def test_prm_urls_in_spec_order() -> None:
    c = parse_challenge('Bearer resource_metadata="https://h/custom.json"')
    assert prm_urls("https://h/api/mcp", c) == [
        "https://h/custom.json",
        "https://h/.well-known/oauth-protected-resource/api/mcp",
        "https://h/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("https://h", None) == ["https://h/.well-known/oauth-protected-resource"]


def test_as_metadata_urls_in_spec_order() -> None:
    assert as_metadata_urls("https://a/tenant1") == [
        "https://a/.well-known/oauth-authorization-server/tenant1",
        "https://a/.well-known/openid-configuration/tenant1",
        "https://a/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://a") == [
        "https://a/.well-known/oauth-authorization-server",
        "https://a/.well-known/openid-configuration",
    ]


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/x",
        "javascript:alert(1)",
        "file:///etc/x",
        "ftp://h/x",
        "https://u:p@h/x",
        "data:text/plain,x",
    ],
)
def test_insecure_urls_are_refused(url: str) -> None:
    with pytest.raises(AuthRequired):
        require_secure(url, "metadata")


@pytest.mark.parametrize(
    "url",
    ["https://example.com/x", "http://localhost:8000/x", "http://127.0.0.1/x", "http://[::1]:9/x"],
)
def test_https_and_loopback_http_are_accepted(url: str) -> None:
    assert require_secure(url, "metadata") == url


@pytest.mark.parametrize(
    "uri", ["https://example.com/cb", "http://example.com/cb", "http://10.0.0.1/cb", "myapp://cb"]
)
def test_redirect_uris_must_be_loopback(uri: str) -> None:
    with pytest.raises(ConfigError):
        require_loopback_redirect(uri)
    assert require_loopback_redirect("http://127.0.0.1:9/callback")


def test_canonical_url() -> None:
    assert canonical_url("HTTPS://Example.COM:443/mcp/#frag") == "https://example.com/mcp"
    assert canonical_url("http://h:8080/") == "http://h:8080"


def test_pkce_s256() -> None:
    p = Pkce.new()
    assert 43 <= len(p.verifier) <= 128
    digest = base64.urlsafe_b64encode(hashlib.sha256(p.verifier.encode()).digest())
    assert p.challenge == digest.rstrip(b"=").decode()
    assert p.method == "S256"
    assert p.verifier not in repr(p)
    assert Pkce.new().verifier != p.verifier and new_state() != new_state()


def _meta(**kw: object) -> AuthServerMetadata:
    data = {
        "issuer": "https://as",
        "authorization_endpoint": "https://as/authorize",
        "token_endpoint": "https://as/token",
        "code_challenge_methods_supported": ["S256"],
    }
    data.update(kw)
    return AuthServerMetadata.from_json(data)


def test_scope_selection_order() -> None:
    prm = ProtectedResource("https://r", ("https://as",), ("a", "b"))
    assert select_scope("x", prm, _meta()) == "x"  # challenge wins
    assert select_scope(None, prm, _meta()) == "a b"  # then PRM
    assert select_scope(None, None, _meta()) is None  # else omitted
    with_offline = _meta(scopes_supported=["a", "offline_access"])
    assert select_scope(None, prm, with_offline) == "a b offline_access"
    assert select_scope(None, prm, with_offline, offline_access=False) == "a b"
    assert merge_scopes("a b", "b c") == "a b c"


def test_authorization_request_refuses_server_without_s256() -> None:
    client = ClientInfo("c")
    for methods in (None, ["plain"]):
        meta = _meta(code_challenge_methods_supported=methods)
        with pytest.raises(AuthRequired, match="S256"):
            AuthorizationRequest.build(
                meta, client, redirect_uri="http://127.0.0.1/cb", resource="https://r", scope=None
            )


def _request(**kw: object) -> AuthorizationRequest:
    return AuthorizationRequest.build(
        _meta(**kw),
        ClientInfo("c"),
        redirect_uri="http://127.0.0.1/cb",
        resource="https://r/mcp",
        scope="a",
    )


def test_authorization_request_carries_resource_pkce_and_state() -> None:
    req = _request()
    assert "resource=https%3A%2F%2Fr%2Fmcp" in req.url
    assert "code_challenge_method=S256" in req.url and f"state={req.state}" in req.url
    assert req.pkce.verifier not in req.url


def test_state_mismatch_aborts() -> None:
    req = _request()
    with pytest.raises(AuthRequired, match="state"):
        req.code_from("http://127.0.0.1/cb?code=abc&state=forged")
    with pytest.raises(AuthRequired, match="state"):
        req.code_from("http://127.0.0.1/cb?code=abc")


def test_iss_rules_rfc9207() -> None:
    req = _request()
    ok = f"http://127.0.0.1/cb?code=abc&state={req.state}"
    assert req.code_from(ok) == "abc"  # both absent: proceed
    assert req.code_from(ok + "&iss=https%3A%2F%2Fas") == "abc"  # matches
    with pytest.raises(AuthRequired, match="issuer") as err:
        req.code_from(
            f"http://127.0.0.1/cb?error=access_denied&error_description=LEAK"
            f"&state={req.state}&iss=https%3A%2F%2Fevil"
        )
    assert "LEAK" not in str(err.value) and "access_denied" not in str(err.value)
    strict = _request(authorization_response_iss_parameter_supported=True)
    with pytest.raises(AuthRequired, match="iss"):
        strict.code_from(f"http://127.0.0.1/cb?code=abc&state={strict.state}")


def test_token_set_refresh_keeps_old_refresh_token() -> None:
    first = TokenSet.from_response(
        {"access_token": "a1", "refresh_token": "r1", "expires_in": 100, "scope": "s"}, now=1000.0
    )
    assert first.expires_at == 1100.0 and not first.expired(now=1000.0)
    assert first.expired(now=1050.0)  # within the 60 s skew
    second = TokenSet.from_response({"access_token": "a2"}, previous=first)
    assert second.refresh_token == "r1" and second.scope == "s"
    assert "a1" not in repr(first) and "r1" not in repr(first)


def test_the_refresh_margin_is_at_most_half_the_lifetime() -> None:
    def token(expires_in: Any) -> TokenSet:
        return TokenSet.from_response({"access_token": "a", "expires_in": expires_in}, now=1000.0)

    hour = token(3600)  # a long-lived token: renewed 60 s before it expires
    assert not hour.expired(now=4539.0) and hour.expired(now=4540.0)
    short = token(30)  # 30 s: renewed after 15 s, not before every request
    assert not short.expired(now=1014.9) and short.expired(now=1015.0)
    assert token(0).expired(now=1000.0)  # issued already expired
    assert token("30")._lifetime == 30.0
    again = TokenSet.from_json(short.to_json())  # the lifetime is stored with the token
    assert again is not None and again._lifetime == 30.0
    assert not again.expired(now=1014.9)
    old = TokenSet.from_json({"access_token": "a", "expires_at": 1030.0})  # stored before
    assert old is not None and old._lifetime is None and old.expired(now=1000.0)  # 60 s
    assert not short.expired(skew=5.0, now=1020.0)  # an explicit margin still wins


def test_reprs_hide_secrets() -> None:
    assert "topsecret" not in repr(ClientInfo("id", client_secret="topsecret"))
    assert "topsecret" not in repr(ClientCredentials("id", client_secret="topsecret"))
    assert "PRIVATE" not in repr(ClientCredentials("id", private_key="PRIVATE KEY"))
    assert scrub("token abcdef in text", ["abcdef"]) == "token [redacted] in text"


def test_client_credentials_needs_one_secret() -> None:
    with pytest.raises(ConfigError):
        ClientCredentials("id")
    with pytest.raises(ConfigError):
        ClientCredentials("id", client_secret="s", private_key="k")


def test_client_metadata_document() -> None:
    doc = client_metadata_document(
        "https://app.example/client.json", client_name="x", redirect_uris=["http://127.0.0.1:3/cb"]
    )
    assert doc["client_id"] == "https://app.example/client.json"
    assert "refresh_token" in doc["grant_types"]
    with pytest.raises(ConfigError):
        client_metadata_document("https://app.example", client_name="x", redirect_uris=[])


def test_memory_store_roundtrip() -> None:
    store = MemoryTokenStore()
    store.save("k", {"a": 1})
    assert store.load("k") == {"a": 1}
    store.delete("k")
    assert store.load("k") is None


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_file_store_permissions_and_roundtrip(tmp_path: object) -> None:
    folder = os.path.join(str(tmp_path), "oauth")
    store = FileTokenStore(folder)
    store.save("tokens https://as https://r", {"access_token": "secret-at"})
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    (name,) = os.listdir(folder)
    assert stat.S_IMODE(os.stat(os.path.join(folder, name)).st_mode) == 0o600
    assert "https" not in name  # names are hashes, not server URLs
    again = FileTokenStore(folder)  # "a process started tomorrow"
    assert again.load("tokens https://as https://r") == {"access_token": "secret-at"}
    assert again.load("other") is None
    again.delete("tokens https://as https://r")
    assert again.load("tokens https://as https://r") is None
    assert folder in repr(again) and "secret" not in repr(again)


def test_token_set_json_roundtrip() -> None:
    t = TokenSet("a", expires_at=time.time() + 10, refresh_token="r", scope="s")
    assert TokenSet.from_json(t.to_json()) == t
    assert TokenSet.from_json({"nope": 1}) is None
