"""OAuth 2.1 for remote MCP servers (the authorization chapters of the MCP specification,
2025-03-26 to 2026-07-28), used as ``mcp_lite.connect(url, auth=OAuth(url, ...))``: interactive,
headless, client credentials, workload identity and DPoP (see docs/guides/oauth.md and
docs/explanation/oauth.md). Importing it loads no flow until an ``OAuth`` is built.
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
