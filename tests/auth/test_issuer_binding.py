"""Configured credentials go only to the issuer they belong to (issue 22.1).

The hostile party: an MCP server whose protected resource metadata names authorization
server A at first and, after A refuses a refresh, server B. With a client secret, a signing
key, an ID-JAG client or a workload assertion configured, the flow must stop with
``AuthRequired`` naming both issuers, and B must receive nothing at all. Dynamically
registered clients (keyed by issuer) follow the server to B and keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from authserver import AuthServer

import mcp_lite
from mcp_lite.auth import (
    ClientCredentials,
    IdJagGrant,
    MemoryTokenStore,
    OAuth,
    WorkloadIdentity,
    fetch_redirect,
)
from mcp_lite.errors import AuthRequired

Start = Callable[..., AuthServer]
PINNED = "2025-11-25"
SECRET = "issuer-bound-s3cr3t"


def _credentials(kind: str, idp: AuthServer) -> dict[str, Any]:
    """The ``OAuth`` options of each kind of configured credential."""
    if kind == "client_secret":
        return {
            "client_id": "cid",
            "client_secret": SECRET,
            "authorization_handler": fetch_redirect,
        }
    if kind == "client_credentials":
        return {"grant": ClientCredentials("cid", client_secret=SECRET)}
    if kind == "private_key_jwt":
        from cryptography.hazmat.primitives.asymmetric import ec

        key = ec.generate_private_key(ec.SECP256R1())
        return {"grant": ClientCredentials("cid", private_key=key, signing_algorithm="ES256")}
    if kind == "id_jag":
        grant = IdJagGrant(
            client_id="cid",
            client_secret=SECRET,
            id_token="id-token-s3cr3t",
            idp_token_endpoint=f"{idp.base}/token",
        )
        return {"grant": grant}
    assert kind == "workload"
    return {"grant": WorkloadIdentity(assertion="wif-assertion-s3cr3t")}


def _use(server: AuthServer, auth: OAuth) -> None:
    with mcp_lite.connect(server.url, auth=auth, timeout=20, protocol_version=PINNED) as client:
        client.list_tools()


KINDS = ["client_secret", "client_credentials", "private_key_jwt", "id_jag", "workload"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_new_issuer_after_a_refused_refresh_gets_nothing(auth_server: Start, kind: str) -> None:
    a = auth_server(auth_methods=["client_secret_basic"], assertions=("wif-assertion-s3cr3t",))
    b = auth_server(auth_methods=["client_secret_basic"], assertions=("wif-assertion-s3cr3t",))
    idp = auth_server()
    store = MemoryTokenStore()
    # First use: the credentials' issuer (A) is pinned in the store.
    _use(a, OAuth(a.url, store=store, **_credentials(kind, idp)))
    assert a.requests_to("/token")

    # The server turns hostile: tokens revoked, refresh refused, its metadata names B.
    a.tokens.clear()
    a.b.refuse_tokens = True
    a.b.authorization_servers = [b.base]
    # A later process with the same credentials and store.
    auth = OAuth(a.url, store=store, **_credentials(kind, idp))
    with pytest.raises(AuthRequired) as caught:
        _use(a, auth)
    message = str(caught.value)
    assert a.base in message and b.base in message
    assert SECRET not in message
    assert b.seen == [], "the other authorization server must not be contacted at all"


@pytest.mark.parametrize("kind", ["client_secret", "client_credentials"])
def test_a_configured_issuer_is_the_only_one_ever_used(auth_server: Start, kind: str) -> None:
    a, b = auth_server(auth_methods=["client_secret_basic"]), auth_server()
    idp = auth_server()
    a.b.authorization_servers = [b.base]  # hostile from the start
    auth = OAuth(a.url, store=MemoryTokenStore(), issuer=a.base, **_credentials(kind, idp))
    with pytest.raises(AuthRequired, match="nothing was sent"):
        _use(a, auth)
    assert b.seen == []
    # Named with the credentials, the issuer holds even where the PRM offers both.
    a.b.authorization_servers = [b.base, a.base]
    _use(a, OAuth(a.url, store=MemoryTokenStore(), issuer=a.base, **_credentials(kind, idp)))
    assert b.seen == [] and a.requests_to("/token")


def test_the_stored_discovery_of_another_issuer_is_not_refreshed_with_the_secret(
    auth_server: Start,
) -> None:
    """The grant itself refuses another issuer's metadata, whatever path reaches it."""
    a, b = auth_server(), auth_server()
    grant = ClientCredentials("cid", client_secret=SECRET, issuer=a.base)
    auth = OAuth(b.url, store=MemoryTokenStore(), grant=grant)
    with pytest.raises(AuthRequired) as caught:
        _use(b, auth)
    assert a.base in str(caught.value) and b.base in str(caught.value)
    assert b.requests_to("/token") == []


def test_a_dynamically_registered_client_follows_the_server(auth_server: Start) -> None:
    a, b = auth_server(), auth_server()
    store = MemoryTokenStore()
    _use(a, OAuth(a.url, store=store, authorization_handler=fetch_redirect))
    a.tokens.clear()
    a.b.refuse_tokens = True
    a.b.authorization_servers = [b.base]
    a.tokens = b.tokens  # the resource now accepts what B issues
    b.counter = 1000  # and B's tokens differ from A's
    _use(a, OAuth(a.url, store=store, authorization_handler=fetch_redirect))
    assert b.requests_to("/register") and b.requests_to("/token")
