"""A raw stdio MCP server (stdlib only) offering many realistic tools in one ``tools/list`` page.

    python bench/tool_list_server.py [COUNT]      # COUNT defaults to 1000

It speaks the handshake era like a legacy server (``server/discover`` gets -32601). The tools
look like the ones real servers publish (GitHub, databases, ticketing, files, cloud): a
snake_case name, a title, a few sentences of description, an ``inputSchema`` with 2-9
properties of mixed types (strings with formats and enums, integers with bounds, arrays,
nested objects, required lists), annotations, and on some an ``outputSchema``. The list is
built once, deterministically, and the encoded answer reused: the server costs next to
nothing per ``tools/list``. ``tools/call`` answers with the arguments as text.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

SERVICES = ("github", "gitlab", "jira", "linear", "slack", "postgres", "mysql", "s3", "gcs",
            "k8s", "docker", "stripe", "notion", "drive", "calendar", "sentry", "datadog",
            "pagerduty", "confluence", "salesforce")
VERBS = ("list", "get", "create", "update", "delete", "search", "archive", "export",
         "sync", "describe")
NOUNS = ("issue", "pull_request", "comment", "branch", "user", "project", "record", "file",
         "bucket", "deployment", "invoice", "page", "event", "alert", "dashboard")
WORDS = ("the", "a", "resource", "request", "returns", "optional", "filter", "by", "owner",
         "repository", "when", "set", "only", "results", "matching", "are", "included",
         "paginated", "cursor", "limit", "sorted", "descending", "order", "of", "creation",
         "time", "requires", "permission", "scope", "write", "read", "access", "token",
         "identifier", "unique", "within", "workspace", "organization", "labels", "state")
PROPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("owner", {"type": "string", "description": "Account or organization that owns it."}),
    ("repo", {"type": "string", "description": "Repository name, without the owner."}),
    ("id", {"type": "string", "description": "Unique identifier.", "pattern": "^[A-Za-z0-9_-]+$"}),
    ("title", {"type": "string", "description": "Human-readable title.", "maxLength": 256}),
    ("body", {"type": "string", "description": "Markdown body."}),
    ("state", {"type": "string", "enum": ["open", "closed", "all"], "default": "open"}),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 30,
               "description": "Results per page."}),
    ("cursor", {"type": "string", "description": "Opaque cursor from the previous page."}),
    ("labels", {"type": "array", "items": {"type": "string"}, "description": "Labels to apply."}),
    ("since", {"type": "string", "format": "date-time", "description": "Only after this time."}),
    ("dry_run", {"type": "boolean", "default": False, "description": "Validate only."}),
    ("query", {"type": "string", "description": "Search query in the service's syntax."}),
    ("sort", {"type": "string", "enum": ["created", "updated", "name"], "default": "created"}),
    ("assignees", {"type": "array", "items": {"type": "string"}, "maxItems": 10}),
    ("metadata", {"type": "object", "additionalProperties": {"type": "string"},
                  "description": "Free-form key/value pairs."}),
    ("options", {"type": "object", "description": "Advanced options.", "properties": {
        "timeout_ms": {"type": "integer", "minimum": 0},
        "retries": {"type": "integer", "minimum": 0, "maximum": 5},
        "region": {"type": "string", "enum": ["us-east-1", "eu-west-1", "ap-south-1"]},
    }, "additionalProperties": False}),
)


def make_tools(count: int) -> list[dict[str, Any]]:
    rnd = random.Random(20261130)
    tools: list[dict[str, Any]] = []
    seen: set[str] = set()
    while len(tools) < count:
        service, verb, noun = rnd.choice(SERVICES), rnd.choice(VERBS), rnd.choice(NOUNS)
        name = f"{service}_{verb}_{noun}"
        if name in seen:
            name = f"{name}_{len(tools)}"
        seen.add(name)
        chosen = rnd.sample(PROPS, rnd.randint(2, 9))
        description = (f"{verb.capitalize()} a {noun.replace('_', ' ')} in {service}. "
                       + " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(15, 60))) + ".")
        tool: dict[str, Any] = {
            "name": name,
            "title": f"{verb.capitalize()} {noun.replace('_', ' ')} ({service})",
            "description": description,
            "inputSchema": {
                "type": "object",
                "properties": {key: dict(schema) for key, schema in chosen},
                "required": [key for key, _ in chosen[: rnd.randint(0, 2)]],
                "additionalProperties": False,
            },
            "annotations": {
                "readOnlyHint": verb in ("list", "get", "search", "describe", "export"),
                "destructiveHint": verb in ("delete", "archive"),
                "openWorldHint": True,
            },
        }
        if rnd.random() < 0.3:
            tool["outputSchema"] = {
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": {"type": "object"}},
                    "next_cursor": {"type": ["string", "null"]},
                    "total": {"type": "integer"},
                },
                "required": ["items"],
            }
        tools.append(tool)
    return tools


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    tools = make_tools(count)
    out = sys.stdout.buffer
    encode = json.JSONEncoder(separators=(",", ":")).encode
    # The tools array encoded once; each answer splices in its id.
    tools_json = encode({"tools": tools}).encode()

    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
            continue  # notifications and stray responses
        rid_json = encode(msg["id"]).encode()
        method = msg["method"]
        params = msg.get("params") or {}
        if method == "tools/list":
            out.write(b'{"jsonrpc":"2.0","id":' + rid_json + b',"result":' + tools_json + b"}\n")
            out.flush()
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params.get("protocolVersion") or "2025-11-25",
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "tool-list-bench", "version": "1.0.0"},
            }
        elif method == "ping":
            result = {}
        elif method == "tools/call":
            text = encode(params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            out.write(encode({"jsonrpc": "2.0", "id": msg["id"], "error": error}).encode() + b"\n")
            out.flush()
            continue
        out.write(encode({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
