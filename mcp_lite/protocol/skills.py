"""The skills extension (``io.modelcontextprotocol/skills``, SEP-2640), sans-IO: a skill's entry
and the checks a host makes on every file it reads (size, digest, frontmatter), so unverified
content is never used (see docs/explanation/protocol.md, "Skills").
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import RemoteProtocolError, SkillVerificationError

__all__ = [
    "SKILLS_EXTENSION",
    "SkillEntry",
    "SkillFile",
    "check_file",
    "check_frontmatter",
    "digest_of",
    "parse_entry",
    "parse_frontmatter",
    "split_frontmatter",
]

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill as its entry declares it."""

    uri: str
    digest: str
    size: int | None = None


@dataclass(frozen=True)
class SkillEntry:
    """A skill as ``skills/list`` or ``skills/get`` describes it (nothing read yet)."""

    uri: str
    frontmatter: dict[str, Any]
    resources: tuple[SkillFile, ...] | None
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @property
    def name(self) -> str:
        value = self.frontmatter.get("name")
        return value if isinstance(value, str) else self.uri.rstrip("/").split("/")[-2]

    @property
    def description(self) -> str:
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else ""

    def file(self, uri: str) -> SkillFile | None:
        for f in self.resources or ():
            if f.uri == uri:
                return f
        return None


def parse_entry(raw: Any) -> SkillEntry:
    """Validate one skill entry from the wire.

    Raises:
        RemoteProtocolError: the entry is malformed (no uri, no frontmatter, bad digest...).
    """
    if not isinstance(raw, dict) or not isinstance(raw.get("uri"), str):
        raise RemoteProtocolError("a skill entry has no 'uri'")
    uri = raw["uri"]
    front = raw.get("frontmatter")
    if not isinstance(front, dict):
        raise RemoteProtocolError(f"skill {uri!r}: 'frontmatter' is not an object")
    files: list[SkillFile] | None = None
    if raw.get("resources") is not None:
        if not isinstance(raw["resources"], list):
            raise RemoteProtocolError(f"skill {uri!r}: 'resources' is not a list")
        files = []
        for item in raw["resources"]:
            if not isinstance(item, dict) or not isinstance(item.get("uri"), str):
                raise RemoteProtocolError(f"skill {uri!r}: a resource has no 'uri'")
            digest = item.get("digest")
            if not isinstance(digest, str) or not _DIGEST.match(digest):
                raise RemoteProtocolError(
                    f"skill {uri!r}: resource {item['uri']!r} has no valid sha256 digest"
                )
            size = item.get("size")
            if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
                raise RemoteProtocolError(f"skill {uri!r}: resource {item['uri']!r} size")
            files.append(SkillFile(item["uri"], digest, size))
    return SkillEntry(uri, front, tuple(files) if files is not None else None, raw)


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_file(entry: SkillEntry, uri: str, data: bytes) -> None:
    """Verify one file's bytes against the entry.

    Raises:
        SkillVerificationError: the file is not listed, or its size or digest differs.
    """
    if entry.resources is None:
        raise SkillVerificationError(
            f"skill {entry.uri!r} publishes no digests; its files cannot be verified", uri
        )
    declared = entry.file(uri)
    if declared is None:
        raise SkillVerificationError(f"{uri!r} is not a file of skill {entry.uri!r}", uri)
    if declared.size is not None and declared.size != len(data):
        raise SkillVerificationError(
            f"{uri!r} is {len(data)} bytes; the skill entry says {declared.size}", uri
        )
    actual = digest_of(data)
    if actual != declared.digest:
        raise SkillVerificationError(
            f"{uri!r} does not match its digest ({actual} != {declared.digest})", uri
        )


