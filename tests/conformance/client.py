"""The conformance client: the command the official conformance harness runs.

    python tests/conformance/client.py <server-url>

The harness (``@modelcontextprotocol/conformance``, run by
``../shared/conformance/run_client_conformance.sh``) starts a mock server per scenario and runs
this script with the scenario name in ``MCP_CONFORMANCE_SCENARIO`` and, for scenarios with
credentials, a JSON object in ``MCP_CONFORMANCE_CONTEXT``. The server URL is the last argument.

Everything here goes through the public API (``mcp_lite.connect`` and ``mcp_lite.auth``): the
script is a user of the library, not a second implementation. It exits 0 on success and 1 with
one line on stderr otherwise (never a token: the library keeps them out of its messages).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import mcp_lite

# The Client ID Metadata Document URL the harness expects when the server supports CIMD.
CIMD_URL = "https://conformance-test.local/client-metadata.json"
TIMEOUT = 20.0


def _context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    value = json.loads(raw)
    return value if isinstance(value, dict) else {}


def _elicitation_defaults(params: Any) -> dict[str, Any]:
    """Accept, filling every field from the schema's defaults (SEP-1034)."""
    schema = getattr(params, "requested_schema", None) or getattr(params, "requestedSchema", None)
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    properties = (schema or {}).get("properties") or {}
    content = {
        name: spec["default"]
        for name, spec in properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    return {"action": "accept", "content": content}


def _use_tools(client: mcp_lite.Client) -> None:
    """List the tools and call each one that takes no required argument (or add_numbers)."""
    for tool in client.list_tools():
        schema = tool.input_schema or {}
        required = schema.get("required") if isinstance(schema, dict) else None
        if tool.name == "add_numbers":
            client.call_tool(tool.name, {"a": 5, "b": 3}).raise_for_error()
        elif not required:
            client.call_tool(tool.name, {})


def run_basic(url: str) -> None:
    with mcp_lite.connect(url, timeout=TIMEOUT) as client:
        client.list_tools()


def run_tools(url: str) -> None:
    with mcp_lite.connect(
        url, timeout=TIMEOUT, elicitation_handler=_elicitation_defaults
    ) as client:
        _use_tools(client)


def _oauth(url: str, context: dict[str, Any], **options: Any) -> Any:
    """An OAuth provider for a harness scenario: headless, in-memory, CIMD URL configured."""
    from mcp_lite.auth import MemoryTokenStore, OAuth, fetch_redirect

    client_id = context.get("client_id")
    return OAuth(
        url,
        client_id=client_id if "client_secret" in context or client_id else None,
        client_secret=context.get("client_secret"),
        client_metadata_url=CIMD_URL,
        client_name="mcp-lite conformance client",
        authorization_handler=fetch_redirect,
        store=MemoryTokenStore(),
        **options,
    )


def run_auth(url: str, scenario: str) -> None:
    from mcp_lite.auth import ClientCredentials, IdJagGrant, MemoryTokenStore, OAuth

    context = _context()
    auth: Any
    if scenario == "auth/client-credentials-jwt":
        auth = OAuth(
            url,
            grant=ClientCredentials(
                client_id=context["client_id"],
                private_key=context["private_key_pem"],
                signing_algorithm=context.get("signing_algorithm", "ES256"),
            ),
            store=MemoryTokenStore(),
        )
    elif scenario == "auth/client-credentials-basic":
        auth = OAuth(
            url,
            grant=ClientCredentials(
                client_id=context["client_id"], client_secret=context["client_secret"]
            ),
            store=MemoryTokenStore(),
        )
    elif scenario in (
        "auth/cross-app-access-complete-flow",
        "auth/enterprise-managed-authorization",
    ):
        auth = OAuth(
            url,
            grant=IdJagGrant(
                client_id=context["client_id"],
                client_secret=context["client_secret"],
                id_token=context["idp_id_token"],
                idp_token_endpoint=context["idp_token_endpoint"],
                idp_client_id=context.get("idp_client_id"),
            ),
            store=MemoryTokenStore(),
        )
    else:
        auth = _oauth(url, context)
    with mcp_lite.connect(
        url, timeout=TIMEOUT, auth=auth, elicitation_handler=_elicitation_defaults
    ) as client:
        _use_tools(client)


SCENARIOS: dict[str, Callable[[str], None]] = {
    "initialize": run_basic,
    "tools_call": run_tools,
    "elicitation-sep1034-client-defaults": run_tools,
    "sse-retry": run_tools,
}


def main(argv: list[str]) -> int:
    logging.basicConfig(level=os.environ.get("MCP_CONFORMANCE_LOG", "WARNING"), stream=sys.stderr)
    if len(argv) < 2:
        print("usage: client.py <server-url>", file=sys.stderr)
        return 2
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    try:
        if scenario.startswith("auth/"):
            run_auth(url, scenario)
        else:
            SCENARIOS.get(scenario, run_tools)(url)
    except mcp_lite.McpError as exc:
        print(f"conformance client ({scenario}): {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
