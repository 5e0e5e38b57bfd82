"""The protocol revisions mcp_lite speaks, in two eras (the ``initialize`` handshake,
2024-11-05 … 2025-11-25, and the stateless 2026-07-28), and the names of the 2026-07-28
``_meta`` keys.
"""

from __future__ import annotations

from typing import Final

V2024_11_05: Final = "2024-11-05"
V2025_03_26: Final = "2025-03-26"
V2025_06_18: Final = "2025-06-18"
V2025_11_25: Final = "2025-11-25"
V2026_07_28: Final = "2026-07-28"

# Newest first: the order we prefer them in.
HANDSHAKE_VERSIONS: Final = (V2025_11_25, V2025_06_18, V2025_03_26, V2024_11_05)
STATELESS_VERSIONS: Final = (V2026_07_28,)
SUPPORTED_VERSIONS: Final = STATELESS_VERSIONS + HANDSHAKE_VERSIONS
LATEST_HANDSHAKE_VERSION: Final = HANDSHAKE_VERSIONS[0]
LATEST_VERSION: Final = V2026_07_28

# 2026-07-28 reserved _meta keys.
META_PREFIX: Final = "io.modelcontextprotocol/"
META_PROTOCOL_VERSION: Final = META_PREFIX + "protocolVersion"
META_CLIENT_CAPABILITIES: Final = META_PREFIX + "clientCapabilities"
META_CLIENT_INFO: Final = META_PREFIX + "clientInfo"
META_SERVER_INFO: Final = META_PREFIX + "serverInfo"
META_LOG_LEVEL: Final = META_PREFIX + "logLevel"
META_SUBSCRIPTION_ID: Final = META_PREFIX + "subscriptionId"


def is_stateless(version: str) -> bool:
    """True for a revision of the stateless (2026-07-28) era."""
    return version in STATELESS_VERSIONS


def supports_batches(version: str) -> bool:
    """Only 2025-03-26 allows JSON-RPC batches; we accept them from such servers."""
    return version == V2025_03_26
