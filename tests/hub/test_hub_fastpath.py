"""The Hub's per-call fast path (issue 24): what it remembers between calls is never stale.

``call_tool`` no longer recomputes per call what does not change between calls: a qualified
name's server (until ``update``), each server's tools by qualified name (built on the cached
tool list, so ``list_changed``, a reconnect or a recycle gives a new one), the permission
rules' verdict on a tool (until the rules change), and a plain result's ``to_wire``/
``model_validate`` round trip (computed without pydantic, equal to it). Each test here
changes what a cache was built on after a first call and asserts the next call sees it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError, PermissionDenied
from mcp_lite.hub import Hub, McpTool
from mcp_lite.hub._for_model import results as hub_results
from mcp_lite.hub._for_model.results import ResultProcessor
from mcp_lite.protocol.results import tool_result
from mcp_lite.protocol.types import CallToolResult


def _echo_server() -> mcp_lite.Server:
    """In-process, the ``echo`` tool of ``fault_server.py echo``: answers with ``text``."""
    server = mcp_lite.Server("echo")

    @server.tool()
    def echo(text: str) -> str:
        return text

    return server


def _echo_config(served: Any) -> dict[str, Any]:
    """The echo server over HTTP on a thread: permission verdicts are only kept for a server
    that is not in-process (an in-process one is never asked about)."""
    return {"mcpServers": {"echo": served(_echo_server())}}


# --- results: the plain path equals the pydantic round trip ---------------------------------

PLAIN = [
    {"content": [{"type": "text", "text": "hi"}]},
    {"content": [{"type": "text", "text": "hi"}], "isError": False},
    {"isError": True, "content": [{"type": "text", "text": "boom"}]},  # keys in another order
    {"content": []},
    {"content": [{"type": "text", "text": ""}, {"type": "text", "text": "two"}]},
    {"content": [{"type": "image", "text": "odd but valid"}]},
    {
        "content": [{"type": "text", "text": "{}"}],
        "structuredContent": {"a": None, "b": [1, 2.5, True, "x", {"c": []}], "big": 2**70},
    },
    {"content": [{"type": "text", "text": "s"}], "structuredContent": [1, "two"]},
    {"content": [{"type": "text", "text": "s"}], "structuredContent": "text"},
    {"content": [{"type": "text", "text": "s"}], "structuredContent": None},
    {"content": [{"type": "text", "text": "s"}], "_meta": {"k": None, "n": [1]}},
    {"content": [{"type": "text", "text": "s"}], "_meta": None, "isError": False},
]

BINARY = {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}
NOT_PLAIN = [
    {"content": [{"type": "text", "text": "s"}], "structuredContent": {"x": float("nan")}},
    {"content": [{"type": "text", "text": "s"}], "structuredContent": {"x": float("inf")}},
    {"content": [{"type": "text", "text": "s"}], "structuredContent": {"t": (1, 2)}},
    {"content": [{"type": "text", "text": "s"}], "structuredContent": {1: 2}},
    {"content": [{"type": "text", "text": "s", "annotations": None}]},
    {"content": [{"type": "text", "text": "s", "annotations": {"priority": 1}}]},
    BINARY,
    {"content": [{"type": "text", "text": "s"}], "extra": 1},
    {"content": [{"type": "text", "text": "s"}], "isError": 1},
    {"content": [{"type": "text", "text": "s"}], "structuredContent": list(range(300))},
    {"structuredContent": {"a": 1}},  # no content: the default list
]


def _reference(raw: dict[str, Any]) -> CallToolResult:
    """What ``ResultProcessor.process`` makes of it on its pydantic path (``to_wire``, then
    ``model_validate``), the one it had before the plain path."""
    processor = ResultProcessor()
    processor._unchanged = lambda result, limit: None  # type: ignore[method-assign]
    return processor.process("s", "t", tool_result(dict(raw), copy=True))


@pytest.mark.parametrize("raw", [r for r in PLAIN + NOT_PLAIN if r is not BINARY])
def test_a_result_processed_equals_the_pydantic_round_trip(raw: dict[str, Any]) -> None:
    ref = _reference(raw)
    got = ResultProcessor().process("s", "t", tool_result(dict(raw), copy=True))
    assert list(got._wire.items()) == list(ref._wire.items())  # same keys, order, values
    assert json.dumps(got._wire) == json.dumps(ref._wire)
    assert got == ref
    assert got.model_fields_set == ref.model_fields_set
    assert got.model_dump(exclude_unset=True) == ref.model_dump(exclude_unset=True)
    assert got.to_wire() == ref.to_wire()


@pytest.mark.parametrize("raw", PLAIN)
def test_plain_results_take_the_path_without_pydantic(raw: dict[str, Any]) -> None:
    wire = hub_results._plain_wire(raw)
    assert wire is not None
    assert wire == CallToolResult.model_validate(raw).to_wire()
    # new containers all through: changing the result never changes the server's dict
    for key in ("content", "structuredContent", "_meta"):
        if isinstance(raw.get(key), (dict, list)):
            assert wire[key] is not raw[key]


@pytest.mark.parametrize("raw", NOT_PLAIN)
def test_other_results_are_left_to_pydantic(raw: dict[str, Any]) -> None:
    assert hub_results._plain_wire(raw) is None


def test_a_plain_result_over_the_budget_is_still_cut(tmp_path: Path) -> None:
    processor = ResultProcessor(tmp_path / "out", max_output_tokens=5)
    got = processor.process(
        "s", "t", tool_result({"content": [{"type": "text", "text": "x" * 50}]})
    )
    assert got.content[0].text == "x" * 20
    assert "OUTPUT TRUNCATED" in got.content[-1].text
    big = {"content": [], "structuredContent": {"k": "y" * 50}}
    got = processor.process("s", "t", tool_result(big))
    assert got.structured_content is None
    assert "structured content too large" in got.text


def test_text_json_is_kept_on_the_plain_path() -> None:
    result = tool_result({"content": [{"type": "text", "text": '{"a": 1}'}]})
    result._text_json = {"a": 1}
    got = ResultProcessor().process("s", "t", result)
    assert got.data == {"a": 1} and got == _reference_of(result)


def _reference_of(result: CallToolResult) -> CallToolResult:
    processor = ResultProcessor()
    processor._unchanged = lambda result, limit: None  # type: ignore[method-assign]
    return processor.process("s", "t", result)


# --- the tool index follows the tool list ---------------------------------------------------


def test_a_removed_tool_is_unknown_after_list_changed(wait_until) -> None:
    server = mcp_lite.Server("live")

    @server.tool()
    def first() -> str:
        return "1"

    @server.tool()
    def second() -> str:
        return "2"

    with Hub({"live": server}) as hub:
        for _ in range(2):  # the first call lists the tools, the second indexes them
            assert hub.call_tool("mcp__live__first").text == "1"
        server.remove_tool("first")
        server.notify_tools_changed()
        assert wait_until(lambda: len(hub.tools()) == 1)
        # A stale index would still know the tool and send the call to the server.
        with pytest.raises(ConfigError, match="has no tool named 'mcp__live__first'"):
            hub.call_tool("mcp__live__first")
        assert hub.call_tool("mcp__live__second").text == "2"


def test_a_qualified_name_moves_to_the_tool_that_needs_no_normalization(wait_until) -> None:
    server = mcp_lite.Server("names")

    @server.tool(name="a.b")
    def dotted() -> str:
        return "dotted"

    with Hub({"names": server}) as hub:
        for _ in range(2):
            assert hub.call_tool("mcp__names__a_b").text == "dotted"

        @server.tool(name="a_b")
        def plain() -> str:
            return "plain"

        server.notify_tools_changed()
        assert wait_until(lambda: len(hub.tools()) == 2)
        assert hub.call_tool("mcp__names__a_b").text == "plain"


def _files_server(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """A stdio server whose tools (each answering its name) are the words of a file, read
    when it starts; its config entry and the file."""
    script = tmp_path / "srv.py"
    names = tmp_path / "names.txt"
    names.write_text("alpha")
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(Path(mcp_lite.__file__).parents[1])!r})\n"
        "from mcp_lite import Server\n"
        "s = Server('files')\n"
        f"for n in open({str(names)!r}).read().split():\n"
        "    s.tool(name=n)(lambda n=n: n)\n"
        "s.run_stdio()\n"
    )
    return {"command": sys.executable, "args": [str(script)]}, names


def test_the_tool_list_is_read_again_after_a_recycle(tmp_path: Path, wait_until) -> None:
    entry, names = _files_server(tmp_path)
    with Hub({"files": entry}, idle_timeout=0.3) as hub:
        for _ in range(2):
            assert hub.call_tool("mcp__files__alpha").text == "alpha"
        names.write_text("beta")
        assert wait_until(lambda: hub.status()["files"].state == "idle")
        assert hub.call_tool("mcp__files__beta").text == "beta"  # started again: new lists
        assert hub.status()["files"].recycles == 1
        with pytest.raises(ConfigError, match="has no tool named 'mcp__files__alpha'"):
            hub.call_tool("mcp__files__alpha")


def _retool(server: mcp_lite.Server, old: str, new: str) -> None:
    """Replace tool ``old`` by ``new`` (answering its name) without ``list_changed``: as a
    server whose tools changed between two starts, only a new connection's list shows it."""
    server.remove_tool(old)
    server.tool(name=new)(lambda: new)


