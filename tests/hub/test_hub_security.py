"""What a hostile MCP server (or another local user) cannot get through the Hub: the model
reads no resource the permissions refuse, the files handed to the model stay the user's own,
an image bomb is refused from its header, and a host's sampling handler knows who asks.

The servers are ``mcp_lite.Server`` objects in this process; the tool pool
(tests/peers/lite_pool_server.py) is reached over HTTP on a thread, since the permission layer
trusts an in-process entry, and the official SDK's server over stdio is the one foreign server
a sampling handler hears from."""

from __future__ import annotations

import base64
import io
import os
import re
import stat
import struct
import sys
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import ConfigError, PermissionDenied
from mcp_lite.hub import Hub, McpTool
from mcp_lite.hub._for_model import results
from mcp_lite.server import Context

SLOW_PROBE = {"discover_timeout": 60.0}  # see test_hub_llm_tools.py


@pytest.fixture
def pool_config(inprocess_pool, served) -> Callable[[], dict[str, Any]]:
    """The pool (two tools and the resources pool://notes and pool://blob) as a remote entry:
    the permissions guard it as they guard any server that is not in-process."""
    entry = served(inprocess_pool(2, resources=True))
    return lambda: {"pool": dict(entry)}


@pytest.fixture
def pool_hub(pool_config) -> Callable[..., Hub]:
    return lambda **options: Hub(pool_config(), **options)


# --- resource tools under the permission layer (issue 22.4) ---------------------------------


def test_default_deny_keeps_every_resource_from_the_model(pool_hub) -> None:
    with pool_hub(default_permission="deny") as hub:
        assert hub.connect_all()["pool"].state == "connected"
        with pytest.raises(PermissionDenied, match="ReadMcpResourceTool.*'pool'.*default"):
            hub.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://notes"})
        with pytest.raises(PermissionDenied):
            hub.call_tool("ListMcpResourcesTool", {"server": "pool"})
        listed = hub.call_tool("ListMcpResourcesTool", {})
        assert listed.structured_content == {"resources": []}
        assert "pool://notes" not in listed.text and "permission refused: 'pool'" in listed.text
        # the host itself still reads (the permissions guard what the model reaches)
        assert hub.read_resource("pool://notes", server="pool").text == "remember the milk"


def test_a_refusing_handler_is_asked_with_the_server_and_the_uri(pool_hub) -> None:
    asked: list[tuple[McpTool, dict[str, Any]]] = []

    def refuse(tool: McpTool, arguments: Mapping[str, Any]) -> bool:
        asked.append((tool, dict(arguments)))
        return False

    with pool_hub(permission_handler=refuse) as hub:
        with pytest.raises(PermissionDenied, match="refused by the permission handler"):
            hub.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://blob"})
        listed = hub.call_tool("ListMcpResourcesTool", {})
    assert listed.structured_content == {"resources": []}
    (read, read_args), (listing, list_args) = asked
    assert (read.name, read.server, read.read_only) == ("ReadMcpResourceTool", "pool", True)
    assert read_args == {"server": "pool", "uri": "pool://blob"}
    assert (listing.name, listing.server) == ("ListMcpResourcesTool", "pool")
    assert list_args == {"server": "pool"}


def test_rules_naming_the_server_decide_and_always_is_remembered(
    pool_hub, pool_config
) -> None:
    with pool_hub(default_permission="deny", allow=["mcp__pool"]) as hub:
        got = hub.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://notes"})
        assert got.text == "remember the milk"
    with pool_hub(deny=["mcp__pool__*"]) as hub, pytest.raises(PermissionDenied, match="deny"):
        hub.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://notes"})
    answers: list[str] = []

    def always(tool: McpTool, arguments: Mapping[str, Any]) -> str:
        answers.append(str(arguments.get("uri")))
        return "always"

    with pool_hub(permission_handler=always) as hub:
        for _ in range(2):
            got = hub.call_tool("ReadMcpResourceTool", {"server": "pool", "uri": "pool://notes"})
            assert got.text == "remember the milk"
        hub.update(pool_config())  # a new configuration keeps the answer
        hub.call_tool("ListMcpResourcesTool", {"server": "pool"})
    assert answers == ["pool://notes"]  # asked once, for the Hub's lifetime


