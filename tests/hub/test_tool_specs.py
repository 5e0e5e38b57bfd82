"""What an agent framework adapter needs from the core: ``tool_specs()`` (each offered tool
with the name the model sees, its server and its ``McpTool``) on a Hub and on a Client, and
``media="inline"`` keeping image and audio blocks in a Hub's result under the same caps."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError
from mcp_lite.hub import Hub, McpTool, ToolSpec

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
WAV = b"RIFF\x00\x00\x00\x00WAVEfmt "
LONG = "a_tool_whose_name_goes_on_and_on_well_past_what_any_llm_api_accepts_as_a_name"


def _server() -> mcp_lite.Server:
    server = mcp_lite.Server("kit")

    @server.tool(annotations={"destructiveHint": True, "title": "Wipe it"})
    def wipe() -> str:
        """Wipe everything."""
        return "wiped"

    @server.tool(name=LONG)
    def long() -> str:
        return "long"

    @server.tool()
    def echo(text: str) -> dict[str, str]:
        return {"text": text}

    @server.tool()
    def media():  # type: ignore[no-untyped-def]
        return {
            "content": [
                {"type": "text", "text": "here"},
                {"type": "image", "data": base64.b64encode(PNG).decode(), "mimeType": "image/png"},
                {"type": "audio", "data": base64.b64encode(WAV).decode(), "mimeType": "audio/wav"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "kit://r.pdf",
                        "mimeType": "application/pdf",
                        "blob": base64.b64encode(b"%PDF-1.4").decode(),
                    },
                },
            ]
        }

    return server


# --- tool_specs --------------------------------------------------------------------------------


def test_hub_tool_specs_pair_the_offered_names_with_their_tools() -> None:
    with Hub({"kit": _server()}, deny=["mcp__kit__echo"]) as hub:
        specs = hub.tool_specs()
        definitions = hub.tool_definitions()
        assert [s.name for s in specs] == [d["name"] for d in definitions]
        by_name = {s.name: s for s in specs}
        assert "mcp__kit__echo" not in by_name  # denied: absent, as from tool_definitions
        wipe = by_name["mcp__kit__wipe"]
        assert isinstance(wipe, ToolSpec) and isinstance(wipe.tool, McpTool)
        assert (
            wipe.server == "kit" and wipe.tool.destructive and wipe.tool.display_name == "Wipe it"
        )
        assert wipe.definition("openai")["function"]["name"] == "mcp__kit__wipe"
        [long] = [s for s in specs if s.tool.tool_name == LONG]
        assert len(long.name) == 64 and long.name != long.tool.name
        assert hub.call_tool(long.name).text == "long"  # the shortened name goes back


def test_hub_tool_specs_carry_the_output_schema() -> None:
    with Hub({"kit": _server()}) as hub:
        [echo] = [s for s in hub.tool_specs() if s.name == "mcp__kit__echo"]
    assert echo.tool.output_schema is not None


def test_client_tool_specs_use_the_server_names_that_tool_definitions_gives() -> None:
    with mcp_lite.connect(_server(), name="kit") as client:
        specs = client.tool_specs()
        names = [d["name"] for d in client.tool_definitions()]
        assert [s.name for s in specs] == names
        assert "wipe" in names and all(s.server == "kit" for s in specs)
        [long] = [s for s in specs if s.tool.tool_name == LONG]
        assert len(long.name) == 64
        assert client.call_tool(long.name).text == "long"
        assert {s.name: s for s in specs}["wipe"].tool.destructive


# --- media="inline" ----------------------------------------------------------------------------


def _kinds(result: Any) -> list[str]:
    return [b.type for b in result.content]


def test_inline_media_keeps_image_and_audio_blocks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Hub({"kit": _server()}, output_dir=out, media="inline") as hub:
        result = hub.call_tool("mcp__kit__media")
        assert _kinds(result) == ["text", "image", "audio", "text"]
        assert base64.b64decode(result.content[1].data) == PNG
        assert result.content[1].mime_type == "image/png"
        assert base64.b64decode(result.content[2].data) == WAV
        assert "saved" in result.content[3].text  # an embedded blob still goes to a file
        assert [p.suffix for p in out.iterdir()] == [".pdf"]
        files = hub.call_tool("mcp__kit__media", media="files")  # per call
        assert _kinds(files) == ["text"] * 4


def test_inline_media_per_call_on_a_files_hub(tmp_path: Path) -> None:
    with Hub({"kit": _server()}, output_dir=tmp_path) as hub:
        assert _kinds(hub.call_tool("mcp__kit__media")) == ["text"] * 4
        inline = hub.call_tool("mcp__kit__media", media="inline")
    assert _kinds(inline) == ["text", "image", "audio", "text"]


def test_inline_media_stays_under_the_byte_cap(tmp_path: Path) -> None:
    with Hub(
        {"kit": _server()}, output_dir=tmp_path, media="inline", max_output_file_bytes=len(PNG)
    ) as hub:
        result = hub.call_tool("mcp__kit__media")
    assert _kinds(result) == ["text", "image", "text", "text"]
    assert "not kept: over this call's limit" in result.content[2].text


def test_inline_images_are_shrunk_like_saved_ones() -> None:
    image = pytest.importorskip("PIL.Image", reason="the optional images extra (Pillow)")
    buf = io.BytesIO()
    image.new("L", (4000, 100)).save(buf, format="PNG")
    server = mcp_lite.Server("paint")

    @server.tool()
    def paint():  # type: ignore[no-untyped-def]
        data = base64.b64encode(buf.getvalue()).decode()
        return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}

    with Hub({"paint": server}, media="inline") as hub:
        result = hub.call_tool("mcp__paint__paint")
    with image.open(io.BytesIO(base64.b64decode(result.content[0].data))) as img:
        assert img.size == (2000, 50)


def test_an_unknown_media_is_refused() -> None:
    with pytest.raises(ConfigError, match="media must be"):
        Hub({"kit": _server()}, media="base64")  # type: ignore[arg-type]
    with Hub({"kit": _server()}) as hub, pytest.raises(ConfigError, match="media must be"):
        hub.call_tool("mcp__kit__wipe", media="url")  # type: ignore[arg-type]