def test_the_tool_list_is_read_again_after_a_reconnect() -> None:
    server = mcp_lite.Server("files")
    server.tool(name="alpha")(lambda: "alpha")
    with Hub({"files": server}) as hub:
        for _ in range(2):
            assert hub.call_tool("mcp__files__alpha").text == "alpha"
        _retool(server, "alpha", "beta")
        hub.client("files").close()  # the connection goes away: the next call reconnects
        assert hub.call_tool("mcp__files__beta").text == "beta"  # (lists the tools again)
        with pytest.raises(ConfigError, match="has no tool named 'mcp__files__alpha'"):
            hub.call_tool("mcp__files__alpha")
        _retool(server, "beta", "gamma")
        hub.reconnect("files")
        assert hub.call_tool("mcp__files__gamma").text == "gamma"
        with pytest.raises(ConfigError, match="has no tool named 'mcp__files__beta'"):
            hub.call_tool("mcp__files__beta")


# --- a name's server follows the configuration ------------------------------------------------


def test_a_qualified_name_resolves_again_after_update() -> None:
    dotted, plain = mcp_lite.Server("dotted"), mcp_lite.Server("plain")

    @dotted.tool(name="tool")
    def of_dotted() -> str:
        return "dotted"

    @plain.tool(name="tool")
    def of_plain() -> str:
        return "plain"

    with Hub({"a": dotted}) as hub:
        for _ in range(2):
            assert hub.call_tool("mcp__a__tool").text == "dotted"
        hub.update({"b": plain})
        # a stale name would go to the removed server ("no MCP server named 'a'")
        with pytest.raises(ConfigError, match="names no configured MCP server"):
            hub.call_tool("mcp__a__tool")
        hub.update({"a": plain, "b": dotted})  # the same name, another server
        assert hub.call_tool("mcp__a__tool").text == "plain"
        assert hub.call_tool("mcp__b__tool").text == "dotted"


