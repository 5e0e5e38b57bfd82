"""JSON Schema 2020-12 tool schemas are kept in meaning — $schema, $defs, $anchor, $ref,
composition, conditionals, additionalProperties, x-mcp-header — through list_tools(), the
Hub's McpTool and tool_definitions(): nothing dereferenced, dropped or rewritten."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel

import mcp_lite
from mcp_lite.server import Server

RICH: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "urn:example:contact",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        },
        "profile": {"$ref": "https://example.invalid/profile.json"},  # never fetched
    },
    "properties": {
        "name": {"type": "string", "x-mcp-header": "Name"},
        "address": {"$ref": "#/$defs/address"},
        "home": {"$ref": "#addressDef"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
        "tags": {"type": "array", "prefixItems": [{"type": "string"}], "items": False},
        "extra": {"$dynamicRef": "#meta", "unevaluatedProperties": False},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "oneOf": [{"required": ["name"]}, {"not": {"required": ["name"]}}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "dependentRequired": {"phone": ["name"]},
    "additionalProperties": False,
}


class Street(BaseModel):
    line: str


class Place(BaseModel):
    street: Street
    zip: str | None = None


def _server() -> Server:
    server = Server("schemas")

    @server.tool(input_schema=RICH)
    def contact(name: str = "", phone: str = "", email: str = "") -> str:
        """Record a contact."""
        return name or phone or email

    @server.tool()
    def locate(city: str) -> Place:
        """A place with a nested model (an outputSchema with $defs and $ref)."""
        return Place(street=Street(line=city))

    return server


@pytest.fixture(params=["inprocess-2026", "inprocess-2025", "http-2026", "http-2025"])
def url_or_server(request: pytest.FixtureRequest) -> Any:
    server = _server()
    version = "2026-07-28" if request.param.endswith("2026") else "2025-11-25"
    if request.param.startswith("http"):
        with server.serve_http(port=0) as http:
            yield http.url, version
    else:
        yield server, version


def test_list_tools_keeps_every_keyword(url_or_server: Any) -> None:
    target, version = url_or_server
    with mcp_lite.connect(target, protocol_version=version) as client:
        tools = {t.name: t for t in client.list_tools()}
        assert tools["contact"].input_schema == RICH
        out = tools["locate"].output_schema
        assert out is not None and "$defs" in out
        assert out["properties"]["street"] == {"$ref": "#/$defs/Street"}
        # and the schema went out to the server and back unchanged in a call
        assert client.call_tool("contact", {"name": "Ada"}).text == "Ada"


def test_hub_and_tool_definitions_keep_every_keyword() -> None:
    server = _server()
    with (
        server.serve_http(port=0) as http,
        mcp_lite.Hub({"mcpServers": {"s": {"type": "http", "url": http.url}}}) as hub,
    ):
        (tool,) = [t for t in hub.tools() if t.name == "mcp__s__contact"]
        assert tool.input_schema == RICH
        for fmt, path in (("anthropic", ("input_schema",)), ("openai", ("function", "parameters"))):
            (definition,) = [
                d
                for d in hub.tool_definitions(format=fmt)
                if (d.get("name") or d.get("function", {}).get("name")) == "mcp__s__contact"
            ]
            schema = definition
            for key in path:
                schema = schema[key]
            assert schema == RICH
            # editing what we were handed does not change the Hub's copy
            schema["$defs"]["address"]["$anchor"] = "changed"
            schema["allOf"].clear()
        (again,) = [t for t in hub.tools() if t.name == "mcp__s__contact"]
        assert again.input_schema == RICH
        assert copy.deepcopy(RICH) == again.definition()["input_schema"]