def split_frontmatter(text: str) -> tuple[str, str]:
    """``(frontmatter YAML, body)`` of a ``SKILL.md``.

    Raises:
        ValueError: the text does not start with a ``---`` delimited frontmatter block.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise ValueError("SKILL.md does not start with YAML frontmatter ('---')")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise ValueError("SKILL.md frontmatter is not closed ('---')")


def check_frontmatter(entry: SkillEntry, text: str) -> str:
    """Compare a fetched ``SKILL.md``'s frontmatter with the entry's; returns the body.

    Raises:
        SkillVerificationError: unparsable frontmatter, or any field differs.
    """
    try:
        yaml_text, body = split_frontmatter(text)
        parsed = parse_frontmatter(yaml_text)
        same = _canon(parsed) == _canon(entry.frontmatter)
    except ValueError as exc:
        raise SkillVerificationError(f"skill {entry.uri!r}: {exc}", entry.uri) from None
    except RecursionError:  # a backstop: the parser's depth limit should come first
        raise SkillVerificationError(
            f"skill {entry.uri!r}: frontmatter nested too deep", entry.uri
        ) from None
    if not same:
        fields = sorted(
            k
            for k in {*parsed, *entry.frontmatter}
            if _canon(parsed.get(k)) != _canon(entry.frontmatter.get(k))
        )
        raise SkillVerificationError(
            f"skill {entry.uri!r}: SKILL.md frontmatter differs from the skill entry "
            f"(fields: {', '.join(fields)})",
            entry.uri,
        )
    return body


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# --- a small YAML subset: what SKILL.md frontmatter uses -------------------------------------
# Block mappings (nested by indentation), block sequences ("- item"), flow sequences
# ("[a, b]"), plain and quoted scalars, true/false/null and numbers, "|" and ">" blocks.
# Anything else is a ValueError: a frontmatter we cannot read cannot be verified.

_NUMBER = re.compile(r"^[-+]?(\d+)(\.\d+)?([eE][-+]?\d+)?$")
# Nesting deeper than this (mappings, sequences, flow lists) is refused with ValueError: the
# parser recurses once per level, and a server's SKILL.md must not exhaust the stack.
MAX_DEPTH = 64


def _deeper(depth: int) -> int:
    if depth >= MAX_DEPTH:
        raise ValueError(f"frontmatter nested deeper than {MAX_DEPTH} levels")
    return depth + 1


def parse_frontmatter(text: str) -> dict[str, Any]:
    """Parse SKILL.md frontmatter into JSON-like values (raises ``ValueError``)."""
    lines = [
        (len(raw) - len(raw.lstrip(" ")), raw.strip())
        for raw in text.splitlines()
        if raw.strip() and not raw.lstrip().startswith("#")
    ]
    if any("\t" in raw[: len(raw) - len(raw.lstrip())] for raw in text.splitlines()):
        raise ValueError("tabs in YAML indentation")
    value, end = _block(lines, 0, 0, 0)
    if end != len(lines):
        raise ValueError("unexpected indentation in frontmatter")
    if not isinstance(value, dict):
        raise ValueError("frontmatter is not a mapping")
    return value


def _block(lines: list[tuple[int, str]], i: int, indent: int, depth: int) -> tuple[Any, int]:
    depth = _deeper(depth)
    if i >= len(lines):
        return None, i
    if lines[i][1].startswith("- ") or lines[i][1] == "-":
        return _sequence(lines, i, lines[i][0], depth)
    return _mapping(lines, i, lines[i][0], depth)


def _mapping(lines: list[tuple[int, str]], i: int, indent: int, depth: int) -> tuple[Any, int]:
    out: dict[str, Any] = {}
    while i < len(lines) and lines[i][0] == indent:
        line = lines[i][1]
        key, sep, rest = line.partition(":")
        if not sep or (rest and not rest.startswith(" ")):
            raise ValueError(f"not a 'key: value' line: {line!r}")
        key = _scalar(key.strip(), depth)
        if not isinstance(key, str):
            key = str(key)
        rest = rest.strip()
        i += 1
        if rest in ("|", ">", "|-", ">-", "|+", ">+"):
            value, i = _literal(lines, i, indent, rest)
        elif rest:
            value = _scalar(rest, depth)
        elif i < len(lines) and (
            lines[i][0] > indent or (lines[i][0] == indent and lines[i][1].startswith("-"))
        ):
            value, i = _block(lines, i, lines[i][0], depth)
        else:
            value = None
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    if i < len(lines) and lines[i][0] > indent:
        raise ValueError("unexpected indentation in frontmatter")
    return out, i


def _sequence(lines: list[tuple[int, str]], i: int, indent: int, depth: int) -> tuple[Any, int]:
    out: list[Any] = []
    while (
        i < len(lines)
        and lines[i][0] == indent
        and (lines[i][1].startswith("- ") or lines[i][1] == "-")
    ):
        item = lines[i][1][1:].strip()
        i += 1
        if not item:
            value, i = (
                _block(lines, i, indent + 1, depth)
                if i < len(lines) and lines[i][0] > indent
                else (None, i)
            )
        elif (
            ":" in item
            and not item.startswith(("'", '"', "[", "{"))
            and (item.split(":", 1)[1] == "" or item.split(":", 1)[1].startswith(" "))
        ):
            # "- key: value" starts a mapping whose other keys are indented past the dash
            sub = [(indent + 2, item)]
            while i < len(lines) and lines[i][0] > indent:
                sub.append(lines[i])
                i += 1
            value, used = _mapping(sub, 0, indent + 2, _deeper(depth))
            if used != len(sub):
                raise ValueError("unexpected indentation in a sequence item")
        else:
            value = _scalar(item, depth)
        out.append(value)
    return out, i


def _literal(lines: list[tuple[int, str]], i: int, indent: int, style: str) -> tuple[str, int]:
    # indentation inside the block is approximated from the stripped lines (good enough
    # for descriptions; both sides of a comparison are parsed the same way)
    parts: list[str] = []
    while i < len(lines) and lines[i][0] > indent:
        parts.append(lines[i][1])
        i += 1
    joined = ("\n" if style.startswith("|") else " ").join(parts)
    if not style.endswith("-"):
        joined += "\n"
    return joined, i


def _scalar(text: str, depth: int = 0) -> Any:
    if text.startswith('"'):
        if not text.endswith('"') or len(text) < 2:
            raise ValueError(f"unterminated string {text!r}")
        return json.loads(text)
    if text.startswith("'"):
        if not text.endswith("'") or len(text) < 2:
            raise ValueError(f"unterminated string {text!r}")
        return text[1:-1].replace("''", "'")
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        depth = _deeper(depth)
        return [_scalar(p.strip(), depth) for p in inner.split(",")] if inner else []
    if text.startswith(("{", "&", "*", "!", "%", "@", "`")):
        raise ValueError(f"unsupported YAML in frontmatter: {text!r}")
    if " #" in text:
        text = text.split(" #", 1)[0].rstrip()
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~"):
        return None
    m = _NUMBER.match(text)
    if m:
        return float(text) if (m.group(2) or m.group(3)) else int(text)
    return text
