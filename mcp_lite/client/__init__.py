"""``Client``: one MCP server, plain blocking calls, safe to share between threads and forks;
``connect()`` makes one and connects it. The class is built from the package's modules: era
negotiation (``_negotiate``), the connection it keeps (``_connecting``), the call paths
(``_calls``), the tool calls (``_tools``), target naming (``_targets``) and tool results
(``_tool_results``)."""

from ._client import DEFAULT_DISCOVER_TIMEOUT as DEFAULT_DISCOVER_TIMEOUT
from ._client import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from ._client import LOG_LEVELS as LOG_LEVELS
from ._client import Client, connect

__all__ = ["Client", "connect"]
