"""What an LLM host gets from the Hub: tool names every LLM API accepts (and that call_tool
takes back), the resource tools, tool search and deferred loading. The pool
(tests/peers/lite_pool_server.py, the tools of the official-SDK tool_pool_server.py) and the
other servers are mcp_lite.Server objects in this process: names are the subject, not a
process (only the test that names are the same in another process starts one)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError, PermissionDenied
from mcp_lite.hub import Hub

LITE_POOL = str(Path(__file__).resolve().parents[1] / "peers" / "lite_pool_server.py")
LLM_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@pytest.fixture(scope="module")
def big(inprocess_pool: Callable[..., mcp_lite.Server]) -> Iterator[Hub]:
    """500 tools whose names are over 100 characters, plus the special ones."""
    with Hub({"pool": inprocess_pool(500, long=True, resources=True)}) as hub:
        status = hub.connect_all()["pool"]
        assert status.state == "connected", status.error
        yield hub


@pytest.fixture
def small(inprocess_pool: Callable[..., mcp_lite.Server]) -> Iterator[Hub]:
    with Hub({"pool": inprocess_pool(5)}) as hub:
        yield hub


def _names(definitions: list[dict[str, Any]]) -> list[str]:
    return [d.get("name") or d["function"]["name"] for d in definitions]


# --- §1 names ------------------------------------------------------------------------------


def test_500_long_names_are_accepted_unique_and_round_trip(big: Hub) -> None:
    raw = [t.tool_name for t in big.tools()]
    assert sum(len(n) > 100 for n in raw) == 500
    for fmt in ("anthropic", "openai"):
        names = _names(big.tool_definitions(format=fmt))
        assert len(names) == 505 + 2  # the pool and the two resource tools
        assert all(LLM_NAME.match(n) for n in names), [n for n in names if not LLM_NAME.match(n)]
        assert len(set(names)) == len(names)
    names = _names(big.tool_definitions())
    by_name = {d["name"]: d for d in big.tool_definitions()}
    reached = []
    for name in names:
        if name.startswith("mcp__") and not name.endswith("roots_seen"):
            result = big.call_tool(name, {"text": "x"})
            answered = result.text.rsplit(":", 1)[0]
            # the server answers with its own tool name: the emitted name mapped back to it
            assert answered in raw and result.text.endswith(":x")
            assert by_name[name]["input_schema"]["type"] == "object"
            reached.append(answered)
    assert len(reached) == 504 and len(set(reached)) == 504  # each name reaches its own tool


def test_shortened_names_keep_the_server_prefix_and_the_end(big: Hub) -> None:
    names = _names(big.tool_definitions())
    assert "mcp__pool__a_very_long_generatopenapi_document_tool_000_02ed0f12" in names


def test_names_are_stable_across_processes(big: Hub) -> None:
    """A name handed out by one process is the name another process computes (no
    PYTHONHASHSEED, no ordering effect), so a fresh Hub accepts it without listing first.
    (The other process is the subject: it builds the same pool in-process, starting nothing.)"""
    code = (
        "import json, runpy\n"
        "from mcp_lite.hub import Hub\n"
        f"pool = runpy.run_path({LITE_POOL!r})['pool_server'](500, long=True)\n"
        "with Hub({'pool': pool}) as hub:\n"
        "    print(json.dumps([d['name'] for d in hub.tool_definitions()]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**_env(), "PYTHONHASHSEED": "12345"},
        check=True,
    )
    theirs = json.loads(out.stdout)
    ours = [n for n in _names(big.tool_definitions()) if n.startswith("mcp__")]
    assert len(ours) == 505
    assert theirs == ours


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)


def test_a_fresh_hub_accepts_a_shortened_name_without_listing_first() -> None:
    long = "x" * 120
    server = mcp_lite.Server("s")

    @server.tool(name=long)
    def tool() -> str:
        return "reached"

    with Hub({"srv": server}) as first:
        name = _names(first.tool_definitions())[0]
    assert len(name) <= 64 and name != f"mcp__srv__{long}"
    with Hub({"srv": server}) as fresh:
        assert fresh.call_tool(name).text == "reached"
        with pytest.raises(ConfigError):
            fresh.call_tool(name[:-1] + ("0" if name[-1] != "0" else "1"))


def test_colliding_names_get_distinct_names_that_reach_the_right_tool(small: Hub) -> None:
    names = [n for n in _names(small.tool_definitions()) if "report" in n]
    assert sorted(names) == ["mcp__pool__report_daily", "mcp__pool__report_daily_33d44685"]
    assert small.call_tool("mcp__pool__report_daily", {"text": "a"}).text == "report_daily:a"
    reached = small.call_tool("mcp__pool__report_daily_33d44685", {"text": "a"}).text
    assert reached == "report.daily:a"


def test_unknown_format_is_a_clear_error(small: Hub) -> None:
    with pytest.raises(ValueError, match="'anthropic' or 'openai'"):
        small.tool_definitions(format="gemini")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'anthropic' or 'openai'"):
        small.tool_definitions(format="gemini", deferred=True)  # type: ignore[arg-type]


def test_denied_tools_are_not_offered_found_or_callable(inprocess_pool) -> None:
    # (a deny rule holds for an in-process server too: only allowing is implied for one)
    with Hub({"pool": inprocess_pool(3)}, deny=["mcp__pool__weather_lookup"]) as hub:
        assert "mcp__pool__weather_lookup" not in _names(hub.tool_definitions())
        assert hub.search_tools("weather") == []
        assert "mcp__pool__weather_lookup" in [t.name for t in hub.tools()]
        with pytest.raises(PermissionDenied):
            hub.call_tool("mcp__pool__weather_lookup", {})


# --- §1 resource tools -----------------------------------------------------------------------


def test_resource_tools_only_when_a_server_has_resources(small: Hub) -> None:
    names = _names(small.tool_definitions())
    assert "ListMcpResourcesTool" not in names and "ReadMcpResourceTool" not in names


def test_resource_tools_list_and_read_through_call_tool(big: Hub, tmp_path: Path) -> None:
    names = _names(big.tool_definitions(format="openai"))
    assert names[-2:] == ["ListMcpResourcesTool", "ReadMcpResourceTool"]
    listed = big.call_tool("ListMcpResourcesTool", {})
    uris = {r["uri"]: r for r in listed.structured_content["resources"]}
    assert set(uris) == {"pool://notes", "pool://blob"} and uris["pool://notes"]["server"] == "pool"
    assert "pool://notes" in listed.text
    assert big.call_tool("ListMcpResourcesTool", {"server": "pool"}).structured_content == (
        listed.structured_content
    )
    text = big.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://notes"})
    assert text.text == "remember the milk" and not text.is_error
    blob = big.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://blob"})
    path = Path(re.search(r"saved to (\S+)\]", blob.text).group(1))  # type: ignore[union-attr]
    assert path.read_bytes() == bytes(range(256)) * 4
    bad = big.call_tool("ReadMcpResourceTool", {"server": "nope", "uri": "pool://notes"})
    assert bad.is_error and "no MCP server named 'nope'" in bad.text
    missing = big.call_tool("ReadMcpResourceTool", {"server": "pool"})
    assert missing.is_error


def test_resource_tools_from_an_in_process_server() -> None:
    server = mcp_lite.Server("docs")

    @server.resource("docs://intro", description="Intro")
    def intro() -> str:
        return "hello"

    with Hub({"docs": server}) as hub:
        assert "ReadMcpResourceTool" in _names(hub.tool_definitions())
        got = hub.call_tool("ReadMcpResourceTool", {"server": "docs", "uri": "docs://intro"})
        assert got.text == "hello"


# --- §2 search and deferred loading ---------------------------------------------------------


def test_search_ranks_by_name_title_description_and_search_hint(big: Hub) -> None:
    assert [t.tool_name for t in big.search_tools("umbrella")] == ["weather_lookup"]  # hint
    assert big.search_tools("city")[0].tool_name == "weather_lookup"  # description
    assert big.search_tools("deploy")[0].tool_name == "deploy_service"  # name
    assert big.search_tools("deploy_service")[0].tool_name == "deploy_service"
    found = big.search_tools("filler operation", limit=7)
    assert len(found) == 7 and all(
        t.tool_name.endswith(f"tool_{i:03d}") for i, t in enumerate(found)
    )
    assert big.search_tools("zzzz-nothing") == []
    assert big.search_tools("filler", limit=0) == []


def test_search_ranks_a_title_over_a_description() -> None:
    server = mcp_lite.Server("s")

    @server.tool(annotations={"title": "Invoice lookup"})
    def find() -> str:
        """Find things."""
        return ""

    @server.tool()
    def other() -> str:
        """Mentions an invoice."""
        return ""

    with Hub({"s": server}) as hub:
        assert [t.tool_name for t in hub.search_tools("invoice")] == ["find", "other"]


def test_select_picks_tools_by_name(big: Hub) -> None:
    long_name = _names(big.tool_definitions())[3]
    found = big.search_tools(f"select:mcp__pool__deploy_service, weather_lookup,{long_name}")
    assert [t.tool_name for t in found][:2] == ["deploy_service", "weather_lookup"]
    assert len(found) == 3 and found[2].tool_name.endswith("tool_003")


def test_deferred_offers_always_load_tools_and_the_search_tool(big: Hub) -> None:
    full = big.tool_definitions()
    deferred = big.tool_definitions(deferred=True)
    assert _names(deferred) == [
        "mcp__pool__deploy_service",  # _meta anthropic/alwaysLoad
        "ToolSearch",
        "ListMcpResourcesTool",
        "ReadMcpResourceTool",
    ]
    assert "504 more MCP tools" in deferred[1]["description"]
    assert len(json.dumps(deferred)) * 20 < len(json.dumps(full))
    chosen = big.tool_definitions(deferred=True, always_load=["mcp__pool__weather_lookup"])
    assert "mcp__pool__weather_lookup" in _names(chosen)


def test_the_search_tool_returns_definitions_the_host_can_call(big: Hub) -> None:
    offered = big.tool_definitions(format="openai", deferred=True)
    assert "ToolSearch" in _names(offered)
    result = big.call_tool("ToolSearch", {"query": "tool_042 filler", "max_results": 2})
    definitions = result.structured_content["tools"]
    assert len(definitions) == 2 and definitions[0]["type"] == "function"
    name = definitions[0]["function"]["name"]
    assert name in result.text and LLM_NAME.match(name)
    assert big.call_tool(name, {"text": "y"}).text.endswith("tool_042:y")
    empty = big.call_tool("ToolSearch", {"query": "zzzz-nothing"})
    assert empty.structured_content == {"tools": []} and "No tool matched" in empty.text
    assert big.call_tool("ToolSearch", {}).is_error
    assert big.call_tool("ToolSearch", {"query": "x", "max_results": "3"}).is_error


def test_always_load_from_the_hub_and_from_the_config(inprocess_pool) -> None:
    entry = {"type": "sdk", "server": inprocess_pool(2)}
    with Hub(
        {"pool": {**entry, "alwaysLoad": ["tool_001"]}},
        always_load=["mcp__pool__report_daily"],
    ) as hub:
        names = _names(hub.tool_definitions(deferred=True))
    # a rule matches normalized names: it loads both report tools
    assert sorted(names) == [
        "ToolSearch",
        "mcp__pool__deploy_service",
        "mcp__pool__report_daily",
        "mcp__pool__report_daily_33d44685",
        "mcp__pool__tool_001",
    ]
    assert names[-1] == "ToolSearch"
    with Hub({"pool": {**entry, "alwaysLoad": True}}) as hub:
        names = _names(hub.tool_definitions(deferred=True))
    assert "ToolSearch" not in names and len(names) == 7
    with pytest.raises(ConfigError):
        Hub({}, always_load=["not-a-rule"])


def test_the_tool_search_example_runs() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "tool_search_agent.py"
    out = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "turn 1 offers 1 tools: ['ToolSearch']" in out.stdout
    assert "called mcp__ops__current_weather: Lisbon: 18 C, light rain" in out.stdout
