"""A deliberately plain stdio MCP server (handshake era only), written against the wire format
with no library: what a small third-party server looks like to the CLI.

- tools: ``logo`` (an image/png block of 12,345 bytes and a text line), ``sound`` (audio only),
  ``file`` (an embedded resource with a blob), ``empty`` (no content at all), ``add``,
  ``stats`` (declares an outputSchema but sends its JSON as text only, like older servers);
- resources: ``plain://logo.png`` (a blob); NO resource templates: ``resources/templates/list``
  and every other unknown method answer -32601, as servers without that feature do.
"""

from __future__ import annotations

import base64
import json
import sys

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 48 + b"\x00" * 57  # 12,345 bytes
B64 = base64.b64encode(PNG).decode()

TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("logo", "sound", "file", "empty", "add")
] + [
    {
        "name": "stats",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"],
        },
    }
]


def result(method: str, params: dict) -> dict:
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "plain", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name = params.get("name")
        if name == "logo":
            return {"content": [{"type": "image", "data": B64, "mimeType": "image/png"},
                                {"type": "text", "text": "the logo"}]}
        if name == "sound":
            return {"content": [{"type": "audio", "data": B64[:1368], "mimeType": "audio/wav"}]}
        if name == "file":
            return {"content": [{"type": "resource", "resource": {
                "uri": "plain://data.bin", "mimeType": "application/octet-stream", "blob": B64}}]}
        if name == "empty":
            return {"content": []}
        if name == "stats":
            return {"content": [{"type": "text", "text": '{"count": 3}'}]}
        if name == "add":
            args = params.get("arguments") or {}
            return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}
        raise LookupError(f"Unknown tool: {name}")
    if method == "resources/list":
        return {"resources": [{"uri": "plain://logo.png", "name": "logo", "mimeType": "image/png"}]}
    if method == "resources/read":
        return {"contents": [{"uri": params["uri"], "mimeType": "image/png", "blob": B64}]}
    if method == "ping":
        return {}
    raise NotImplementedError(method)


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "id" not in message or "method" not in message:
            continue  # notifications and responses
        reply: dict = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = result(message["method"], message.get("params") or {})
        except NotImplementedError as exc:
            reply["error"] = {"code": -32601, "message": f"Method not found: {exc}"}
        except LookupError as exc:
            reply["error"] = {"code": -32602, "message": str(exc)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
