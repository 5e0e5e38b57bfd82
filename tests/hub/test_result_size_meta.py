"""A tool's ``_meta["anthropic/maxResultSizeChars"]`` raises that tool's truncation limit,
never lowers it below the configured one, and is capped at 500,000 characters (issue 34,
item 4); any value that is not an integer is ignored. Against the official SDK's server
(``tests/peers/sized_server.py``), through ``Hub.call_tool``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_lite import Hub
from mcp_lite.hub._for_model.results import MAX_RESULT_SIZE_CHARS, ResultProcessor
from mcp_lite.protocol.types import CallToolResult

SIZED = str(Path(__file__).parents[1] / "peers" / "sized_server.py")
DEFAULT = 25_000 * 4  # the default budget in characters (25,000 tokens)


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    out = tmp_path_factory.mktemp("out")
    config = {"sized": {"command": sys.executable, "args": [SIZED]}}
    with Hub(
        config, max_output_tokens=25_000, output_dir=out, client_options={"discover_timeout": 60.0}
    ) as hub:
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
