"""What the Hub does with a tool's result before handing it back, and the call's progress events.

- **Binary content** (``image`` and ``audio`` blocks, embedded resources with a ``blob``) is
  decoded and written to a file in the Hub's output folder; the block is replaced by a text
  block giving the path, type and size, so an LLM sees where the data is without megabytes
  of base64. Images larger than 2000 px on a side are shrunk first when Pillow is installed
  (the optional ``images`` extra); without Pillow they are written as they came.
- **Large text** is cut to a budget of ``max_output_tokens`` (default 25,000, or
  ``MAX_MCP_OUTPUT_TOKENS``), counted as 4 characters per token, and a note says so.
- **Progress events** (``ToolEvent``): ``started``, ``progress`` (from the server's
  ``notifications/progress``), then ``completed`` or ``failed`` with the elapsed milliseconds.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import io
import logging
import mimetypes
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._accel import normalize_name
from ..protocol.types import CallToolResult

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MAX_OUTPUT_TOKENS",
    "ResultProcessor",
    "ToolEvent",
    "max_output_tokens_from_env",
]

log = logging.getLogger("mcp_lite.hub")

DEFAULT_MAX_OUTPUT_TOKENS = 25_000
CHARS_PER_TOKEN = 4
MAX_IMAGE_SIDE = 2000
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


class ResultProcessor:
    """Persists binary content and truncates text (see the module docstring). Thread-safe.

    Args:
        output_dir: where binary content goes; None creates a private temporary folder on
            first use (kept after the Hub closes: the paths were handed out).
        max_output_tokens: the text budget; None reads ``MAX_MCP_OUTPUT_TOKENS``.
    """

    def __init__(
        self, output_dir: str | os.PathLike[str] | None = None, max_output_tokens: int | None = None
    ) -> None:
        if max_output_tokens is not None and max_output_tokens <= 0:
            from ..errors import ConfigError

            raise ConfigError("max_output_tokens must be a positive integer")
        self._output_dir = Path(output_dir) if output_dir is not None else None
        self.max_output_tokens = max_output_tokens or max_output_tokens_from_env()
        self._lock = threading.Lock()

    @property
    def output_dir(self) -> Path:
        """The output folder (created on first use)."""
        with self._lock:
            if self._output_dir is None:
                self._output_dir = Path(tempfile.mkdtemp(prefix="mcp-lite-output-"))
            else:
                self._output_dir.mkdir(parents=True, exist_ok=True)
            return self._output_dir

    def process(self, server: str, tool: str, result: CallToolResult) -> CallToolResult:
        """A new result with binary content persisted and text cut to the budget."""
        wire = result.to_wire()
        blocks = [self._persist(server, tool, b) for b in wire.get("content") or []]
        wire["content"] = self._truncate(blocks)
        return CallToolResult.model_validate(wire)

    # --- binary content ----------------------------------------------------------------------

    def _persist(self, server: str, tool: str, block: Any) -> Any:
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
            raw = base64.b64decode(data, validate=False)
        except (binascii.Error, ValueError):
            return {"type": "text", "text": f"[{what}: invalid base64 data ({mime}) dropped]"}
        if kind == "image":
            raw, mime = _shrink_image(raw, mime)
        path = self._write(server, tool, raw, mime)
        return {"type": "text", "text": f"[{what} ({mime}, {len(raw)} bytes) saved to {path}]"}

    def _write(self, server: str, tool: str, raw: bytes, mime: str) -> Path:
        ext = _EXTENSIONS.get(mime) or mimetypes.guess_extension(mime) or ".bin"
        prefix = f"{normalize_name(server)}-{normalize_name(tool)}-"
        fd, name = tempfile.mkstemp(prefix=prefix, suffix=ext, dir=self.output_dir)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        return Path(name)

    # --- text ----------------------------------------------------------------------------------

    def _truncate(self, blocks: list[Any]) -> list[Any]:
        budget = self.max_output_tokens * CHARS_PER_TOKEN
        total = sum(
            len(b.get("text") or "")
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        )
        if total <= budget:
            return blocks
        out: list[Any] = []
        left = budget
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
        out.append(
            {
                "type": "text",
                "text": (
                    f"\n[OUTPUT TRUNCATED: the tool returned about {total // CHARS_PER_TOKEN:,} tokens of "
                    f"text, over the {self.max_output_tokens:,}-token limit (MAX_MCP_OUTPUT_TOKENS); "
                    "only the beginning is shown. Ask the tool for less, e.g. with a filter or "
                    "pagination, if it supports them.]"
                ),
            }
        )
        return out


def _shrink_image(raw: bytes, mime: str) -> tuple[bytes, str]:
    """``raw`` scaled to fit ``MAX_IMAGE_SIDE`` when Pillow is installed and it is larger."""
    try:
        image_module: Any = importlib.import_module("PIL.Image")  # optional: the images extra
    except ImportError:
        return raw, mime
    try:
        with image_module.open(io.BytesIO(raw)) as img:
            if max(img.size) <= MAX_IMAGE_SIDE:
                return raw, mime
            fmt = img.format or "PNG"
            img.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
            out = io.BytesIO()
            img.save(out, format=fmt)
            return out.getvalue(), str(image_module.MIME.get(fmt, mime))
    except Exception as exc:  # a broken image is still saved as it came
        log.debug("could not resize an image (%s): %s", mime, exc)
        return raw, mime