def test_in_process_resources_stay_readable_under_default_deny() -> None:
    server = mcp_lite.Server("docs")

    @server.resource("docs://intro")
    def intro() -> str:
        return "hello"

    with Hub({"docs": server}, default_permission="deny") as hub:
        got = hub.call_tool("ReadMcpResourceTool", {"server": "docs", "uri": "docs://intro"})
        assert got.text == "hello"


# --- output files stay the user's (issue 22.8) ------------------------------------------------


def _talker() -> mcp_lite.Server:
    server = mcp_lite.Server("talk")

    @server.tool()
    def talk(n: int) -> str:
        return "x" * n

    return server


def _saved_image(text: str) -> Path:
    match = re.search(r"saved to (\S+)\]", text)
    assert match, text
    return Path(match.group(1))


def _saved_path(text: str) -> Path:
    match = re.search(r"saved \([\d,]+ bytes\) to (\S+?)\.? ", text)
    assert match, text
    return Path(match.group(1))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_an_output_dir_of_another_user_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 4242, 4242)
    with pytest.raises(ConfigError, match="belongs to another user"):
        Hub({"talk": _talker()}, output_dir=theirs)
    # nor anything below their folder: they can rename ours away and put a link there
    (theirs / "ours").mkdir(mode=0o700)
    with pytest.raises(ConfigError, match="which belongs to another user"):
        Hub({"talk": _talker()}, output_dir=theirs / "ours")
    # and not through a link of ours pointing into their folder
    (tmp_path / "link").symlink_to(theirs / "ours")
    with pytest.raises(ConfigError, match="which belongs to another user"):
        Hub({"talk": _talker()}, output_dir=tmp_path / "link")


def test_an_output_dir_others_can_write_to_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ConfigError, match="writable by others"):
        Hub({"talk": _talker()}, output_dir=shared)
    # so is a folder the Hub would create inside it, before any call
    with pytest.raises(ConfigError, match="others can write to"):
        Hub({"talk": _talker()}, output_dir=shared / "new" / "deeper")
    # a sticky folder (like /tmp) is fine above a private one
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    with Hub({"talk": _talker()}, output_dir=sticky / "mine", max_output_tokens=5) as hub:
        path = _saved_path(hub.call_tool("mcp__talk__talk", {"n": 100}).text)
    assert path.parent == sticky / "mine" and path.read_text() == "x" * 100
    assert stat.S_IMODE((sticky / "mine").stat().st_mode) == 0o700


