"""What the Hub does with a tool's result before handing it back (binary content and large text
written to private files, a note in their place), and the call's progress events (``ToolEvent``).
The rules and limits are in docs/explanation/inside-the-hub.md."""

from __future__ import annotations

import base64
import binascii
import importlib
import io
import json
import logging
import mimetypes
import os
import secrets
import stat
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..._accel import normalize_name
from ...errors import ConfigError
from ...protocol.types import CallToolResult

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "MAX_RESULT_SIZE_CHARS",
    "ResultProcessor",
    "Media",
    "ToolEvent",
    "check_media",
    "max_output_tokens_from_env",
]

log = logging.getLogger("mcp_lite.hub")

DEFAULT_MAX_OUTPUT_TOKENS = 25_000
CHARS_PER_TOKEN = 4
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_RESULT_SIZE_CHARS = 500_000
"""The most characters a tool's ``_meta["anthropic/maxResultSizeChars"]`` can raise its
result's budget to."""
_SIZE_META = "anthropic/maxResultSizeChars"
_NAME_PART = 40
_NAME_TRIES = 100
_CREATE_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
MAX_IMAGE_SIDE = 2000
MAX_IMAGE_PIXELS = 40_000_000
"""The most pixels (width x height, from the header) of an image the Hub decodes to shrink
it: about 160 MB as RGBA. A larger one is dropped with a note, never decoded."""
_EXTENSIONS = {
    "image/png": ".png",
    "image/jpeg": ".jpg",
    "image/gif": ".gif",
    "image/webp": ".webp",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/mpeg": ".mp3",
    "audio/ogg": ".ogg",
    "application/pdf": ".pdf",
    "application/octet-stream": ".bin",
}


Media = Literal["files", "inline"]
"""Where image and audio blocks go: files in the output folder, or left in the result."""


def check_media(media: object) -> Media:
    """``media`` when it is ``"files"`` or ``"inline"``.

    Raises:
        ConfigError: anything else.
    """
    if media == "files" or media == "inline":
        return media
    raise ConfigError(f"media must be 'files' or 'inline', not {media!r}")


@dataclass(frozen=True)
class ToolEvent:
    """One step of a Hub tool call, for ``call_tool(..., on_event=fn)``.

    Attributes:
        status: ``"started"``, ``"progress"``, ``"completed"`` or ``"failed"``.
        server: the configured server name; tool: the qualified ``mcp__server__tool`` name.
        progress, total, message: from the server's progress notification (``progress``).
        elapsed_ms: milliseconds since ``started`` (``completed`` and ``failed``).
        error: ``str`` of the exception (``failed``).
    """

    status: Literal["started", "progress", "completed", "failed"]
    server: str
    tool: str
    progress: float | None = None
    total: float | None = None
    message: str | None = None
    elapsed_ms: int | None = None
    error: str | None = None


def max_output_tokens_from_env(environ: dict[str, str] | None = None) -> int:
    """``MAX_MCP_OUTPUT_TOKENS`` when it is a positive integer, else 25,000."""
    raw = (environ if environ is not None else os.environ).get("MAX_MCP_OUTPUT_TOKENS", "")
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_OUTPUT_TOKENS
    return value if value > 0 else DEFAULT_MAX_OUTPUT_TOKENS


class _Budget:
    """Bytes one call may still write."""

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


