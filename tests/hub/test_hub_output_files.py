"""Large tool output kept, not lost: truncated text and oversized structured content are
written in full to files (0600 in a 0700 folder, names that cannot leave it, a per-call cap)
and the result says where."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError
from mcp_lite.hub import Hub


def _server() -> mcp_lite.Server:
    server = mcp_lite.Server("big")

    @server.tool(name="../../etc/dump me")
    def dump(n: int) -> str:
        return "".join(chr(ord("a") + i % 26) for i in range(n))

    @server.tool()
    def rows(n: int) -> dict[str, Any]:
        return {"rows": [{"id": i, "name": f"row {i}"} for i in range(n)]}

    return server


def _saved(text: str) -> tuple[int, Path]:
    match = re.search(r"saved \(([\d,]+) bytes\) to (\S+?)(?:\.? |\]|$)", text)
    assert match, text
    return int(match.group(1).replace(",", "")), Path(match.group(2).rstrip(".]"))


def test_truncated_text_is_kept_in_a_private_file(tmp_path: Path) -> None:
    out = tmp_path / "new" / "out"
    with Hub({"big": _server()}, max_output_tokens=100, output_dir=out) as hub:
        full = hub.client("big").call_tool("../../etc/dump me", {"n": 10_000}).text
        result = hub.call_tool("mcp__big________etc_dump_me", {"n": 10_000})
    assert result.content[0].text == full[:400]
    assert "OUTPUT TRUNCATED" in result.text
    size, path = _saved(result.text)
    assert path.read_text() == full and size == len(full.encode())
    assert path.parent == out and path.name.startswith("big-______etc_dump_me-")
    assert path.suffix == ".txt"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(out.stat().st_mode) == 0o700


def test_the_default_folder_is_private(tmp_path: Path) -> None:
    with Hub({"big": _server()}, max_output_tokens=50) as hub:
        result = hub.call_tool("mcp__big________etc_dump_me", {"n": 1000})
    _, path = _saved(result.text)
    try:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        for f in path.parent.iterdir():
            f.unlink()
        path.parent.rmdir()


def test_oversized_structured_content_goes_to_a_json_file(tmp_path: Path) -> None:
    with Hub({"big": _server()}, max_output_tokens=200, output_dir=tmp_path) as hub:
        small = hub.call_tool("mcp__big__rows", {"n": 3})
        assert small.structured_content == {
            "rows": [{"id": i, "name": f"row {i}"} for i in range(3)]
        }
        result = hub.call_tool("mcp__big__rows", {"n": 500})
    assert result.structured_content is None
    note = result.content[-1].text or ""
    assert "structured content too large" in note and ".json" in note
    _, path = _saved(note)
    assert json.loads(path.read_text()) == {
        "rows": [{"id": i, "name": f"row {i}"} for i in range(500)]
    }


def test_bytes_written_per_call_are_capped(tmp_path: Path) -> None:
    with Hub(
        {"big": _server()}, max_output_tokens=100, output_dir=tmp_path, max_output_file_bytes=5000
    ) as hub:
        kept = hub.call_tool("mcp__big________etc_dump_me", {"n": 4000})
        dropped = hub.call_tool("mcp__big________etc_dump_me", {"n": 6000})
    _saved(kept.text)
    assert "not saved: 6,000 bytes would pass this call's limit of 5,000 bytes" in dropped.text
    assert len(list(tmp_path.iterdir())) == 1
    with pytest.raises(ConfigError):
        Hub({}, max_output_file_bytes=-1)
