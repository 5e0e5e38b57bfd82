"""The tool pool as a host sees it: names, descriptions, annotations, resources, prompts,
LLM tool definitions, and the per-server caches (invalidated on close and on list_changed)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import mcp_lite
from mcp_lite.hub import Hub, McpTool

DEMO = str(Path(__file__).resolve().parents[2] / "examples" / "demo_server.py")


def _server() -> mcp_lite.Server:
    server = mcp_lite.Server("shop")

    @server.tool(annotations={"readOnlyHint": True, "openWorldHint": True, "title": "Find"})
    def search(query: str) -> str:
        """Search the catalogue."""
        return f"found {query}"

    @server.tool(name="drop table!", annotations={"destructiveHint": True})
    def drop() -> str:
        """Drop everything."""
        return "dropped"

    @server.tool(description="x" * 5000)
    def verbose() -> str:
        return "ok"

    @server.resource("shop://stock", description="Stock levels")
    def stock() -> str:
        return "12 apples"

    @server.prompt(description="Write an ad")
    def advert(product: str) -> str:
        return f"Write an ad for {product}"

    return server


def _by_name(tools: list[McpTool]) -> dict[str, McpTool]:
    return {t.name: t for t in tools}


def test_tools_are_named_mcp_server_tool_and_normalized() -> None:
    with Hub({"mcpServers": {"my-shop": _server()}}) as hub:
        names = sorted(t.name for t in hub.tools())
    assert names == ["mcp__my-shop__drop_table_", "mcp__my-shop__search", "mcp__my-shop__verbose"]


def test_annotations_become_flags_and_title_the_display_name() -> None:
    with Hub({"shop": _server()}) as hub:
        tools = _by_name(hub.tools())
    search, drop = tools["mcp__shop__search"], tools["mcp__shop__drop_table_"]
    assert (search.read_only, search.concurrency_safe, search.open_world) == (True, True, True)
    assert search.destructive is False and search.display_name == "Find"
    assert (drop.read_only, drop.concurrency_safe, drop.destructive) == (False, False, True)
    assert drop.tool_name == "drop table!" and drop.server == "shop"
    assert search.input_schema["properties"]["query"]["type"] == "string"


def test_long_descriptions_are_cut_at_2048_characters() -> None:
    with Hub({"shop": _server()}) as hub:
        verbose = _by_name(hub.tools())["mcp__shop__verbose"]
    assert verbose.description == "x" * 2048 + "... [truncated]"


def test_search_hint_and_always_load_come_from_meta() -> None:
    server = mcp_lite.Server("meta")

    @server.tool()
    def plain() -> str:
        return ""

    hub = Hub({"meta": server})
    with hub:
        # The server's own registry has no _meta support: check the mapping on the wire shape.
        from mcp_lite.hub._for_model.tools import to_mcp_tool
        from mcp_lite.protocol.types import Tool

        tool = Tool.model_validate({"name": "t", "inputSchema": {"type": "object"},
                                    "_meta": {"anthropic/searchHint": "  find\n\t things  ",
                                              "anthropic/alwaysLoad": True}})
        mapped = to_mcp_tool("meta", tool)
        assert (mapped.search_hint, mapped.always_load) == ("find things", True)
        plain_tool = _by_name(hub.tools())["mcp__meta__plain"]
        assert (plain_tool.search_hint, plain_tool.always_load) == (None, False)


def test_resources_carry_their_server_and_prompts_are_commands() -> None:
    with Hub({"shop": _server()}) as hub:
        resources = hub.resources()
        prompts = hub.prompts()
        assert [(r.server, r.uri, r.description) for r in resources] == [
            ("shop", "shop://stock", "Stock levels")]
        assert [(p.name, p.prompt_name, p.description) for p in prompts] == [
            ("mcp__shop__advert", "advert", "Write an ad")]
        assert hub.read_resource("shop://stock").text == "12 apples"
        got = hub.get_prompt("mcp__shop__advert", {"product": "pears"})
        assert got.messages[0].content.text == "Write an ad for pears"


def test_tool_definitions_for_anthropic_and_openai() -> None:
    with Hub({"shop": _server()}) as hub:
        anthropic = {d["name"]: d for d in hub.tool_definitions(format="anthropic")}
        openai = {d["function"]["name"]: d for d in hub.tool_definitions(format="openai")}
        with pytest.raises(ValueError, match="format"):
            hub.tool_definitions(format="gemini")
    search = anthropic["mcp__shop__search"]
    assert set(search) == {"name", "description", "input_schema"}
    assert search["description"] == "Search the catalogue."
    assert search["input_schema"]["type"] == "object"
    assert search["input_schema"]["required"] == ["query"]
    fn = openai["mcp__shop__search"]
    assert fn["type"] == "function"
    assert set(fn["function"]) == {"name", "description", "parameters"}
    assert fn["function"]["parameters"] == search["input_schema"]
    assert set(anthropic) == set(openai)


def test_stdio_and_in_process_servers_share_one_pool() -> None:
    config = {"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]},
                             "shop": _server()}}
    with Hub(config) as hub:
        names = {t.name for t in hub.tools()}
        assert {"mcp__demo__add", "mcp__demo__countdown", "mcp__shop__search"} <= names
        assert hub.call_tool("mcp__demo__add", {"a": 2, "b": 3}).text == "5"
        assert hub.status()["demo"].tools_count == 4


def test_tool_list_is_cached_until_the_server_says_it_changed(wait_until) -> None:
    server = mcp_lite.Server("live")

    @server.tool()
    def first() -> str:
        return "1"

    with Hub({"live": server}) as hub:
        assert [t.name for t in hub.tools()] == ["mcp__live__first"]

        @server.tool()
        def second() -> str:
            return "2"

        # Cached: the server has not said anything yet.
        assert [t.name for t in hub.tools()] == ["mcp__live__first"]
        server.notify_tools_changed()
        assert wait_until(lambda: len(hub.tools()) == 2)
        assert hub.call_tool("mcp__live__second").text == "2"


def test_prompt_and_resource_list_changed_invalidate_only_their_list(wait_until) -> None:
    server = _server()
    with Hub({"shop": server}) as hub:
        assert len(hub.prompts()) == 1 and len(hub.resources()) == 1

        @server.prompt()
        def slogan() -> str:
            return "Buy!"

        @server.resource("shop://prices")
        def prices() -> str:
            return "cheap"

        server.notify_prompts_changed()
        assert wait_until(lambda: len(hub.prompts()) == 2)
        assert len(hub.resources()) == 1  # still cached
        server.notify_resources_changed()
        assert wait_until(lambda: len(hub.resources()) == 2)


def test_lists_are_fetched_again_after_the_connection_closes(tmp_path: Path) -> None:
    # A stdio server whose tool list is read from a file when it starts.
    script = tmp_path / "srv.py"
    names = tmp_path / "names.txt"
    names.write_text("alpha")
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(Path(mcp_lite.__file__).parents[1])!r})\n"
        + "from mcp_lite import Server\n"
        "s = Server('files')\n"
        f"for n in open({str(names)!r}).read().split():\n"
        "    s.tool(name=n)(lambda: 'ok')\n"
        "s.run_stdio()\n")
    with Hub({"files": {"command": sys.executable, "args": [str(script)]}}) as hub:
        assert [t.name for t in hub.tools()] == ["mcp__files__alpha"]
        names.write_text("alpha beta")
        assert [t.name for t in hub.tools()] == ["mcp__files__alpha"]  # cached
        hub.client("files").close()  # the connection goes away
        assert hub.status()["files"].state == "pending"
        assert sorted(t.name for t in hub.tools()) == ["mcp__files__alpha", "mcp__files__beta"]
        assert hub.status()["files"].state == "connected"


def test_a_crashed_stdio_server_is_restarted_with_fresh_lists(tmp_path: Path, pid_gone) -> None:
    with Hub({"demo": {"command": sys.executable, "args": [DEMO]}}) as hub:
        assert hub.call_tool("mcp__demo__add", {"a": 1, "b": 1}).text == "2"
        pid = hub.client("demo").transport.pid
        import os
        import signal

        os.kill(pid, signal.SIGKILL)
        assert pid_gone(pid)
        deadline = time.monotonic() + 10
        while hub.status()["demo"].state == "connected" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert hub.status()["demo"].state == "pending"
        assert hub.call_tool("mcp__demo__add", {"a": 2, "b": 2}).text == "4"
        assert hub.client("demo").transport.pid != pid