class ResultProcessor:
    """Persists binary content and truncates text (see the module docstring). Thread-safe.

    Args:
        output_dir: where files go; None creates a private temporary folder on first use
            (kept after the Hub closes: the paths were handed out). A folder that does not
            exist is created ``0700`` on first use; an existing one must be the user's alone
            (see the module docstring).
        max_output_tokens: the text budget; None reads ``MAX_MCP_OUTPUT_TOKENS``.
        max_file_bytes: the most bytes written to files per call (default 64 MiB).
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str] | None = None,
        max_output_tokens: int | None = None,
        max_file_bytes: int | None = None,
    ) -> None:
        if max_output_tokens is not None and max_output_tokens <= 0:
            raise ConfigError("max_output_tokens must be a positive integer")
        if max_file_bytes is not None and max_file_bytes < 0:
            raise ConfigError("max_output_file_bytes must be 0 or more")
        self._output_dir = Path(os.path.abspath(output_dir)) if output_dir is not None else None
        self._checked = False
        if self._output_dir is not None:  # refused at once, before any call
            if os.path.lexists(self._output_dir):
                check_private(self._output_dir)
                self._checked = True
            else:
                _check_above(self._output_dir)
        self.max_output_tokens = max_output_tokens or max_output_tokens_from_env()
        self.max_file_bytes = DEFAULT_MAX_FILE_BYTES if max_file_bytes is None else max_file_bytes
        self._lock = threading.Lock()

    @property
    def output_dir(self) -> Path:
        """The output folder (created on first use).

        Raises:
            ConfigError: a folder the Hub created is not the user's alone after all (made
                meanwhile by someone else; see the module docstring).
        """
        with self._lock:
            if self._output_dir is None:
                self._output_dir = Path(tempfile.mkdtemp(prefix="mcp-lite-output-"))
            elif not os.path.lexists(self._output_dir):
                _make_private(self._output_dir)
            if not self._checked:
                check_private(self._output_dir)
                self._checked = True
            return self._output_dir

    def process(
        self,
        server: str,
        tool: str,
        result: CallToolResult,
        tool_meta: Mapping[str, Any] | None = None,
        media: Media = "files",
    ) -> CallToolResult:
        """A new result with binary content persisted (image and audio kept as blocks when
        ``media`` is ``"inline"``, under the same caps) and text (and structured content)
        cut to the budget, the full versions kept in files. ``tool_meta``: the tool
        definition's ``_meta``, whose ``anthropic/maxResultSizeChars`` may raise the budget."""
        limit = self._char_limit(tool_meta)
        quick = self._unchanged(result, limit)
        if quick is not None:
            return quick
        wire = result.to_wire()
        budget = _Budget(self.max_file_bytes)
        inline = media == "inline"
        blocks = [self._persist(server, tool, b, budget, inline) for b in wire.get("content") or []]
        wire["content"] = self._truncate(server, tool, blocks, budget, limit)
        structured = wire.get("structuredContent")
        if structured is not None:
            encoded = json.dumps(structured, ensure_ascii=False)
            if len(encoded) > limit:
                del wire["structuredContent"]
                where = self._keep(server, tool, encoded.encode(), ".json", budget)
                wire["content"].append(
                    {
                        "type": "text",
                        "text": (
                            f"[structured content too large for the model "
                            f"({len(encoded):,} characters): {where}]"
                        ),
                    }
                )
        processed = CallToolResult.model_validate(wire)
        processed._text_json = result._text_json  # ``data`` of a text-only structured tool
        return processed

    def _char_limit(self, tool_meta: Mapping[str, Any] | None = None) -> int:
        """The characters a result may keep: ``max_output_tokens`` x 4, or the tool's
        integer ``_meta["anthropic/maxResultSizeChars"]`` when larger (at most
        ``MAX_RESULT_SIZE_CHARS``; any other value is ignored)."""
        limit = self.max_output_tokens * CHARS_PER_TOKEN
        asked = tool_meta.get(_SIZE_META) if isinstance(tool_meta, Mapping) else None
        if type(asked) is int and asked > limit:  # not a bool, a float or a string
            return max(limit, min(asked, MAX_RESULT_SIZE_CHARS))
        return limit

    def _unchanged(self, result: CallToolResult, limit: int) -> CallToolResult | None:
        """The common case without pydantic: text blocks only, under the budget, any
        structured content small plain JSON. Then the new result is the one ``process``
        would make (``to_wire`` then ``model_validate``: the same dict, key order and fresh
        containers); None for everything else (see ``_plain_wire``)."""
        if result._blocks is not None:  # content was read as objects: the model's own path
            return None
        wire = _plain_wire(result._wire)
        if wire is None:
            return None
        if sum(len(b["text"]) for b in wire["content"]) > limit:
            return None
        structured = wire.get("structuredContent")
        if structured is not None:
            encoded = json.dumps(structured, ensure_ascii=False)
            if len(encoded) > limit:
                return None
        processed = CallToolResult._trusted(wire)
        processed._text_json = result._text_json
        return processed

    def _keep(self, server: str, tool: str, raw: bytes, ext: str, budget: _Budget) -> str:
        """Write ``raw`` when the call's budget allows; the words saying where it went."""
        size = len(raw)
        if not budget.take(size):
            return (
                f"not saved: {size:,} bytes would pass this call's limit of "
                f"{self.max_file_bytes:,} bytes written"
            )
        path = self._write_file(server, tool, raw, ext)
        return f"saved ({size:,} bytes) to {path}"

    # --- binary content ----------------------------------------------------------------------

    def _persist(
        self, server: str, tool: str, block: Any, budget: _Budget, inline: bool = False
    ) -> Any:
        if not isinstance(block, dict):
            return block
        kind = block.get("type")
        if kind in ("image", "audio") and isinstance(block.get("data"), str):
            mime = str(block.get("mimeType") or ("image/png" if kind == "image" else "audio/wav"))
            data = block["data"]
            what = kind
        elif (
            kind == "resource"
            and isinstance(block.get("resource"), dict)
            and isinstance(block["resource"].get("blob"), str)
        ):
            res = block["resource"]
            mime = str(res.get("mimeType") or "application/octet-stream")
            data = res["blob"]
            what = f"resource {res.get('uri', '')}".strip()
        else:
            return block
        try:
            raw = decoded = base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError):
            return {"type": "text", "text": f"[{what}: invalid base64 data ({mime}) dropped]"}
        if kind == "image":
            try:
                raw, mime = _shrink_image(raw, mime, MAX_IMAGE_PIXELS)
            except _TooManyPixels as exc:
                return {
                    "type": "text",
                    "text": f"[{what} ({mime}, {len(raw):,} bytes) dropped, not decoded: {exc}]",
                }
        if not budget.take(len(raw)):
            verb = "not kept" if inline and kind != "resource" else "not saved"
            return {
                "type": "text",
                "text": (
                    f"[{what} ({mime}, {len(raw)} bytes) {verb}: over this call's limit of "
                    f"{self.max_file_bytes:,} bytes written]"
                ),
            }
        if inline and kind != "resource":  # the block itself, with what a shrink changed
            if raw is decoded:
                return block
            return {**block, "data": base64.b64encode(raw).decode("ascii"), "mimeType": mime}
        path = self._write(server, tool, raw, mime)
        return {"type": "text", "text": f"[{what} ({mime}, {len(raw)} bytes) saved to {path}]"}

    def _write(self, server: str, tool: str, raw: bytes, mime: str) -> Path:
        ext = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"
        return self._write_file(server, tool, raw, ext)

    def _write_file(self, server: str, tool: str, raw: bytes, ext: str) -> Path:
        # A new 0600 file: O_EXCL never opens one that exists, O_NOFOLLOW never a link. The
        # name is reduced to [a-zA-Z0-9_-], so no "/" or ".." can take it elsewhere.
        prefix = f"{normalize_name(server)[:_NAME_PART]}-{normalize_name(tool)[:_NAME_PART]}-"
        ext = "." + normalize_name(ext.lstrip("."))[:16] if ext else ""
        folder = self.output_dir
        for _ in range(_NAME_TRIES):
            path = folder / f"{prefix}{secrets.token_hex(6)}{ext}"
            try:
                fd = os.open(path, _CREATE_FLAGS, 0o600)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
            return path
        raise FileExistsError(f"no free file name in {folder} after {_NAME_TRIES} tries")

    # --- text ----------------------------------------------------------------------------------

    def _truncate(
        self, server: str, tool: str, blocks: list[Any], budget: _Budget, limit: int
    ) -> list[Any]:
        texts = [
            b.get("text") or "" for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        ]
        total = sum(len(t) for t in texts)
        if total <= limit:
            return blocks
        out: list[Any] = []
        left = limit
        for block in blocks:
            if not (isinstance(block, dict) and block.get("type") == "text"):
                out.append(block)
                continue
            text = block.get("text") or ""
            if left <= 0:
                continue
            if len(text) > left:
                block = {**block, "text": text[:left]}
            left -= len(text)
            out.append(block)
        where = self._keep(server, tool, "\n".join(texts).encode("utf-8"), ".txt", budget)
        out.append(
            {
                "type": "text",
                "text": (
                    f"\n[OUTPUT TRUNCATED: the tool returned {self._over(total, limit)}; "
                    "only the beginning is shown. The full output was "
                    f"{where}. Read that file in parts, or ask the tool for less (a filter or "
                    "pagination) if it supports them.]"
                ),
            }
        )
        return out

    def _over(self, total: int, limit: int) -> str:
        """How much text came, and which limit it passed."""
        if limit == self.max_output_tokens * CHARS_PER_TOKEN:
            return (
                f"about {total // CHARS_PER_TOKEN:,} tokens of text, over the "
                f"{self.max_output_tokens:,}-token limit (MAX_MCP_OUTPUT_TOKENS)"
            )
        return (
            f"{total:,} characters of text, over this tool's limit of {limit:,} characters "
            f"(its _meta {_SIZE_META})"
        )


