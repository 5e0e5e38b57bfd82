"""The header block of an HTTP request, read the way ``http.client.parse_headers`` reads it and
parsed without the ``email`` package when every line is a plain ``Name: value`` line (see
docs/explanation/server.md)."""

from __future__ import annotations

import email.parser
import http.client
import re
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["Headers", "read_headers"]

# the stdlib's own bounds, so a request refused there is refused here
_MAXLINE: int = getattr(http.client, "_MAXLINE", 65536)
_MAXHEADERS: int = getattr(http.client, "_MAXHEADERS", 100)
# A header line the email parser reads as one (name, value): the name is what its header
# pattern accepts (printable ASCII but ':'), the value loses its leading blanks (lstrip of
# ' \t') and its line end; no CR or LF inside (email splits lines at a lone CR too).
_PLAIN = re.compile(rb"([!-9;-~]+):[ \t]*([^\r\n]*)\r?\n")
_END_LINES = (b"\r\n", b"\n", b"")
# A whole block of plain CRLF lines up to its blank line (no other blank line in it: a
# value holds no CR or LF), and its (name, value) pairs; on the latin-1 text of the block.
_BLOCK = re.compile(r"(?:[!-9;-~]+:[^\r\n]*\r\n)*\r\n")
_PAIR = re.compile(r"([!-9;-~]+):[ \t]*([^\r\n]*)\r\n")


class _Lines(Protocol):
    def readline(self, size: int = -1, /) -> bytes: ...


class Headers:
    """The headers of one request: ``get`` / ``[]`` as ``email.message.Message`` answers
    them (case-insensitive, the first of repeated names, None when absent)."""

    __slots__ = ("_items", "_first")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = items
        self._first = {name.lower(): value for name, value in reversed(items)}  # the first wins

    def get(self, name: str, default: Any = None) -> Any:
        return self._first.get(name.lower(), default)

    def __getitem__(self, name: str) -> str | None:
        return self._first.get(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._first

    def get_all(self, name: str, failobj: Any = None) -> Any:
        key = name.lower()
        found = [v for k, v in self._items if k.lower() == key]
        return found or failobj

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def keys(self) -> list[str]:
        return [k for k, _ in self._items]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._items)

    def __str__(self) -> str:
        return "".join(f"{k}: {v}\n" for k, v in self._items) + "\n"


def read_headers(fp: _Lines) -> Headers:
    """Read a header block from ``fp`` up to its blank line (or the end of input).

    Raises:
        http.client.LineTooLong: a line longer than the stdlib's bound.
        http.client.HTTPException: more lines than the stdlib's bound.
    """
    peek = getattr(fp, "peek", None)
    if peek is not None:  # the whole block already buffered: one look, no line loop
        buffered = peek(1)
        end = buffered.find(b"\r\n\r\n")
        # within both bounds: each line of a block this short is, and so is their count
        if end >= 0 and end + 4 <= _MAXLINE and buffered.count(b"\n", 0, end + 4) <= _MAXHEADERS:
            text = buffered[: end + 4].decode("iso-8859-1")
            if _BLOCK.fullmatch(text):
                fp.read(end + 4)  # type: ignore[attr-defined]
                return Headers(_PAIR.findall(text))
    lines = []
    while True:  # the bounds of http.client._read_headers, line by line before holding more
        line = fp.readline(_MAXLINE + 1)
        if len(line) > _MAXLINE:
            raise http.client.LineTooLong("header line")
        lines.append(line)
        if len(lines) > _MAXHEADERS:
            raise http.client.HTTPException(f"got more than {_MAXHEADERS} headers")
        if line in _END_LINES:
            break
    return parse_lines(lines)


def parse_lines(lines: list[bytes]) -> Headers:
    """The headers of ``lines`` (each with its line end; the last one the blank line)."""
    items = []
    match = _PLAIN.fullmatch
    for line in lines[:-1]:
        m = match(line)
        if m is None:
            return _parsed_by_email(lines)
        items.append((m[1].decode("ascii"), m[2].decode("iso-8859-1")))
    if lines and lines[-1] not in _END_LINES:  # (not from read_headers) as the stdlib would
        return _parsed_by_email(lines)
    return Headers(items)


def _parsed_by_email(lines: list[bytes]) -> Headers:
    text = b"".join(lines).decode("iso-8859-1")
    message = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)
    return Headers([(k, str(v)) for k, v in message.items()])
