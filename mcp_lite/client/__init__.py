"""``Client``: one MCP server, plain blocking calls, safe to share between threads and forks;
``connect()`` makes one and connects it. The class is built from the package's modules: era
negotiation (``_negotiate``), the connection it keeps (``_connecting``), the call paths
(``_calls``), target naming (``_targets``) and tool results (``_tool_results``)."""

from ._client import DEFAULT_DISCOVER_TIMEOUT, DEFAULT_TIMEOUT, LOG_LEVELS, Client, connect
from ._client import _target_name as _target_name

__all__ = ["DEFAULT_DISCOVER_TIMEOUT", "DEFAULT_TIMEOUT", "LOG_LEVELS", "Client", "connect"]