def test_a_planted_link_is_never_written_through(tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "id_ed25519"
    secret.write_text("PRIVATE KEY")
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    names = iter(["aaaaaaaaaaaa", "bbbbbbbbbbbb"])
    monkeypatch.setattr(results.secrets, "token_hex", lambda n: next(names))
    (out / "talk-talk-aaaaaaaaaaaa.txt").symlink_to(secret)
    with Hub({"talk": _talker()}, output_dir=out, max_output_tokens=5) as hub:
        path = _saved_path(hub.call_tool("mcp__talk__talk", {"n": 100}).text)
    assert path == out / "talk-talk-bbbbbbbbbbbb.txt" and path.read_text() == "x" * 100
    assert secret.read_text() == "PRIVATE KEY"
    assert stat.S_IMODE(path.lstat().st_mode) == 0o600


# --- an image bomb is refused from its header (issue 22.11) ------------------------------------


def _png(width: int, height: int) -> bytes:
    """A real PNG header claiming ``width`` x ``height`` (1-bit grey), with a few hundred
    bytes of image data: a few kilobytes that would decode to width x height pixels."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    idat = zlib.compress(b"\0" * 200_000, 9)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def _painter(png: bytes) -> mcp_lite.Server:
    server = mcp_lite.Server("paint")

    @server.tool()
    def paint():  # type: ignore[no-untyped-def]
        data = base64.b64encode(png).decode()
        return {"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}

    return server


@pytest.mark.parametrize(
    ("width", "height", "says"),
    [
        (16000, 11200, "more pixels than PIL.Image.MAX_IMAGE_PIXELS"),  # ~179 M pixels
        (8000, 6000, "8,000 x 6,000 = 48,000,000 pixels, over the 40,000,000-pixel limit"),
    ],
)
def test_an_image_bomb_is_refused_from_its_header(
    tmp_path: Path, monkeypatch, width: int, height: int, says: str
) -> None:
    image = pytest.importorskip("PIL.ImageFile", reason="the optional images extra (Pillow)")
    decoded: list[object] = []
    monkeypatch.setattr(image.ImageFile, "load", lambda self: decoded.append(self))
    png = _png(width, height)
    assert len(png) < 4096
    with Hub({"paint": _painter(png)}, output_dir=tmp_path / "out") as hub:
        result = hub.call_tool("mcp__paint__paint", {})
    assert result.content[0].type == "text" and says in result.text, result.text
    assert "dropped, not decoded" in result.text
    assert decoded == [] and not (tmp_path / "out").exists()  # nothing decoded, nothing saved


def test_an_image_under_the_pixel_limit_is_still_shrunk(tmp_path: Path) -> None:
    image = pytest.importorskip("PIL.Image", reason="the optional images extra (Pillow)")
    buf = io.BytesIO()
    image.new("L", (4000, 100)).save(buf, format="PNG")
    with Hub({"paint": _painter(buf.getvalue())}, output_dir=tmp_path) as hub:
        result = hub.call_tool("mcp__paint__paint", {})
    path = _saved_image(result.text)
    with image.open(path) as img:
        assert img.size == (2000, 50)


# --- the sampling handler is told which server asks (issue 22.12) ------------------------------

OFFICIAL = str(Path(__file__).resolve().parents[1] / "peers" / "official_server.py")


def _sampler(name: str) -> mcp_lite.Server:
    server = mcp_lite.Server(name)

    @server.tool()
    def think(ctx: Context) -> str:
        return str(ctx.sample("2+2?", max_tokens=5)["content"]["text"])

    return server


def _answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


def test_the_sampling_handler_is_told_which_server_asks() -> None:
    asked: list[str] = []

    def per_server(server: str, params: Any) -> dict[str, Any]:
        asked.append(server)
        return _answer("4" if server == "trusted" else "refused")

    config = {
        "trusted": _sampler("t"),
        "shady": _sampler("s"),
        "sdk": {"command": sys.executable, "args": [OFFICIAL, "stdio"]},
    }
    with Hub(config, sampling_handler=per_server, client_options=SLOW_PROBE) as hub:
        assert hub.call_tool("mcp__trusted__think", {}).text == "4"
        assert hub.call_tool("mcp__shady__think", {}).text == "refused"
        got = hub.call_tool("mcp__sdk__summarize", {"text": "a long story"})
        assert got.text == "summary by m: refused", got.text
    assert asked == ["trusted", "shady", "sdk"]


def test_a_one_argument_sampling_handler_in_client_options_still_works() -> None:
    seen: list[Any] = []

    def old_style(params: Any) -> dict[str, Any]:
        seen.append(params)
        return _answer("4")

    options = {"sampling_handler": old_style}
    with Hub({"a": _sampler("a")}, client_options=options) as hub:  # type: ignore[arg-type]
        assert hub.call_tool("mcp__a__think", {}).text == "4"
    assert len(seen) == 1
    with pytest.raises(ConfigError, match="not both"):
        Hub({"a": _sampler("a")}, client_options=options, sampling_handler=lambda s, p: None)  # type: ignore[arg-type]
