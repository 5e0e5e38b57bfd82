"""Skills over MCP (extension ``io.modelcontextprotocol/skills``) for ``Client`` and ``Hub``:
``list_skills()`` returns the entries and reads no file; ``load_skill(uri)`` reads ``SKILL.md``
and checks it (size, digest, frontmatter) before returning a ``LoadedSkill``, whose other
files are read and verified only when asked for; a mismatch raises
``SkillVerificationError``.
"""

from __future__ import annotations

import base64
import binascii
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._deadline import Deadline
from .errors import RemoteProtocolError, SkillVerificationError
from .protocol import skills as sk
from .protocol.extensions import require

if TYPE_CHECKING:
    from ._requester import Requester

__all__ = ["LoadedSkill", "Skill", "SkillVerificationError"]

SKILLS_EXTENSION = sk.SKILLS_EXTENSION


@dataclass(frozen=True)
class Skill:
    """A skill a server publishes (from ``skills/list`` or ``skills/get``); nothing read yet.

    Attributes:
        uri: the skill's ``SKILL.md`` URI (its identity; names may collide).
        name, description: from the frontmatter.
        frontmatter: the whole ``SKILL.md`` frontmatter, as the server lists it.
        files: ``{uri: digest}`` of every file of the skill (None: not published).
        server: the Hub's server name (``Hub.skills()``), else None.
    """

    uri: str
    name: str
    description: str
    frontmatter: dict[str, Any]
    files: dict[str, str] | None
    server: str | None = None
    entry: sk.SkillEntry = field(repr=False, compare=False, default=None)  # type: ignore[assignment]

    @classmethod
    def from_entry(cls, entry: sk.SkillEntry, server: str | None = None) -> Skill:
        files = {f.uri: f.digest for f in entry.resources} if entry.resources is not None else None
        return cls(
            entry.uri, entry.name, entry.description, dict(entry.frontmatter), files, server, entry
        )


class LoadedSkill:
    """A skill whose ``SKILL.md`` was read and verified. Other files load on ``read()``.

    Attributes:
        skill: the ``Skill`` entry it was verified against.
        text: the whole ``SKILL.md``; ``body``: the part after the frontmatter.
    """

    def __init__(self, client: Requester, skill: Skill, text: str, body: str) -> None:
        self._client = client
        self.skill = skill
        self.text = text
        self.body = body
        self._cache: dict[str, bytes] = {}
        self._lock = threading.Lock()

    @property
    def uri(self) -> str:
        return self.skill.uri

    @property
    def name(self) -> str:
        return self.skill.name

    def file_uris(self) -> list[str]:
        """The URIs of the skill's files (``SKILL.md`` included), as the entry lists them."""
        return list(self.skill.files or {})

    def read(self, path: str, *, timeout: float | None = None) -> bytes:
        """One of the skill's files, by URI or by path relative to the skill's directory
        (``"references/FORMS.md"``); read on first use, verified, then kept.

        Raises:
            SkillVerificationError: not a listed file of this skill, or it does not match.
        """
        uri = path if "://" in path else self.uri.rsplit("/", 1)[0] + "/" + path.lstrip("/")
        with self._lock:
            if uri in self._cache:
                return self._cache[uri]
        if self.skill.entry.file(uri) is None:  # never fetch what the entry does not list
            raise SkillVerificationError(f"{uri!r} is not a file of skill {self.uri!r}", uri)
        data = _read_bytes(self._client, uri, Deadline.after(self._client._timeout(timeout)))
        sk.check_file(self.skill.entry, uri, data)
        with self._lock:
            self._cache[uri] = data
        return data

    def read_text(self, path: str, *, timeout: float | None = None) -> str:
        return self.read(path, timeout=timeout).decode("utf-8")

    def __repr__(self) -> str:
        return f"<LoadedSkill {self.uri}>"


def require_extension(client: Requester, deadline: Deadline | None = None) -> None:
    info = client.session if deadline is None else client._session(deadline)
    require(info.capabilities, SKILLS_EXTENSION, client.name)


def list_skills(client: Requester, deadline: Deadline) -> list[Skill]:
    """Every page of ``skills/list`` on the one ``deadline`` (the caller remembers them)."""
    require_extension(client, deadline)
    found: list[Skill] = []
    for result in client._pages(deadline, "skills/list"):
        raw = result.get("skills")
        if not isinstance(raw, list):
            raise RemoteProtocolError("skills/list result has no 'skills' list")
        found.extend(Skill.from_entry(sk.parse_entry(item)) for item in raw)
    return found


def get_skill(client: Requester, uri: str, deadline: Deadline) -> Skill:
    """One entry by URI (``skills/get``, on the one ``deadline``; the caller remembers it)."""
    require_extension(client, deadline)
    result = client._request(deadline, "skills/get", {"uri": uri})
    skill = Skill.from_entry(sk.parse_entry(result.get("skill")))
    if skill.uri != uri:
        raise RemoteProtocolError(f"skills/get for {uri!r} answered for {skill.uri!r}")
    return skill


def load_skill(client: Requester, skill: Skill, deadline: Deadline) -> LoadedSkill:
    """Read and verify ``SKILL.md`` on the one ``deadline``; nothing else is read."""
    if skill.entry.resources is None:
        raise SkillVerificationError(
            f"skill {skill.uri!r} publishes no digests; mcp_lite does not load unverifiable skills",
            skill.uri,
        )
    if skill.entry.file(skill.uri) is None:
        raise SkillVerificationError(
            f"skill {skill.uri!r} does not list its own SKILL.md", skill.uri
        )
    data = _read_bytes(client, skill.uri, deadline)
    sk.check_file(skill.entry, skill.uri, data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillVerificationError(f"{skill.uri!r} is not UTF-8 text", skill.uri) from None
    body = sk.check_frontmatter(skill.entry, text)
    loaded = LoadedSkill(client, skill, text, body)
    loaded._cache[skill.uri] = data
    return loaded


def _read_bytes(client: Requester, uri: str, deadline: Deadline) -> bytes:
    """The raw bytes of one resource (text as UTF-8, blobs decoded): what a digest covers."""
    result = client._request(deadline, "resources/read", {"uri": uri})
    contents = result.get("contents")
    if not isinstance(contents, list):
        raise RemoteProtocolError(f"resources/read {uri!r}: no contents")
    mine = [c for c in contents if isinstance(c, dict) and c.get("uri") in (uri, None)]
    if len(mine) != 1:
        raise SkillVerificationError(
            f"resources/read {uri!r} returned {len(mine)} matching contents, not one", uri
        )
    item = mine[0]
    if isinstance(item.get("text"), str):
        return str(item["text"]).encode("utf-8")
    if isinstance(item.get("blob"), str):
        try:
            return base64.b64decode(item["blob"], validate=True)
        except (binascii.Error, ValueError):
            raise SkillVerificationError(f"{uri!r}: invalid base64 blob", uri) from None
    raise SkillVerificationError(f"resources/read {uri!r}: neither text nor blob", uri)