# --- the common result, without pydantic ---------------------------------------------------

_PLAIN_KEYS = frozenset({"content", "structuredContent", "isError", "_meta"})
_PLAIN_NODES = 256  # the most JSON values copied here; a larger result takes pydantic's path
_TEXT_BLOCK_KEYS = {"type", "text"}


class _NotPlain(Exception):
    pass


def _plain_wire(raw: Any) -> dict[str, Any] | None:
    """``CallToolResult.to_wire()`` of a result whose wire dict is ``raw``, when ``raw`` is of
    the common plain shape: ``content`` a list of ``{"type", "text"}`` blocks (strings),
    ``isError`` a bool or absent, ``structuredContent`` and ``_meta`` plain JSON (dicts with
    string keys, lists, strings, ints, bools, finite floats, None; at most ``_PLAIN_NODES``
    values) or absent, and nothing else. The dict is new (new containers all through), its
    keys in the model's order with the defaults pydantic dumps. None when ``raw`` is not
    plain: then only pydantic knows (a NaN, a tuple, an int key, an annotation...)."""
    if type(raw) is not dict or not _PLAIN_KEYS.issuperset(raw):
        return None
    content = raw.get("content")
    if type(content) is not list:
        return None
    blocks = []
    for block in content:
        if type(block) is not dict or block.keys() != _TEXT_BLOCK_KEYS:
            return None
        kind, text = block["type"], block["text"]
        if type(kind) is not str or type(text) is not str:
            return None
        blocks.append({"type": kind, "text": text})
    out: dict[str, Any] = {"content": blocks}
    is_error = raw.get("isError", False)
    if type(is_error) is not bool:
        return None
    budget = [_PLAIN_NODES]
    try:
        structured = raw.get("structuredContent")
        if structured is not None:
            out["structuredContent"] = _plain_copy(structured, budget)
        out["isError"] = is_error
        meta = raw.get("_meta")
        if meta is not None:
            if type(meta) is not dict:
                return None
            out["_meta"] = _plain_copy(meta, budget)
    except _NotPlain:
        return None
    return out


