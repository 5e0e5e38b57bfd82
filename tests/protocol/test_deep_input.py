"""Deeply nested server input never escapes as a bare ``RecursionError`` (issue 22, item 10).

Every parser or walker of server data that recurses is bounded: the skill frontmatter
parser has an explicit depth limit (``SkillVerificationError`` from ``load_skill`` and
``hub.load_skill``); an ``outputSchema`` that loops (``$ref``), is nested too deep, or names a
``$ref`` we do not fetch makes ``call_tool`` raise ``RemoteProtocolError``; a tool's text
nested too deep for ``json.loads`` is no JSON; an OAuth document nested too deep is
``AuthRequired``; JSON-RPC frames go through ``decode_message``, whose parser (pydantic_core)
refuses nesting past its limit with ``ValueError`` in both builds. Each in bounded time.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.auth._net import _json_object
from mcp_lite.errors import AuthRequired, McpError, RemoteProtocolError, SkillVerificationError
from mcp_lite.protocol import skills as sk
from mcp_lite.server import Server

DEEP = 3000  # far past Python's recursion limit (1000), within the 8 MiB SKILL.md limit


def nested_mapping(depth: int) -> str:
    return "".join(f"{' ' * i}k{i}:\n" for i in range(depth)) + f"{' ' * depth}leaf: 1\n"


def nested_sequence(depth: int) -> str:
    return "".join(f"{' ' * i}-\n" for i in range(depth)) + f"{' ' * depth}- 1\n"


def nested_items(depth: int) -> str:  # "- k:" items, each a mapping holding the next
    return "".join(f"{'  ' * i}- k{i}:\n" for i in range(depth)) + f"{'  ' * depth}  - 1\n"


FRONTMATTERS = {
    "mapping": "name: a\ndescription: b\n" + nested_mapping(DEEP),
    "sequence": "name: a\ndescription: b\nlist:\n" + nested_sequence(DEEP),
    "items": "name: a\ndescription: b\nlist:\n" + nested_items(DEEP),
    "flow": "name: a\ndescription: b\nflow: " + "[" * DEEP + "x" + "]" * DEEP + "\n",
    "flow key": "[" * DEEP + "]" * DEEP + ": 1\n",
}


@pytest.mark.parametrize("kind", list(FRONTMATTERS))
def test_frontmatter_parser_has_a_depth_limit(kind: str) -> None:
    start = time.monotonic()
    with pytest.raises(ValueError, match="nested deeper than"):
        sk.parse_frontmatter(FRONTMATTERS[kind])
    assert time.monotonic() - start < 5


def test_frontmatter_within_the_limit_still_parses() -> None:
    parsed = sk.parse_frontmatter(nested_mapping(20) + "flow: [[[a, b]]]\n")
    node: Any = parsed
    for i in range(20):
        node = node[f"k{i}"]
    assert node == {"leaf": 1}
    assert sk.parse_frontmatter("l: " + "[" * 30 + "x" + "]" * 30)["l"] is not None


@pytest.mark.parametrize("kind", list(FRONTMATTERS))
def test_check_frontmatter_raises_skill_verification_error(kind: str) -> None:
    entry = sk.parse_entry(
        {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a", "description": "b"}}
    )
    with pytest.raises(SkillVerificationError, match="nested deeper than"):
        sk.check_frontmatter(entry, "---\n" + FRONTMATTERS[kind] + "---\nbody\n")


@pytest.fixture
def deep_skill(tmp_path: Path) -> Iterator[Server]:
    """A server whose SKILL.md, once listed, is a frontmatter nested 3000 levels deep (its
    digest in the entry matches: the server computes it from the disk when asked)."""
    root = tmp_path / "deep"
    root.mkdir()
    (root / "SKILL.md").write_text("---\nname: deep\ndescription: d\n---\nbody\n")
    server = Server("skills")
    server.add_skill(root, path="deep")
    (root / "SKILL.md").write_text("---\n" + FRONTMATTERS["mapping"] + "---\nbody\n")
    yield server


def test_load_skill_raises_only_mcp_errors(deep_skill: Server) -> None:
    with mcp_lite.connect(deep_skill) as client:
        [skill] = client.list_skills()
        start = time.monotonic()
        with pytest.raises(SkillVerificationError, match="nested deeper than") as info:
            client.load_skill(skill)
        assert isinstance(info.value, McpError)
        assert time.monotonic() - start < 5


def test_hub_load_skill_raises_only_mcp_errors(deep_skill: Server) -> None:
    with deep_skill.serve_http(port=0) as http:
        config = {"mcpServers": {"docs": {"type": "http", "url": http.url}}}
        with mcp_lite.Hub(config) as hub:
            [skill] = hub.skills()
            with pytest.raises(SkillVerificationError, match="nested deeper than"):
                hub.load_skill(skill)


# --- outputSchema: the client's schema walker (jsonschema) ---------------------------------


def deep_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(depth):
        schema = {"items": schema}
    return schema


def deep_value(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


SCHEMAS = {
    "self $ref": {"$ref": "#"},
    "$ref cycle": {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a",
    },
    "deep": deep_schema(190),  # under the wire decoder's limit (200), past jsonschema's
    "remote $ref": {"$ref": "http://127.0.0.1:9/schema.json"},
}


def server_with_output_schema(schema: dict[str, Any], structured: Any, text: str) -> Server:
    server = Server("schemas")

    @server.tool()
    def answer() -> dict[str, Any]:
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if structured is not None:
            result["structuredContent"] = structured
        return result

    spec = server._registry.tools["answer"]
    plain = spec.definition
    object.__setattr__(spec, "definition", lambda: {**plain(), "outputSchema": schema})
    return server


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_call_tool_with_a_hostile_output_schema(name: str) -> None:
    structured = deep_value(190) if name == "deep" else {"a": 1}
    server = server_with_output_schema(SCHEMAS[name], structured, "{}")
    with mcp_lite.connect(server) as client:
        assert client.list_tools()[0].output_schema == SCHEMAS[name]
        start = time.monotonic()
        with pytest.raises(RemoteProtocolError, match="outputSchema"):
            client.call_tool("answer")
        assert time.monotonic() - start < 5


def test_call_tool_with_text_nested_too_deep_for_json() -> None:
    """No structuredContent: the text is parsed as JSON for the check; nested past the
    recursion limit it is no JSON (then it fails the schema, as any non-object would)."""
    server = server_with_output_schema({"type": "object"}, None, "[" * 100_000 + "]" * 100_000)
    with mcp_lite.connect(server) as client:
        client.list_tools()
        with pytest.raises(RemoteProtocolError, match="outputSchema"):
            client.call_tool("answer")


# --- other parsers of server data -----------------------------------------------------------


def test_oauth_document_nested_too_deep_is_auth_required() -> None:
    with pytest.raises(AuthRequired, match="is not JSON"):
        _json_object(b"[" * 100_000 + b"]" * 100_000, "the token response")
    with pytest.raises(AuthRequired, match="is not JSON"):
        _json_object(b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "the AS metadata")


@pytest.mark.parametrize("build", ["compiled", "pure"])
@pytest.mark.parametrize("text", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 100_000 + b"1"])
def test_decode_message_refuses_deep_nesting(build: str, text: bytes) -> None:
    if build == "compiled" and os.environ.get("MCP_LITE_NO_EXTENSIONS", "") not in ("", "0"):
        pytest.skip("MCP_LITE_NO_EXTENSIONS is set")
    name = "mcp_lite._speedups" if build == "compiled" else "mcp_lite._speedups_py"
    try:
        module = importlib.import_module(name)
    except ImportError:
        pytest.skip("the compiled kernels are not built")
    with pytest.raises(ValueError, match="recursion limit"):
        module.decode_message(text)


# --- our Server, facing a hostile client ----------------------------------------------------


def test_stdio_server_answers_a_parse_error_and_goes_on(tmp_path: Path) -> None:
    """A line nested too deep for json.loads used to kill the stdio server (RecursionError)."""
    script = tmp_path / "srv.py"
    script.write_text(
        "from mcp_lite.server import Server\nServer('s').run_stdio()\n", encoding="utf-8"
    )
    deep = "[" * 100_000 + "]" * 100_000
    ping = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    proc = subprocess.run(
        [sys.executable, str(script)],
        input=deep + "\n" + ping + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.getcwd(),
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert [a.get("error", {}).get("code") for a in answers] == [-32700, None], proc.stderr[-500:]
    assert answers[1] == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_http_server_answers_a_parse_error() -> None:
    server = Server("s")
    deep = b"[" * 100_000 + b"]" * 100_000
    with server.serve_http(port=0) as http:
        request = urllib.request.Request(
            http.url,
            data=deep,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            },
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
        assert info.value.code == 400
        assert json.loads(info.value.read())["error"]["code"] == -32700
