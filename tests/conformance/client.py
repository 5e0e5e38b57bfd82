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


_SAMPLES: dict[str, Any] = {"string": "test", "integer": 1, "number": 1, "boolean": True}


def _sample_arguments(schema: Any) -> dict[str, Any]:
    """A value for every required property of a flat object schema (by its declared type)."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    args: dict[str, Any] = {}
    for name in schema.get("required") or []:
        spec = properties.get(name) if isinstance(properties.get(name), dict) else {}
        kind = spec.get("type")
        if "enum" in spec and spec["enum"]:
            args[name] = spec["enum"][0]
        elif kind == "object":
            args[name] = {}
        elif kind == "array":
            args[name] = []
        else:
            args[name] = _SAMPLES.get(kind if isinstance(kind, str) else "string", "test")
    return args


def _use_tools(client: mcp_lite.Client) -> None:
    """List the tools; make the calls the harness lists in its context (``toolCalls``), else
    call each listed tool with sample values for its required arguments (add_numbers: 5+3)."""
    tools = {tool.name: tool for tool in client.list_tools()}
    planned = _context().get("toolCalls")
    if isinstance(planned, list):
        for call in planned:
            if isinstance(call, dict) and call.get("name") in tools:  # never an unlisted tool
                client.call_tool(call["name"], call.get("arguments") or {})
        return
    for tool in tools.values():
        if tool.name == "add_numbers":
            client.call_tool(tool.name, {"a": 5, "b": 3}).raise_for_error()
            continue
        try:
            client.call_tool(tool.name, _sample_arguments(tool.input_schema))
        except mcp_lite.RpcError as exc:  # the server refused our made-up arguments: its call
            print(f"conformance client: {tool.name}: {exc}", file=sys.stderr)


def run_schema_echo(url: str) -> None:
    """Hand one tool's inputSchema, as list_tools() gave it, to the echo tool."""
    with mcp_lite.connect(url, timeout=TIMEOUT) as client:
        tools = {tool.name: tool for tool in client.list_tools()}
        focal = tools["json_schema_2020_12_tool"]
        client.call_tool("json_schema_echo", {"schema": focal.input_schema}).raise_for_error()


def run_list_skills(url: str) -> None:
    """List the server's skills and load none of them."""
    with mcp_lite.connect(url, timeout=TIMEOUT) as client:
        client.list_skills()


def run_load_skills(url: str) -> None:
    """List the skills, load each one and read every file it lists (each verified)."""
    with mcp_lite.connect(url, timeout=TIMEOUT) as client:
        for skill in client.list_skills():
            loaded = client.load_skill(skill)
            for uri in loaded.file_uris():
                loaded.read(uri)


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
    from mcp_lite.auth import (
        ClientCredentials,
        IdJagGrant,
        MemoryTokenStore,
        OAuth,
        WorkloadIdentity,
    )

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
    elif scenario == "auth/wif-jwt-bearer":
        # The workload's identity token comes from its platform (here: the harness).
        auth = OAuth(
            url,
            grant=WorkloadIdentity(
                assertion=context["valid_jwt"], client_id=context.get("client_id")
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
    "json-schema-2020-12-preservation": run_schema_echo,
    "sep-2640-client-no-prefetch": run_list_skills,
    "sep-2640-client-verify-digest": run_load_skills,
    "sep-2640-client-verify-size": run_load_skills,
    "sep-2640-client-verify-frontmatter": run_load_skills,
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