def _plain_copy(value: Any, budget: list[int]) -> Any:
    """A copy of plain JSON ``value`` (see ``_plain_wire``).

    Raises:
        _NotPlain: something pydantic would change, or more than the budget of values.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotPlain
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if value - value != 0.0:  # NaN or an infinity: pydantic dumps None
            raise _NotPlain
        return value
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out[key] = _plain_copy(item, budget)
        return out
    if kind is list:
        return [_plain_copy(item, budget) for item in value]
    raise _NotPlain


def check_private(folder: Path) -> None:
    """Return when ``folder`` is a folder only the user (and root) can change, and so is every
    folder above it, as written and after resolving links; sticky folders (``/tmp``) may be
    writable by others above it. Nothing is checked where there are no user ids (Windows).

    Raises:
        ConfigError: naming the folder and what is wrong with it.
    """
    if not hasattr(os, "geteuid"):
        return
    me = os.geteuid()
    try:
        st = os.stat(folder)
    except OSError as exc:
        raise ConfigError(f"output_dir {str(folder)!r} cannot be used: {exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"output_dir {str(folder)!r} is not a folder")
    if st.st_uid != me:
        raise ConfigError(
            f"output_dir {str(folder)!r} belongs to another user (uid {st.st_uid}), who could "
            "swap the files handed to the model; use a folder of your own"
        )
    if st.st_mode & 0o022:
        raise ConfigError(
            f"output_dir {str(folder)!r} is writable by others (mode "
            f"{stat.S_IMODE(st.st_mode):o}); run chmod go-w on it or use another folder"
        )
    _check_above(folder)


def _check_above(folder: Path) -> None:
    """The folders above ``folder`` that exist, for ``check_private`` (the missing ones the
    Hub creates ``0700``)."""
    if not hasattr(os, "geteuid"):
        return
    me = os.geteuid()
    above = {*Path(os.path.abspath(folder)).parents, *Path(os.path.realpath(folder)).parents}
    for parent in sorted(above):
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ConfigError(f"output_dir {str(folder)!r} cannot be used: {exc}") from None
        if st.st_uid not in (me, 0):
            raise ConfigError(
                f"output_dir {str(folder)!r} lies in {str(parent)!r}, which belongs to another "
                f"user (uid {st.st_uid}); use a folder of your own"
            )
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise ConfigError(
                f"output_dir {str(folder)!r} lies in {str(parent)!r}, which others can write "
                f"to (mode {stat.S_IMODE(st.st_mode):o}); use a folder of your own"
            )


def _make_private(folder: Path) -> None:
    """Create ``folder`` and the missing folders above it, each ``0700``."""
    missing = [p for p in (folder, *folder.parents) if not os.path.lexists(p)]
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # made meanwhile by another thread or process; check_private judges it


class _TooManyPixels(Exception):
    """An image whose header claims more pixels than the Hub decodes."""


def _shrink_image(raw: bytes, mime: str, max_pixels: int) -> tuple[bytes, str]:
    """``raw`` scaled to fit ``MAX_IMAGE_SIDE`` when Pillow is installed and it is larger.

    Raises:
        _TooManyPixels: the header says more than ``max_pixels`` pixels (checked before
            anything is decoded: ``Image.open`` reads only the header).
    """
    try:
        image_module: Any = importlib.import_module("PIL.Image")  # optional: the images extra
    except ImportError:
        return raw, mime
    bombs = (image_module.DecompressionBombError, image_module.DecompressionBombWarning)
    try:
        img = image_module.open(io.BytesIO(raw))
    except bombs:  # over Pillow's own limit (a warning only when a filter raises it)
        raise _TooManyPixels(
            "its header claims more pixels than PIL.Image.MAX_IMAGE_PIXELS allows (the Hub "
            f"decodes at most {max_pixels:,})"
        ) from None
    except Exception as exc:  # not an image Pillow reads: saved as it came
        log.debug("could not read an image header (%s): %s", mime, exc)
        return raw, mime
    with img:
        width, height = img.size
        if width * height > max_pixels:
            raise _TooManyPixels(
                f"its header says {width:,} x {height:,} = {width * height:,} pixels, over "
                f"the {max_pixels:,}-pixel limit"
            )
        if max(width, height) <= MAX_IMAGE_SIDE:
            return raw, mime
        try:
            fmt = img.format or "PNG"
            img.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
            out = io.BytesIO()
            img.save(out, format=fmt)
            return out.getvalue(), str(image_module.MIME.get(fmt, mime))
        except Exception as exc:  # a broken image is still saved as it came
            log.debug("could not resize an image (%s): %s", mime, exc)
            return raw, mime
