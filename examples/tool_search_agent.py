"""An LLM tool loop with deferred tool loading, runnable without network or API key.

    python examples/tool_search_agent.py

A host with hundreds of MCP tools should not send them all to the model on every turn. With
``hub.tool_definitions(deferred=True)`` the model gets the always-load tools plus one
``ToolSearch`` tool; when it calls the search, the result's ``structuredContent["tools"]``
holds the full definitions of the matches, and the host adds them to the next turn.

``FakeModel`` stands in for an LLM API (the Anthropic Messages shape): it searches, then
calls the tool it found, then answers. Replace it with a real client call; the loop stays.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_lite
from mcp_lite.hub import Hub


def build_server() -> mcp_lite.Server:
    """200 tools, as a big OpenAPI-generated server would have, and one that matters."""
    server = mcp_lite.Server("ops")
    for i in range(200):

        def filler(ticket: str, _i: int = i) -> str:
            return f"operation {_i} on {ticket}"

        server.tool(name=f"operation_{i:03d}", description=f"Internal operation {i}.")(filler)

    @server.tool(annotations={"title": "Weather", "readOnlyHint": True})
    def current_weather(city: str) -> str:
        """Current conditions and temperature for a city."""
        return f"{city}: 18 C, light rain"

    return server


class FakeModel:
    """Decides from the conversation like a model would: search, call, answer."""

    def create(self, tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> dict[str, Any]:
        names = {t["name"] for t in tools}
        last = messages[-1]["content"]
        if isinstance(last, str):  # the user's question: look for a suitable tool
            return _tool_use("1", "ToolSearch", {"query": "weather in a city"})
        weather = next((n for n in names if n.endswith("current_weather")), None)
        if weather and not any("18 C" in json.dumps(m["content"]) for m in messages):
            return _tool_use("2", weather, {"city": "Lisbon"})
        return {"stop_reason": "end_turn", "content": [{"type": "text", "text": "Rain in Lisbon."}]}


def _tool_use(id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": id, "name": name, "input": arguments}
    return {"stop_reason": "tool_use", "content": [block]}


def run() -> str:
    with Hub({"ops": build_server()}) as hub:
        tools = hub.tool_definitions(format="anthropic", deferred=True)
        print(f"turn 1 offers {len(tools)} tools: {[t['name'] for t in tools]}")
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lisbon?"}]
        model = FakeModel()
        while True:
            reply = model.create(tools, messages)
            messages.append({"role": "assistant", "content": reply["content"]})
            if reply["stop_reason"] != "tool_use":
                answer = reply["content"][0]["text"]
                print(f"answer: {answer}")
                return answer
            results = []
            for block in reply["content"]:
                result = hub.call_tool(block["name"], block["input"])
                print(f"called {block['name']}: {result.text}")
                if block["name"] == "ToolSearch":  # load the matches for the next turn
                    known = {t["name"] for t in tools}
                    tools += [t for t in result.structured_content["tools"]
                              if t["name"] not in known]
                results.append(
                    {"type": "tool_result", "tool_use_id": block["id"], "content": result.text}
                )
            messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    assert run() == "Rain in Lisbon."
