"""A tool's ``_meta["anthropic/maxResultSizeChars"]`` raises that tool's truncation limit,
never lowers it below the configured one, and is capped at 500,000 characters (issue 34,
item 4); any value that is not an integer is ignored. Through ``Hub.call_tool``, against an
``mcp_lite.Server`` in this process (the limit is read from the listed ``_meta``, whoever
serves it; the official-SDK stdio peer these tests used was only a slower way to list it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite import Hub
from mcp_lite.hub._for_model.results import MAX_RESULT_SIZE_CHARS, ResultProcessor
from mcp_lite.protocol.types import CallToolResult

DEFAULT = 25_000 * 4  # the default budget in characters (25,000 tokens)
# Each tool's _meta["anthropic/maxResultSizeChars"]: over the default, over the 500,000 cap,
# below the default, then three values that are not integers.
SIZES: dict[str, Any] = {
    "raised": 200_000,
    "capped": 600_000,
    "lower": 50_000,
    "text": "300000",
    "fractional": 300_000.5,
    "flag": True,
}


def _sized() -> mcp_lite.Server:
    """``plain`` (no ``_meta``) and a tool per ``SIZES``; each answers ``size`` characters."""
    server = mcp_lite.Server("sized")

    def answer(size: int) -> str:
        return "x" * size

    server.tool(name="plain", description="size characters")(answer)
    for name, limit in SIZES.items():
        meta = {"anthropic/maxResultSizeChars": limit}
        server.tool(name=name, description="size characters", meta=meta)(answer)
    return server


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    out = tmp_path_factory.mktemp("out")
    with Hub({"sized": _sized()}, max_output_tokens=25_000, output_dir=out) as hub:
        yield hub


def _kept(hub: Hub, tool: str, size: int) -> tuple[int, str]:
    """How many of the ``size`` characters reached the model, and the note (if any)."""
    result = hub.call_tool(f"mcp__sized__{tool}", {"size": size}, timeout=60)
    texts = [b.text for b in result.content if b.type == "text"]
    note = texts[1] if len(texts) > 1 else ""
    return len(texts[0]), note


def test_without_meta_the_configured_limit_applies(hub: Hub) -> None:
    kept, note = _kept(hub, "plain", DEFAULT + 1)
    assert kept == DEFAULT and "MAX_MCP_OUTPUT_TOKENS" in note


def test_a_larger_limit_raises_the_tools_budget(hub: Hub) -> None:
    assert _kept(hub, "raised", 150_000) == (150_000, "")
    kept, note = _kept(hub, "raised", 250_000)
    assert kept == 200_000
    assert "200,000 characters" in note and "anthropic/maxResultSizeChars" in note


def test_the_limit_is_capped_at_500000_characters(hub: Hub) -> None:
    assert _kept(hub, "capped", 450_000) == (450_000, "")
    kept, note = _kept(hub, "capped", 550_000)
    assert kept == MAX_RESULT_SIZE_CHARS == 500_000
    assert "500,000 characters" in note


def test_a_smaller_limit_never_lowers_the_configured_one(hub: Hub) -> None:
    assert _kept(hub, "lower", 80_000) == (80_000, "")
    kept, note = _kept(hub, "lower", DEFAULT + 1)
    assert kept == DEFAULT and "MAX_MCP_OUTPUT_TOKENS" in note


@pytest.mark.parametrize("tool", ["text", "fractional", "flag"])
def test_a_value_that_is_not_an_integer_is_ignored(hub: Hub, tool: str) -> None:
    kept, note = _kept(hub, tool, DEFAULT + 1)
    assert kept == DEFAULT and "MAX_MCP_OUTPUT_TOKENS" in note


def test_a_configured_limit_above_500000_stays(tmp_path: Path) -> None:
    # 150,000 tokens = 600,000 characters: a tool asking for 200,000 (or for the cap) keeps
    # the configured 600,000.
    processor = ResultProcessor(tmp_path / "out", max_output_tokens=150_000)
    wire = {"content": [{"type": "text", "text": "x" * 650_000}]}
    for meta in (
        {"anthropic/maxResultSizeChars": 200_000},
        {"anthropic/maxResultSizeChars": 10**9},
    ):
        result = processor.process("s", "t", CallToolResult.model_validate(wire), meta)
        assert len(result.content[0].text) == 600_000
        assert "MAX_MCP_OUTPUT_TOKENS" in result.content[1].text
