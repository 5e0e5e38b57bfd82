"""DPoP-bound tokens (RFC 9449) and workload identity federation (RFC 7523 JWT bearer),
end to end against ``authserver.py`` on 127.0.0.1, which checks every proof the way the RFC
says (``dpop_check.py``, written independently of the client)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dpop_check
import jwt
import pytest
from authserver import AuthServer

import mcp_lite
from mcp_lite.auth import FileTokenStore, MemoryTokenStore, OAuth, WorkloadIdentity, fetch_redirect
from mcp_lite.auth import provider as provider_module
from mcp_lite.auth.dpop import DPoPKey, htu_of
from mcp_lite.errors import AuthRequired, ConfigError

Start = Callable[..., AuthServer]
PINNED = "2025-11-25"


def _connect(server: AuthServer, auth: Any) -> mcp_lite.Client:
    return mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED)


def _oauth(server: AuthServer, **kw: Any) -> OAuth:
    kw.setdefault("authorization_handler", fetch_redirect)
    kw.setdefault("store", MemoryTokenStore())
    return OAuth(server.url, **kw)


# --- the key and its proofs -----------------------------------------------------------------


def test_proof_is_what_rfc_9449_asks_for() -> None:
    key = DPoPKey.generate()
    url = "https://mcp.example.com/mcp?session=1#frag"
    proof = key.proof("post", url, access_token="tok-123")
    jkt, claims = dpop_check.verify(proof, "POST", url, access_token="tok-123")
    assert jkt == key.thumbprint()
    assert claims["htu"] == "https://mcp.example.com/mcp"  # no query, no fragment
    assert "nonce" not in claims
    # A fresh jti every time; the header never carries the private key.
    again = key.proof("POST", url, access_token="tok-123")
    assert jwt.decode(again, options={"verify_signature": False})["jti"] != claims["jti"]
    assert "d" not in jwt.get_unverified_header(again)["jwk"]
    assert key.to_json()["d"] not in repr(key) and key.thumbprint() in repr(key)


def test_nonces_are_kept_per_origin() -> None:
    key = DPoPKey.generate()
    assert key.remember_nonce("https://as.example/token", "n1") is True
    assert key.remember_nonce("https://as.example/other", "n1") is False  # same origin, same
    assert key.nonce_for("https://as.example/x") == "n1"
    assert key.nonce_for("https://rs.example/mcp") is None
    proof = key.proof("POST", "https://as.example/token")
    assert jwt.decode(proof, options={"verify_signature": False})["nonce"] == "n1"


def test_key_survives_the_store() -> None:
    key = DPoPKey.generate()
    saved = json.loads(json.dumps(key.to_json()))
    back = DPoPKey.from_json(saved)
    assert back is not None and back.thumbprint() == key.thumbprint()
    assert DPoPKey.from_json({"kty": "RSA"}) is None
    assert htu_of("http://h:1/p?q#f") == "http://h:1/p"


# --- DPoP end to end ------------------------------------------------------------------------


def test_dpop_bound_tokens_end_to_end(auth_server: Start, tmp_path: Path) -> None:
    server = auth_server(dpop=True)
    store = FileTokenStore(tmp_path / "tokens")
    with _connect(server, _oauth(server, store=store)) as client:
        assert [t.name for t in client.list_tools()] == ["echo"]
        assert client.call_tool("echo", {}).text == "ok"
    assert server.proof_errors == []
    # The token request carried a proof; the token came back bound to that key.
    assert len(server.token_keys) == 1
    assert set(server.bound.values()) == set(server.token_keys)
    # Every MCP request after the 401 presented the token with the DPoP scheme and its own
    # proof (no proof used twice: the server refuses replays).
    presented = [s for s in server.requests_to("/mcp") if s.headers.get("authorization")]
    assert presented and all(s.headers["authorization"].startswith("DPoP ") for s in presented)
    assert len(server.proof_jtis) == len(set(server.proof_jtis)) >= 3

    # A later process with the same store: same key (from the store), no new login.
    logins = len(server.requests_to("/authorize"))
    with _connect(server, _oauth(server, store=store)) as client:
        client.list_tools()
    assert len(server.requests_to("/authorize")) == logins
    assert server.proof_errors == []


def test_dpop_nonces_from_both_servers_are_honoured(auth_server: Start) -> None:
    server = auth_server(dpop=True, dpop_nonce=True)
    with _connect(server, _oauth(server)) as client:
        assert client.call_tool("echo", {}).text == "ok"
    assert server.proof_errors == []
    # One use_dpop_nonce from the token endpoint, one from the MCP endpoint; each retried once.
    assert server.nonce_challenges == 2
    assert len(server.token_keys) == 1


def test_refresh_of_a_bound_token_uses_the_same_key(auth_server: Start) -> None:
    server = auth_server(dpop=True, expires_in=0)  # expired as soon as issued
    with _connect(server, _oauth(server)) as client:
        client.list_tools()
        client.call_tool("echo", {})
    grants = [s.form["grant_type"][0] for s in server.requests_to("/token")]
    assert "refresh_token" in grants
    assert len(set(server.token_keys)) == 1 and len(server.token_keys) == len(grants)
    assert server.proof_errors == []


def test_dpop_false_keeps_bearer_tokens(auth_server: Start) -> None:
    server = auth_server(dpop=True, dpop_optional=True)
    with _connect(server, _oauth(server, dpop=False)) as client:
        client.list_tools()
    assert server.token_keys == [] and server.bound == {}
    presented = [s for s in server.requests_to("/mcp") if s.headers.get("authorization")]
    assert presented and all(s.headers["authorization"].startswith("Bearer ") for s in presented)


def test_server_requiring_dpop_without_the_extra_is_a_clear_error(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider_module, "dpop_available", lambda: False)
    server = auth_server(dpop=True, dpop_challenge=True)
    with pytest.raises(ConfigError, match=r"requires DPoP.*mcp-lite-client\[jwt\]"):
        _connect(server, _oauth(server))
    assert server.requests_to("/token") == []


def test_server_offering_dpop_without_the_extra_gets_bearer(
    auth_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider_module, "dpop_available", lambda: False)
    server = auth_server(dpop=True, dpop_optional=True)
    with _connect(server, _oauth(server)) as client:
        client.list_tools()
    assert server.bound == {}


# --- workload identity ----------------------------------------------------------------------


def test_workload_identity_reads_the_assertion_file_at_each_token_request(
    auth_server: Start, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("assertion-one\n")
    server = auth_server(assertions=("assertion-one", "assertion-two"), expires_in=0)
    grant = WorkloadIdentity(assertion_file=token_file, client_id="workload-7")
    assert "assertion-one" not in repr(grant)
    with _connect(server, _oauth(server, grant=grant)) as client:
        client.list_tools()
        token_file.write_text("assertion-two")  # the platform rotated it
        client.call_tool("echo", {})
    requests_seen = server.requests_to("/token")
    forms = [{k: v[0] for k, v in s.form.items()} for s in requests_seen]
    assert forms[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    assert forms[0]["client_id"] == "workload-7" and forms[0]["resource"] == server.url
    assert [f["assertion"] for f in forms][:1] == ["assertion-one"]
    assert "assertion-two" in [f["assertion"] for f in forms[1:]]
    assert server.requests_to("/authorize") == []  # nobody present: never a browser flow


def test_workload_identity_refusal_is_reported_once_not_retried(auth_server: Start) -> None:
    server = auth_server(assertions=("the-good-one",))
    calls: list[int] = []

    def assertion() -> str:
        calls.append(1)
        return "an-expired-one"

    with pytest.raises(AuthRequired, match="invalid_grant") as info:
        _connect(server, _oauth(server, grant=WorkloadIdentity(assertion=assertion)))
    assert "an-expired-one" not in str(info.value)
    grants = [s.form["grant_type"][0] for s in server.requests_to("/token")]
    assert grants == ["urn:ietf:params:oauth:grant-type:jwt-bearer"]  # one try, no other grant
    assert server.requests_to("/authorize") == [] and len(calls) == 1


def test_workload_identity_needs_exactly_one_source() -> None:
    with pytest.raises(ConfigError):
        WorkloadIdentity()
    with pytest.raises(ConfigError):
        WorkloadIdentity(assertion="a", assertion_file="/x")
    with pytest.raises(AuthRequired, match="cannot read"):
        WorkloadIdentity(assertion_file="/nonexistent/token").current_assertion()
