"""OAuth 2.1 for remote MCP servers (the authorization chapters of the MCP specification,
2025-03-26 to 2026-07-28).

Three ways to use it, all through ``mcp_lite.connect(url, auth=...)``::

    from mcp_lite.auth import OAuth, ClientCredentials

    # interactive: opens the browser once, then refreshes from the token store
    mcp_lite.connect(url, auth=OAuth(url))

    # headless: you show the URL and return the redirect URL
    mcp_lite.connect(url, auth=OAuth(url, authorization_handler=ask_user))

    # unattended (cron): client credentials, secret or private_key_jwt
    mcp_lite.connect(url, auth=OAuth(url, grant=ClientCredentials("id", client_secret="...")))

    # workloads (Kubernetes, CI): the platform's identity token, JWT-bearer grant
    mcp_lite.connect(url, auth=OAuth(url, grant=WorkloadIdentity(assertion_file="/var/run/token")))

DPoP-bound tokens (RFC 9449) are used when the servers offer them and the ``jwt`` extra is
installed (``OAuth(url, dpop=True)`` insists, ``dpop=False`` never).

Modules: ``discovery`` (challenge, PRM, authorization-server metadata), ``registration``
(pre-registered, CIMD, DCR), ``pkce``, ``flow`` (grants and scopes), ``workload`` (workload
identity), ``dpop`` (proof-of-possession keys), ``storage`` (token
stores), ``provider`` (``OAuth``). Importing this package does not import ``requests``-heavy
code until an ``OAuth`` is built... except ``requests`` itself, which the transports load anyway.
"""

from __future__ import annotations

from .discovery import AuthServerMetadata, Challenge, ProtectedResource, parse_challenge
from .flow import ClientCredentials, IdJagGrant
from .provider import OAuth, fetch_redirect
from .redis_store import RedisTokenStore
from .registration import ClientInfo, client_metadata_document
from .storage import FileTokenStore, MemoryTokenStore, TokenSet, TokenStore
from .workload import WorkloadIdentity

__all__ = [
    "AuthServerMetadata",
    "Challenge",
    "ClientCredentials",
    "ClientInfo",
    "FileTokenStore",
    "IdJagGrant",
    "MemoryTokenStore",
    "OAuth",
    "ProtectedResource",
    "RedisTokenStore",
    "TokenSet",
    "TokenStore",
    "WorkloadIdentity",
    "client_metadata_document",
    "fetch_redirect",
    "parse_challenge",
]