# --- permission verdicts follow the rules ----------------------------------------------------


def test_always_is_seen_by_the_next_call(served) -> None:
    asked: list[str] = []

    def always(tool: McpTool, arguments: Mapping[str, Any]) -> str:
        asked.append(tool.name)
        return "always"

    with Hub(_echo_config(served), permission_handler=always, gateway=False) as hub:
        for text in ("one", "two", "three"):
            assert hub.call_tool("mcp__echo__echo", {"text": text}).text == text
    assert asked == ["mcp__echo__echo"]  # a stale verdict would ask again


def test_a_handler_that_says_yes_is_asked_on_every_call(served) -> None:
    answers = iter([True, False, True])
    asked: list[str] = []

    def handler(tool: McpTool, arguments: Mapping[str, Any]) -> bool:
        asked.append(str(arguments["text"]))
        return next(answers)

    with Hub(_echo_config(served), permission_handler=handler, gateway=False) as hub:
        assert hub.call_tool("mcp__echo__echo", {"text": "a"}).text == "a"
        with pytest.raises(PermissionDenied, match="refused by the permission handler"):
            hub.call_tool("mcp__echo__echo", {"text": "b"})
        assert hub.call_tool("mcp__echo__echo", {"text": "c"}).text == "c"
    assert asked == ["a", "b", "c"]


def test_rules_from_the_settings_files_apply_after_reload(hub_paths, served) -> None:
    config = _echo_config(served)
    hub_paths.write(hub_paths.project / ".mcp.json", config)
    settings = hub_paths.project / ".claude" / "settings.json"
    hub_paths.write(settings, {"permissions": {"allow": ["mcp__echo"]}})
    hub = Hub.from_config(
        hub_paths.project,
        trust_project=True,
        user_dir=hub_paths.home,
        managed_path=hub_paths.managed,
        default_permission="deny",
        gateway=False,
    )
    with hub:
        assert hub.call_tool("mcp__echo__echo", {"text": "x"}).text == "x"
        hub_paths.write(settings, {"permissions": {"deny": ["mcp__echo__echo"]}})
        hub.reload()
        with pytest.raises(PermissionDenied, match="deny rule"):
            hub.call_tool("mcp__echo__echo", {"text": "y"})
        hub_paths.write(settings, {"permissions": {}})
        hub.reload()
        with pytest.raises(PermissionDenied, match="default policy is deny"):
            hub.call_tool("mcp__echo__echo", {"text": "z"})
        hub_paths.write(settings, {"permissions": {"allow": ["mcp__echo__echo"]}})
        hub.reload()
        assert hub.call_tool("mcp__echo__echo", {"text": "w"}).text == "w"


def test_the_verdicts_kept_are_bounded(monkeypatch) -> None:
    from mcp_lite.hub._for_model import permissions

    monkeypatch.setattr(permissions, "_MAX_VERDICTS", 8)
    perms = permissions.Permissions(deny=["mcp__s__t3"])
    for i in range(50):
        assert perms.denied_by_rule("s", f"t{i}") == (i == 3)
        assert len(perms._verdicts) <= 8
    assert perms.denied_by_rule("s", "t3")


# --- events: the same with and without a listener ----------------------------------------------


def test_events_and_results_are_the_same_with_and_without_a_listener() -> None:
    with Hub({"echo": _echo_server()}, gateway=False) as hub:
        quiet = hub.call_tool("mcp__echo__echo", {"text": "hello"})
        events: list[Any] = []
        heard = hub.call_tool("mcp__echo__echo", {"text": "hello"}, on_event=events.append)
    assert quiet == heard and quiet._wire == heard._wire
    assert [e.status for e in events] == ["started", "completed"]
    assert {(e.server, e.tool) for e in events} == {("echo", "mcp__echo__echo")}
